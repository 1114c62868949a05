"""The ``ctxmodels`` command line.

Each command lives in the module that does the work; this file only wires them up. A module named in
``COMMANDS`` provides ``add_arguments(parser)`` and ``run(args) -> int``; a module named in ``TRAINERS``
provides ``add_train_arguments(parser)`` and ``build_task(args) -> TrainTask``. Modules are imported only
when their command runs, so ``ctxmodels --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import shlex
import sys

# command -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "fill-mask": ("ctxmodels.analysis.fill_in", "top-k words for every [MASK] in a sentence"),
    "embed": ("ctxmodels.analysis.vectors", "per-layer word vectors of sentences, saved as .npz"),
    "neighbours": ("ctxmodels.static", "nearest neighbours of a word in a static-vector model"),
    "eval": ("ctxmodels.analysis.evaluation", "evaluate on WSD (CoarseWSD-20) or WiC data"),
    "probe": ("ctxmodels.analysis.probes", "layer-weight probes (part of speech, word sense) on SemCor"),
    "export-elmo": ("ctxmodels.formats.allennlp", "export our ELMo to options.json + weights.hdf5"),
    "quality": ("ctxmodels.release.quality", "measure models: held-out LM figures, SemCor senses per layer, cloze"),
    "ship": ("ctxmodels.release.shipping", "copy a training run into assets/ (fp16) and write measured figures into its card"),
}

# model kind -> (module, one-line help)
TRAINERS: dict[str, tuple[str, str]] = {
    "bert": ("ctxmodels.training.bert_task", "BERT: masked LM + next-sentence prediction"),
    "elmo": ("ctxmodels.training.elmo_task", "ELMo: forward and backward LSTM language models"),
    "static": ("ctxmodels.training.static_task", "static word vectors: skip-gram with negative sampling"),
}


def _add_common_train_arguments(p: argparse.ArgumentParser) -> None:
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ctxmodels", description="Train, load and look inside ELMo, BERT and static word vectors."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    train = sub.add_parser("train", help="train a model from scratch on a text corpus")
    kinds = train.add_subparsers(dest="kind", required=True)
    for kind, (module, help_) in TRAINERS.items():
        p = kinds.add_parser(kind, help=help_, description=help_)
        _add_common_train_arguments(p)
        p.set_defaults(_module=module, _is_train=True)

    for name, (module, help_) in COMMANDS.items():
        p = sub.add_parser(name, help=help_, description=help_)
        p.set_defaults(_module=module, _is_train=False)
    return parser


def _train(args: argparse.Namespace, argv: list[str]) -> int:
    from .training.trainer import Trainer, TrainingDiverged, TrainingInterrupted

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    module = importlib.import_module(args._module)
    task, cfg = module.build_task(args)
    command = "ctxmodels " + " ".join(shlex.quote(a) for a in argv)
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


def _selected(argv: list[str]) -> tuple[str, str | None]:
    """The (command, train kind) named in ``argv``, read before parsing so ``--help`` shows a module's options."""
    words = [a for a in argv if not a.startswith("-")]
    command = words[0] if words else ""
    kind = words[1] if command == "train" and len(words) > 1 else None
    return command, kind


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    # Sub-modules add their own arguments: find the module first, so ``ctxmodels train bert --help`` lists them.
    command, kind = _selected(argv)
    sub = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    module = None
    if command == "train" and kind in TRAINERS:
        module = importlib.import_module(TRAINERS[kind][0])
        module.add_train_arguments(sub["train"]._subparsers._group_actions[0].choices[kind])
    elif command in COMMANDS:
        module = importlib.import_module(COMMANDS[command][0])
        module.add_arguments(sub[command])
    args = parser.parse_args(argv)
    from .checkpoint import CheckpointError

    try:
        return _train(args, argv) if args._is_train else int(module.run(args) or 0)
    except (CheckpointError, ValueError, FileNotFoundError) as e:
        print(f"ctxmodels: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ctxmodels: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
