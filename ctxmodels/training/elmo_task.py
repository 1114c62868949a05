"""Training ELMo: the bidirectional LM task the trainer runs, and an ELMo run's settings.

The pieces, in the order data flows through them:

* :func:`~ctxmodels.text.tokenize` / :func:`~ctxmodels.text.split_sentences` — one regex word tokenizer that
  splits punctuation, used for the corpus here and for every sentence the analysis code feeds to ELMo, so both
  see words cut the same way.
* :mod:`.elmo_data` — the output vocabulary (:class:`Vocabulary`), the corpus as word types
  (:class:`EncodedCorpus`, cached) and its windows.
* :class:`ElmoLMTask` — the trainer's task. Batches are fixed windows of ``--seq-len`` tokens cut from the
  stream; the model is stateless (every window starts from a zero LSTM state). bilm-tf carried the LSTM state
  across 20-token windows instead; we do not, because a stateless window is a pure function of
  (seed, epoch, index) — which exact resume and DDP sharding need — and because the analysis code runs the
  model on single sentences from a zero state, which a model trained from zero states is used to. Windows
  (rather than padded sentences) waste no compute on padding, have one shape, and every position has both a
  next and a previous word as targets (taken from beyond the window at its edges). Default 20 tokens: what
  bilm-tf used, about one sentence of the corpus (25 tokens on average), and no slower per token on CPU than
  64 in bench/bench_elmo.py.
* The objective (formula 2.3): the forward LM predicts the next word from the top forward layer, the backward
  LM the previous word from the top backward layer, both through the one shared softmax (as in bilm-tf); the
  loss is the mean of the two. Training uses a sampled softmax (:mod:`.sampled_softmax`); evaluation computes
  the exact full-softmax perplexity of each direction on fixed windows of the held-out documents
  (:mod:`.elmo_heldout`).

A boundary transition is not a prediction: after ``</S>`` comes ``<S>`` by construction, so the forward LM is
not scored on predicting ``<S>`` and the backward LM not on predicting ``</S>``. ``</S>`` still counts as the
forward LM's last target of a sentence and ``<S>`` as the backward LM's, the usual LM convention.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..bounds import Bound, int_range
from ..checkpoint import CheckpointError, read_json
from ..elmo import LIMITS, PRESETS, ElmoConfig, ElmoLanguageModel
from ..formats.allennlp import save_elmo
from .elmo_data import IGNORE, SPECIAL_TOKENS, EncodedCorpus, Vocabulary, eval_windows, load_corpus, window_batch
from .elmo_heldout import heldout_metrics, heldout_perplexity
from .run_log import default_model_card
from .sampled_softmax import LogUniformSampler, sampled_softmax_loss
from .settings import RunSettings
from .task import Batch, TrainConfig, TrainTask

# what importers use from here: the task, the settings, and (re-exported) the data and held-out metrics
__all__ = ["DEFAULT_PRESET", "DEFAULT_VOCAB_SIZE", "ElmoLMTask", "ElmoSettings", "EncodedCorpus", "Vocabulary",
           "build_task", "heldout_metrics", "load_corpus", "load_start"]

_ORDER, _SAMPLES = 0, 1  # stream tags for numpy's SeedSequence, so that no two uses of the seed share numbers


def _unwrap(model: nn.Module) -> ElmoLanguageModel:
    return model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model  # type: ignore


class ElmoLMTask(TrainTask):
    """Trains an :class:`ElmoLanguageModel` on windows of an :class:`EncodedCorpus` (see the module docstring).

    ``n_samples`` is the number of distinct softmax candidates a batch shares; 0, or at least the vocabulary
    size, trains with the exact full softmax instead.
    """

    name = "elmo"

    def __init__(self, corpus: EncodedCorpus, config: ElmoConfig, seq_len: int = 20, batch_size: int = 32,
                 n_samples: int = 1024, eval_tokens: int = 10_000, seed: int = 0,
                 card_info: dict[str, Any] | None = None, data_seed: int | None = None):
        if seq_len < 1 or batch_size < 1:
            raise ValueError(f"--seq-len and --batch-size must be at least 1, got {seq_len} and {batch_size}")
        if n_samples < 0:
            raise ValueError(f"--n-samples must be 0 (full softmax) or more, got {n_samples}")
        self.corpus, self.seq_len, self.batch_size, self.seed = corpus, seq_len, batch_size, seed
        self.order_seed = seed if data_seed is None else data_seed  # the windows' order and softmax samples
        V = len(corpus.vocab)
        self.config = dataclasses.replace(config, n_tokens_vocab=V)
        self.n_samples = n_samples if 0 < n_samples < V else 0
        self.sampler = LogUniformSampler(V) if self.n_samples else None
        self.card_info = card_info or {}
        self._windows = (len(corpus.train) - 1) // seq_len - 1  # every window position has both neighbours
        if self._windows < batch_size:
            raise ValueError(
                f"the training documents hold {len(corpus.train):,} tokens (with sentence boundaries): too few for "
                f"one batch of {batch_size} windows of {seq_len}; use a larger corpus or smaller --batch-size / "
                "--seq-len"
            )
        self._eval_starts, self._eval_len = eval_windows(len(corpus.heldout), seq_len, eval_tokens)
        with torch.random.fork_rng(devices=[]):  # the initial weights depend on the seed only
            torch.manual_seed(seed)
            self.model = ElmoLanguageModel(self.config)
        self._epoch_cache: tuple[int, np.ndarray] | None = None

    # -- data ---------------------------------------------------------------------------------------------

    def num_batches(self, epoch: int) -> int:
        return self._windows // self.batch_size

    def _epoch_starts(self, epoch: int) -> np.ndarray:
        """Window starts of an epoch in training order: a fresh offset and shuffle per epoch."""
        if self._epoch_cache is None or self._epoch_cache[0] != epoch:
            rng = np.random.default_rng([self.order_seed, epoch, _ORDER])
            offset = int(rng.integers(self.seq_len))
            starts = 1 + offset + self.seq_len * rng.permutation(self._windows)
            self._epoch_cache = (epoch, starts)
        return self._epoch_cache[1]

    def get_batch(self, epoch: int, index: int) -> Batch:
        starts = self._epoch_starts(epoch)[index * self.batch_size : (index + 1) * self.batch_size]
        batch = window_batch(self.corpus, self.corpus.train, starts, self.seq_len)
        if self.sampler is not None:
            rng = np.random.default_rng([self.order_seed, epoch, index, _SAMPLES])
            candidates, tries = self.sampler.sample(self.n_samples, rng)
            batch["candidates"] = candidates
            batch["candidate_log_q"] = self.sampler.log_expected_count(candidates, tries)
            batch["tries"] = torch.tensor(tries)
        return batch

    # -- objective ----------------------------------------------------------------------------------------

    def _softmax_losses(self, head: nn.Linear, states: torch.Tensor, targets: torch.Tensor,
                        batch: Batch) -> torch.Tensor:
        """Per-position loss: the exact cross-entropy, or the sampled softmax's estimate of it."""
        if self.sampler is None:
            return F.cross_entropy(head(states), targets, reduction="none")
        target_log_q = self.sampler.log_expected_count(targets, int(batch["tries"])).to(states.device)
        return sampled_softmax_loss(states, targets, head.weight, head.bias, batch["candidates"],
                                    batch["candidate_log_q"], target_log_q)

    def loss(self, model: nn.Module, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]:
        out = model(batch["char_ids"])
        head = _unwrap(model).require_lm_head()
        # bilm-tf drops out the top LSTM output too (the model itself drops out only each layer's input).
        p, training = self.config.dropout, model.training
        fwd_targets, bwd_targets = batch["fwd_targets"], batch["bwd_targets"]
        fwd_keep, bwd_keep = fwd_targets != IGNORE, bwd_targets != IGNORE
        # Both directions go through the one shared softmax in one call, sharing the sampled candidates.
        states = torch.cat([F.dropout(out.forward_layers[-1], p, training)[fwd_keep],
                            F.dropout(out.backward_layers[-1], p, training)[bwd_keep]])
        losses = self._softmax_losses(head, states, torch.cat([fwd_targets[fwd_keep], bwd_targets[bwd_keep]]), batch)
        n_fwd = int(fwd_keep.sum())
        fwd, bwd = _mean(losses[:n_fwd]), _mean(losses[n_fwd:])
        loss = 0.5 * (fwd + bwd)
        return loss, {"tokens": batch["char_ids"].shape[0] * batch["char_ids"].shape[1],
                      "fwd_loss": fwd.item(), "bwd_loss": bwd.item()}

    # -- evaluation ---------------------------------------------------------------------------------------

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        """Exact full-softmax perplexity of each direction, and of both together, on the held-out windows."""
        return heldout_perplexity(_unwrap(model), self.corpus, self._eval_starts, self._eval_len)

    # -- saving -------------------------------------------------------------------------------------------

    def save_model(self, directory: Path) -> None:
        save_elmo(self.model, directory, vocab=self.corpus.vocab.words)

    def model_card(self, info: dict[str, Any]) -> str:
        c = self.card_info
        s, cnn = self.config.lstm, self.config.char_cnn
        heldout = "\n".join(f"- document {i}: {title}" for i, title in c.get("heldout_docs", [])) or "- none"
        credit = f"\n{c['credit']}\n" if c.get("credit") else ""
        added = (f" (with the {c['added_documents']} documents of `{c['add_text']}`: `--add-text`, trained on, none "
                 "held out)" if c.get("add_text") else "")
        size = f"preset `{c['preset']}`" if c.get("preset") else "at the starting model's size"
        start = (f"Initial weights: `{c['init_from']}` (its size and output vocabulary; continued training with this "
                 "run's schedule).\n" if c.get("init_from") else "")
        if self.order_seed != self.seed:
            start += (f"Training order: `--data-seed {self.order_seed}` (the held-out split and initial weights: "
                      f"`--seed {self.seed}`).\n")
        return default_model_card(self.name, info) + f"""
## Model

ELMo {size}: character CNN ({cnn.n_filters} filters, {cnn.n_highway} highway),
{s.n_layers} LSTM layers of {s.dim} cells projected to {s.projection_dim}; output vocabulary of
{len(self.corpus.vocab):,} words (`vocab.txt`: `<S>`, `</S>`, `<UNK>`, then the most frequent training words).
Trained on windows of {self.seq_len} tokens, batches of {self.batch_size},
{f'sampled softmax with {self.n_samples} shared candidates' if self.n_samples else 'full softmax'}, dropout
{self.config.dropout:g}. Held-out perplexities are exact (full softmax) over
{len(self._eval_starts) * self._eval_len:,} held-out tokens.
{start}
## Data

Corpus: `{c.get('corpus', '?')}` (sha256 `{c.get('corpus_sha256', '?')[:16]}…`), {c.get('n_docs', '?')} documents,
{self.corpus.n_train_tokens:,} training tokens with sentence boundaries{added}; held-out documents (never trained on,
out-of-vocabulary rate {100 * self.corpus.oov_rate(self.corpus.heldout):.2f}%):

{heldout}
{credit}"""



