"""Training: the one :class:`~ctxmodels.training.trainer.Trainer` and the three tasks it runs.

* ``trainer.py`` — the loop: AdamW, warm-up and decay, clipping, bf16, NaN guard, stops, DDP. It knows nothing
  of any model: a :class:`~ctxmodels.training.task.TrainTask` (``task.py``, with :class:`TrainConfig`) supplies
  the model, the batches and the held-out evaluation. ``checkpoints.py`` — atomic checkpoints and exact resume;
  ``run_log.py`` — metrics JSONL, progress bar, model card; ``distributed.py`` — torchrun ranks and collectives.
* ``settings.py`` — a run's settings: defaults for a new run, the stored ones on ``--resume``.
* ``corpus.py`` — the held-out documents every trainer shares.
* ``bert_corpus.py`` (the corpus tokenised and cached), ``bert_data.py`` (masking, sentence pairs, batches) and
  ``bert_task.py`` (the run) — BERT's masked LM + next sentence.
* ``elmo_task.py`` — ELMo's bidirectional LM, with its data (``elmo_data.py``: vocabulary, encoded corpus,
  windows), its objective (``sampled_softmax.py``) and its held-out perplexity (``elmo_heldout.py``).
* ``static_task.py`` — skip-gram word vectors.

Training imports the models, their formats and the shared base modules; never the analysis, release or
command-line code.
"""
