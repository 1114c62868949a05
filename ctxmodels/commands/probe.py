"""``ctxmodels probe``."""

from __future__ import annotations

import argparse
import json
import sys

from ..analysis.probes import TASKS, ProbeSettings, run_probe
from ..checkpoint import check_writable_file, write_finished
from ..semcor import load_semcor
from . import SEED, THREADS, add_semcor_option, bounded, bounded_int


def add_arguments(p: argparse.ArgumentParser) -> None:
    d = ProbeSettings()
    p.add_argument("--model", required=True, help="model path or short name (ELMo or BERT: several layers)")
    p.add_argument("--task", required=True, choices=TASKS, help="pos: part of speech; wsd: word sense")
    add_semcor_option(p)
    p.add_argument("--n-sentences", type=bounded_int(1, 1_000_000), default=d.n_sentences,
                   help="SemCor sentences to embed")
    p.add_argument("--epochs", type=bounded_int(1, 10_000), default=d.epochs, help="probe training epochs")
    p.add_argument("--seed", type=bounded(SEED), default=d.seed)
    p.add_argument("--tagset", choices=("coarse", "penn"), default=d.tagset, help="pos: tag set")
    p.add_argument("--lemmas", default=None, help="wsd: comma-separated lemmas (default: the most frequent "
                   "polysemous ones)")
    p.add_argument("--n-lemmas", type=bounded_int(1, 10_000), default=d.n_lemmas,
                   help="wsd: how many lemmas when --lemmas is not given")
    p.add_argument("--min-per-sense", type=bounded_int(1, 1_000_000), default=d.min_per_sense,
                   help="wsd: fewest examples a sense needs")
    p.add_argument("--pooling", choices=("mean", "first", "last"), default=d.pooling)
    p.add_argument("--threads", type=bounded_int(0, THREADS.hi), default=d.threads,
                   help="torch threads while probing (0: leave as set)")
    p.add_argument("--no-cache", action="store_true", help="recompute even if a cached result exists")
    p.add_argument("--json", default=None, help="also write the result to this JSON file")


def run(args: argparse.Namespace) -> int:
    from .. import load

    lemmas = None if args.lemmas is None else tuple(w.strip() for w in args.lemmas.split(",") if w.strip())
    if lemmas == ():
        raise ValueError(f"--lemmas {args.lemmas!r} names no lemma; give comma-separated lemmas, or leave it out "
                         "for the most frequent polysemous ones")
    settings = ProbeSettings(
        n_sentences=args.n_sentences, epochs=args.epochs, seed=args.seed, tagset=args.tagset, lemmas=lemmas,
        n_lemmas=args.n_lemmas, min_per_sense=args.min_per_sense, pooling=args.pooling, threads=args.threads or None)
    if args.json:
        check_writable_file(args.json)
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
        write_finished(args.json, json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n", "the results")
    return 0