def _mean(x: torch.Tensor) -> torch.Tensor:
    return x.mean() if x.numel() else x.sum()  # a batch with nothing to score adds 0, not NaN


# ----------------------------------------------------------------------------------------------------------
# the run: its settings (stored in out/run.json, see .settings), the corpus, the task


DEFAULT_PRESET = "mini"
DEFAULT_VOCAB_SIZE = 30_000  # most frequent training words, plus <S>, </S>, <UNK>


@dataclass
class ElmoSettings(RunSettings):
    """An ELMo run: the common settings plus the model size, the output vocabulary, windows and the softmax."""

    KIND: ClassVar[str] = "elmo"
    TITLE: ClassVar[str] = "ELMo"
    PATHS: ClassVar[tuple[str, ...]] = (*RunSettings.PATHS, "init_from")
    BOUNDS: ClassVar[dict[str, Bound]] = {
        "vocab_size": int_range(1, 1_000_000),
        "seq_len": int_range(1, 1024),
        "batch_size": int_range(1, 8192),
        "n_samples": int_range(0, 1_000_000),
        "eval_tokens": int_range(0, 100_000_000),
        "dropout": LIMITS["dropout"],  # the model config's own range
    }

    # The shipped recipe: mini, 4,000 steps of 640 tokens, about two hours on a 2-core CPU. Measured on ELTeC:
    # held-out perplexity 297 after 200 steps and 191 after 400 (bench/bench_elmo.py has the speed figures).
    steps: int | None = 4_000
    lr: float | None = 3e-3
    warmup: int | None = 100
    preset: str | None = None  # DEFAULT_PRESET, or with --init-from the starting model's own size
    vocab_size: int | None = None  # DEFAULT_VOCAB_SIZE, or with --init-from the starting model's own vocabulary
    seq_len: int = 20  # tokens per training window
    batch_size: int = 32  # windows per batch
    n_samples: int = 1024  # distinct sampled-softmax candidates per batch; 0 = exact full softmax
    dropout: float = ElmoConfig.dropout  # on every LSTM layer's input and the softmax's, while training
    eval_tokens: int = 10_000  # held-out tokens scored per evaluation
    init_from: str | None = None  # a trained ELMo to continue from (its size, vocabulary and weights)

    def check(self) -> None:
        super().check()
        if self.preset is None and not self.init_from:
            self.preset = DEFAULT_PRESET
        if self.vocab_size is None and not self.init_from:
            self.vocab_size = DEFAULT_VOCAB_SIZE
        if self.preset is not None and self.preset not in PRESETS:
            raise ValueError(f"unknown --preset {self.preset!r}; choose one of {', '.join(PRESETS)}")

    @classmethod
    def legacy(cls, out: Path) -> dict[str, Any] | None:
        path = out / "elmo_run.json"  # runs started before run.json: the settings, flat
        return read_json(path) if path.is_file() else None


