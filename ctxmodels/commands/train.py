"""``ctxmodels train bert|elmo|static``: build a training task from the options and run the one trainer.

Each kind's task module (:mod:`ctxmodels.training.bert_task`, ``elmo_task``, ``static_task``) provides
``add_train_arguments(parser)`` for its own options and ``build_task(args) -> (task, TrainConfig)``; the options
every kind shares are defined here.
"""

from __future__ import annotations

import argparse
import importlib
import shlex
import sys

# kind -> (task module, one-line help)
KINDS: dict[str, tuple[str, str]] = {
    "bert": ("ctxmodels.training.bert_task", "BERT: masked LM + next-sentence prediction"),
    "elmo": ("ctxmodels.training.elmo_task", "ELMo: forward and backward LSTM language models"),
    "static": ("ctxmodels.training.static_task", "static word vectors: skip-gram with negative sampling"),
}


def add_common_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--corpus", required=True, help="plain text: one paragraph a line, blank lines between documents")
    p.add_argument("--out", required=True, help="output directory (model, metrics.jsonl, checkpoint/)")
    p.add_argument("--steps", type=int, default=None,
                   help="optimizer steps in all; with --resume, a new end for the run (the learning-rate decay "
                        "stretches from where it stands to the new end)")
    p.add_argument("--lr", type=float, default=None, help="peak learning rate")
    p.add_argument("--warmup", type=int, default=None, help="linear warm-up steps")
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--bf16", action="store_true", help="bf16 autocast")
    p.add_argument("--save-every", type=int, default=500, help="checkpoint every N steps (and on Ctrl-C)")
    p.add_argument("--eval-every", type=int, default=500, help="held-out evaluation every N steps")
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--time-limit", type=float, default=None, metavar="MINUTES",
                   help="stop cleanly with a checkpoint after this many minutes; continue with --resume")
    p.add_argument("--resume", action="store_true", help="continue exactly where the run in --out stopped")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (logs still go to metrics.jsonl)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    kinds = p.add_subparsers(dest="kind", required=True)
    for kind, (module, help_) in KINDS.items():
        k = kinds.add_parser(kind, help=help_, description=help_)
        add_common_arguments(k)
        importlib.import_module(module).add_train_arguments(k)


def run(args: argparse.Namespace) -> int:
    from ..training.trainer import Trainer, TrainingDiverged, TrainingInterrupted

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    task, cfg = importlib.import_module(KINDS[args.kind][0]).build_task(args)
    command = "ctxmodels " + " ".join(shlex.quote(a) for a in getattr(args, "argv", []))
    trainer = Trainer(task, cfg, args.out, command=command)
    try:
        metrics = trainer.train(resume=args.resume)
    except (TrainingDiverged, TrainingInterrupted) as e:
        print(f"ctxmodels: {e}", file=sys.stderr)
        return 1 if isinstance(e, TrainingDiverged) else 130
    if trainer.info.is_main:
        shown = ", ".join(f"{k}={v:.4g}" for k, v in metrics.items())
        print(f"done: {trainer.step} steps, model in {args.out}" + (f"; held-out {shown}" if shown else ""))
    return 0
