"""``ctxmodels ship``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..checkpoint import CheckpointError, read_json
from ..release.report_shape import check_report
from ..release.shipping import ship, write_card
from . import nonempty_paths


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH", help="RUN_DIR ASSET_DIR, or with --cards: ASSET_DIR...")
    p.add_argument("--fp32", action="store_true", help="keep float32 weights (default: fp16)")
    p.add_argument("--cards", metavar="REPORT", default=None,
                   help="add the figures of this `ctxmodels quality --out` report to the cards of ASSET_DIR...")
    p.add_argument("--command", default="ctxmodels quality …", help="the measuring command, quoted in the card")


def run(args: argparse.Namespace) -> int:
    nonempty_paths(args.paths)
    if args.cards:
        report = check_report(read_json(args.cards), args.cards)
        for d in args.paths:
            if Path(d).name not in report["models"]:
                raise CheckpointError(f"{args.cards}: models.{Path(d).name} is missing (the report measured "
                                      f"{', '.join(report['models']) or 'no model'})")
            write_card(d, report, args.command)
            print(f"ctxmodels: measured figures written into {Path(d) / 'README.md'}", file=sys.stderr)
        return 0
    if len(args.paths) != 2:
        raise ValueError("give RUN_DIR ASSET_DIR (or --cards REPORT ASSET_DIR...)")
    out = ship(args.paths[0], args.paths[1], half=not args.fp32)
    size = sum(f.stat().st_size for f in out.iterdir())
    print(f"ctxmodels: shipped {args.paths[0]} to {out} ({size / 1e6:.1f} MB)", file=sys.stderr)
    return 0