def load_start(settings: ElmoSettings, out: Path) -> ElmoLanguageModel:
    """The model ``--init-from`` names, checked against the run's other settings. On --resume the run's own
    checkpoint stands in for it (only its size and vocabulary are used then): the start may have gone or changed."""
    from ..formats.allennlp import load_elmo

    own = out / "checkpoint"
    start = own if (own / "config.json").is_file() else Path(settings.init_from or "")
    lm = load_elmo(start)  # CheckpointError naming the file for anything that is not a loadable ELMo
    if not lm.has_lm_head or not lm.vocab:
        raise CheckpointError(f"{settings.init_from}: has no language-model head (a published ELMo ships without "
                              "one), so training cannot continue from it; start from a model trained here")
    if settings.preset is not None:
        shape = dataclasses.replace(lm.config, n_tokens_vocab=0, dropout=0.0)
        if dataclasses.replace(ElmoConfig.preset(settings.preset), n_tokens_vocab=0, dropout=0.0) != shape:
            raise CheckpointError(f"{settings.init_from}: does not fit --preset {settings.preset} (it has "
                                  f"{lm.config.lstm.n_layers} LSTM layers of {lm.config.lstm.dim} cells); leave "
                                  "--preset out to continue at the starting model's size")
    own_words = len(lm.vocab) - len(SPECIAL_TOKENS)
    if settings.vocab_size is not None and settings.vocab_size != own_words:
        raise ValueError(f"--vocab-size {settings.vocab_size}: the starting model {settings.init_from} predicts "
                         f"{own_words:,} words (plus <S>, </S>, <UNK>), and continued training keeps its vocabulary; "
                         "leave --vocab-size out")
    settings.vocab_size = own_words
    return lm


