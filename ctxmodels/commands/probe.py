"""``ctxmodels probe``."""

from __future__ import annotations

import argparse
import sys

from ..analysis.probes import TASKS, ProbeSettings, run_probe
from ..checkpoint import write_json
from ..semcor import load_semcor


def add_arguments(p: argparse.ArgumentParser) -> None:
    d = ProbeSettings()
    p.add_argument("--model", required=True, help="model path or short name (ELMo or BERT: several layers)")
    p.add_argument("--task", required=True, choices=TASKS, help="pos: part of speech; wsd: word sense")
    p.add_argument("--semcor", default=None, help="SemCor folder (default: $CTXMODELS_DATA/semcor)")
    p.add_argument("--n-sentences", type=int, default=d.n_sentences, help="SemCor sentences to embed")
    p.add_argument("--epochs", type=int, default=d.epochs)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--tagset", choices=("coarse", "penn"), default=d.tagset, help="pos: tag set")
    p.add_argument("--lemmas", default=None, help="wsd: comma-separated lemmas (default: the most frequent "
                   "polysemous ones)")
    p.add_argument("--n-lemmas", type=int, default=d.n_lemmas)
    p.add_argument("--min-per-sense", type=int, default=d.min_per_sense)
    p.add_argument("--pooling", choices=("mean", "first", "last"), default=d.pooling)
    p.add_argument("--threads", type=int, default=d.threads, help="torch threads while probing (0: leave as set)")
    p.add_argument("--no-cache", action="store_true", help="recompute even if a cached result exists")
    p.add_argument("--json", default=None, help="also write the result to this JSON file")


def run(args: argparse.Namespace) -> int:
    from .. import load

    settings = ProbeSettings(
        n_sentences=args.n_sentences, epochs=args.epochs, seed=args.seed, tagset=args.tagset,
        lemmas=tuple(w.strip() for w in args.lemmas.split(",") if w.strip()) if args.lemmas else None,
        n_lemmas=args.n_lemmas, min_per_sense=args.min_per_sense, pooling=args.pooling, threads=args.threads or None)
    model = load(args.model)
    semcor = load_semcor(args.semcor) if args.semcor else None

    def show(fraction: float, message: str) -> None:
        print(f"\r{message:<50} {100 * fraction:5.1f}%", end="", file=sys.stderr, flush=True)

    result = run_probe(model, args.task, settings, semcor=semcor, progress=show, cache=not args.no_cache)
    print(file=sys.stderr)
    print(result.format_table())
    took = "cached result" if result.cached else (f"embedding {result.seconds['embed']:.1f} s, "
                                                   f"training {result.seconds['train']:.1f} s")
    print(f"({took})")
    if args.json:
        write_json(args.json, result.to_dict())
    return 0
