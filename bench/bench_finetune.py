"""Fine-tuning throughput: ctxmodels' trainer next to transformers' Trainer, same model, same batches.

For each head (token classification on ``pos``, sequence classification on ``period``) both fine-tune the same
shipped BERT (``assets/bert-eltec``, read by transformers from the folder our fine-tuning code writes, so the
starting weights are identical) on the same examples in the same order, padded the same way (each batch to its
longest member), with the same batch size, learning rate, warm-up, weight decay and torch threads. Examples per
second are measured over ``--steps`` optimizer steps (each trainer's own clock: ``Trainer.train_seconds`` for
ours, ``train_runtime`` for transformers'), ``--repeats`` times; the table shows medians.

    python bench/bench_finetune.py [--steps 60] [--repeats 3] [--threads 1] [--batch-size 32]

Needs ``transformers`` and ``accelerate`` (transformers' Trainer requires it) besides the project.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import torch

import ctxmodels
from ctxmodels.formats.finetuned import save_bert_task_model
from ctxmodels.tasks import load_task
from ctxmodels.training.finetune_task import FinetuneSettings, build_task
from ctxmodels.training.trainer import Trainer

MODEL = Path(__file__).resolve().parents[1] / "assets" / "bert-eltec"
LR = 3e-4  # our default for a BERT of this size (hidden 128)


def make_task(spec: str, args):
    """Our fine-tuning task on ``spec``: the shipped BERT with a new head, seeded, and its batches."""
    torch.manual_seed(0)
    data = load_task(spec, max_examples=args.max_examples, seed=0)
    s = FinetuneSettings(model=str(MODEL), model_path=str(MODEL), task=spec, steps=args.steps,
                         batch_size=args.batch_size, lr=LR, max_length=128, save_every=0, eval_every=0,
                         log_every=args.steps)
    return build_task(ctxmodels.load(MODEL), data, s)


def ours(task, cfg, out: Path) -> float:
    cfg.progress = False
    task.evaluate = lambda model: {}  # the final dev pass is not part of the training throughput
    trainer = Trainer(task, cfg, out)
    trainer.train()
    return task.examples_seen(trainer.step) / trainer.train_seconds


def theirs(task, folder: Path, args) -> float:
    import transformers

    cls = (transformers.BertForSequenceClassification if task.kind == "sentence"
           else transformers.BertForTokenClassification)
    model = cls.from_pretrained(folder)
    # our examples in our order: epoch 0's permutation, then epoch 1's, ... (the Trainer does not shuffle them)
    order: list[int] = []
    epoch = 0
    while len(order) < args.steps * args.batch_size:
        order += [int(i) for i in task._order(epoch)]
        epoch += 1
    items = [task.train[i] for i in order]

    class Examples(torch.utils.data.Dataset):
        def __len__(self):
            return len(items)

        def __getitem__(self, i):
            return items[i]

    class InOrder(transformers.Trainer):
        def _get_train_sampler(self, *a, **k):
            return torch.utils.data.SequentialSampler(self.train_dataset)

    targs = transformers.TrainingArguments(
        output_dir=str(folder / "out"), per_device_train_batch_size=args.batch_size, max_steps=args.steps,
        learning_rate=LR, warmup_steps=task.settings.warmup, weight_decay=0.01, lr_scheduler_type="linear",
        max_grad_norm=1.0, adam_epsilon=1e-6, optim="adamw_torch_fused", save_strategy="no", report_to="none",
        logging_strategy="no", disable_tqdm=True, dataloader_num_workers=0, use_cpu=True,
        remove_unused_columns=False, seed=0)
    trainer = InOrder(model=model, args=targs, train_dataset=Examples(), data_collator=task.collate)
    out = trainer.train()
    return task.examples_seen(args.steps) / out.metrics["train_runtime"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--max-examples", type=int, default=2000)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for spec, head in (("pos", "BertForTokenClassification"), ("period", "BertForSequenceClassification")):
            a, b = [], []
            for r in range(args.repeats):
                task, cfg = make_task(spec, args)
                folder = tmp / f"{spec}-{r}"
                save_bert_task_model(task.model, task.tokenizer, folder, task.labels)  # before ours trains it
                a.append(ours(task, cfg, folder / "ours"))
                b.append(theirs(task, folder, args))
            rows.append((spec, head, statistics.median(a), statistics.median(b)))
    print(f"\nfine-tuning {MODEL.name}: {args.steps} steps, batch {args.batch_size}, {args.threads} thread(s), "
          f"median of {args.repeats}")
    print("| task | head | ctxmodels (examples/s) | transformers Trainer (examples/s) | ratio |")
    print("|---|---|---|---|---|")
    for spec, head, a, b in rows:
        print(f"| {spec} | {head} | {a:.1f} | {b:.1f} | {a / b:.2f}x |")


if __name__ == "__main__":
    main()