def build_task(settings: ElmoSettings, out: str | Path, data_cache: str | Path | None = None,
               resume: bool = False) -> tuple[ElmoLMTask, TrainConfig]:
    """The task and trainer settings of an ELMo run in ``out``, from :meth:`ElmoSettings.resolve`'s settings;
    the encoded corpus is cached in ``data_cache`` (default ``out/data_cache``; runs may share one). With
    ``--init-from`` the model starts from a trained ELMo's weights, size and output vocabulary."""
    out, s = Path(out), settings
    corpus = Path(s.corpus)
    cache = Path(data_cache) if data_cache else out / "data_cache"
    if cache.exists() and not cache.is_dir():
        raise ValueError(f"--data-cache {cache} is a file, not a folder")
    start = load_start(s, out) if s.init_from else None
    vocab = Vocabulary(start.vocab) if start is not None else None
    assert s.vocab_size is not None  # set by check() or by load_start()
    encoded, info = load_corpus(corpus, s.heldout_docs, s.seed, s.vocab_size, s.corpus_sha256, cache, vocab=vocab,
                                add_text=Path(s.add_text) if s.add_text else None, add_text_sha=s.add_text_sha256)
    s.heldout_docs = len(info["heldout_docs"])
    credit = ("Trained on the English Novel Corpus (ELTeC-eng), ed. Lou Burnard, v1.0.1, DOI 10.5281/zenodo.3533868."
              if "eltec" in corpus.name.lower() else "")
    # the run's dropout replaces the start's: it is a training setting, stored in the model's config for the next run
    config = dataclasses.replace(start.config if start is not None else ElmoConfig.preset(s.preset),
                                 dropout=s.dropout)
    task = ElmoLMTask(
        encoded, config, seq_len=s.seq_len, batch_size=s.batch_size,
        n_samples=s.n_samples, eval_tokens=s.eval_tokens, seed=s.seed, data_seed=s.data_seed,
        card_info={**info, "preset": s.preset, "corpus": corpus.name,
                   "corpus_sha256": s.corpus_sha256, "credit": credit, "init_from": s.init_from},
    )
    if start is not None and not resume:
        task.model.load_state_dict({k: v.float() for k, v in start.state_dict().items()})
    s.save(out)
    return task, s.train_config()
