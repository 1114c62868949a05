"""``ctxmodels quality``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..checkpoint import check_writable_file, read_json, write_finished
from ..release.quality import format_summary, measure
from . import THREADS, add_semcor_option, bounded, bounded_int


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", action="append", required=True, help="a model name or folder (repeatable)")
    p.add_argument("--corpus", default=None, help="the training corpus, for the held-out language-model figures")
    add_semcor_option(p)
    p.add_argument("--no-senses", action="store_true", help="skip the SemCor word-sense figures and probes")
    p.add_argument("--no-probes", action="store_true", help="skip the scalar-mix probes")
    p.add_argument("--bert-sequences", type=bounded_int(1, 1_000_000), default=2048,
                   help="held-out sequences of a BERT, and of a model `train roberta|albert|electra|gpt` wrote "
                        "(default 2048)")
    p.add_argument("--elmo-tokens", type=bounded_int(1, 100_000_000), default=100_000,
                   help="held-out ELMo tokens (default 100,000)")
    p.add_argument("--fp32-report", default=None, metavar="JSON",
                   help="a report measured on the fp32 training runs of the same models (matched by folder "
                        "name), kept under 'fp32' for the cards' fp16-vs-fp32 comparison")
    p.add_argument("--out", default=None, help="write the report as JSON here (default: print a summary only)")
    p.add_argument("--threads", type=bounded(THREADS), default=None, help="torch CPU threads")


def run(args: argparse.Namespace) -> int:
    import torch

    from ..loading import load
    from ..semcor import load_semcor

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    # Every output option is checked before the measuring, which can take an hour.
    if args.out:
        check_writable_file(args.out)
    fp32 = fp32_models(args.fp32_report) if args.fp32_report else None
    models = [load(name) for name in args.model]
    semcor = None if args.no_senses else load_semcor(args.semcor)
    report = measure(models, semcor, args.corpus, args.bert_sequences, args.elmo_tokens, probes=not args.no_probes,
                     log=lambda msg: print(f"ctxmodels: {msg}", file=sys.stderr, flush=True))
    if fp32 is not None:
        report["fp32"] = fp32
    print(format_summary(report))
    if args.out:  # a write that fails now keeps the report elsewhere and says where
        write_finished(Path(args.out), json.dumps(report, indent=2, ensure_ascii=False) + "\n", "the report")
    return 0


def fp32_models(path: str) -> dict:
    """The per-model figures of an fp32 report (``ctxmodels quality --out``); CheckpointError for a file that is
    not one."""
    from ..release.report_shape import check_models

    return check_models(read_json(path), path)
