"""``ctxmodels neighbours``."""

from __future__ import annotations

import argparse
import json

from . import bounded_int, load_model


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True,
                   help="a static-vector folder, a word2vec/GloVe text file, or a short name (static-eltec)")
    p.add_argument("words", nargs="+", metavar="WORD", help="words to find neighbours of")
    p.add_argument("--k", type=bounded_int(1, 10_000), default=10, help="neighbours per word (default 10)")
    p.add_argument("--json", action="store_true", help="print JSON {word: [[neighbour, cosine], ...]}")


def run(args: argparse.Namespace) -> int:
    model = load_model(args.model, "static", "neighbours").model
    model.vectors(args.words)  # one clear error naming every unknown word before printing anything
    result = {w: model.most_similar(w, args.k) for w in args.words}
    if args.json:
        print(json.dumps({w: [[n, round(s, 6)] for n, s in ns] for w, ns in result.items()}, ensure_ascii=False))
        return 0
    for w, ns in result.items():
        print(f"{w}:")
        for rank, (n, s) in enumerate(ns, 1):
            print(f"  {rank:>3}  {s:+.3f}  {n}")
    return 0
