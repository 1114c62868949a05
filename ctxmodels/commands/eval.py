"""``ctxmodels eval``."""

from __future__ import annotations

import argparse
import json
import sys

from ..analysis.evaluation import evaluate_wic, evaluate_wsd, format_table, read_wic_dataset, read_wsd_dataset
from ..checkpoint import check_writable_file, write_finished
from . import BATCH_SIZE, bounded


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", choices=("wsd", "wic"), help="wsd: CoarseWSD-20 layout; wic: WiC layout")
    p.add_argument("--data", required=True, help="benchmark folder")
    p.add_argument("--model", required=True, action="append",
                   help="model path or short name; repeat for several (static vectors too)")
    p.add_argument("--json", default=None, help="write {'task': ..., 'results': [...]} here")
    p.add_argument("--words", default=None, help="wsd: comma-separated word folders to use (default: all)")
    p.add_argument("--pooling", choices=("mean", "first", "last"), default="mean", help="BERT word pieces -> word")
    p.add_argument("--batch-size", type=bounded(BATCH_SIZE), default=32,
                   help="sentences per forward pass (default 32)")


def run(args: argparse.Namespace) -> int:
    from .. import load

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    if args.json:
        check_writable_file(args.json)
    # Read the data first: a format error should not wait for the models to load.
    if args.task == "wsd":
        words = read_wsd_dataset(args.data, [w.strip() for w in args.words.split(",")] if args.words else None)
    else:
        fit, test = read_wic_dataset(args.data)
        if fit.name != "train":
            log(f"no train/ folder in {args.data}: the threshold is chosen on dev/ (train_accuracy is on dev)")
    models = [load(m) for m in args.model]
    names = [m.name for m in models]
    if len(set(names)) < len(names):  # e.g. two checkpoints of one run: tell them apart by what was typed
        names = list(args.model)
    if args.task == "wsd":
        records = evaluate_wsd(words, models, args.pooling, args.batch_size, log, names)
    else:
        records = evaluate_wic(fit, test, models, args.pooling, args.batch_size, log, names)
    print(format_table(args.task, records))
    if args.json:
        write_finished(args.json, json.dumps({"task": args.task, "results": records}, indent=2, ensure_ascii=False)
                       + "\n", "the results")
        log(f"wrote {args.json}")
    return 0
