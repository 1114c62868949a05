"""``ctxmodels nearest-words``: the SemCor words whose vectors sit nearest to one occurrence's, layer by layer."""

from __future__ import annotations

import argparse
import json

from . import add_semcor_option, bounded_int, load_model, progress_bar


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..analysis.token_search import REFERENCE_SENTENCES

    p.add_argument("--model", required=True, help="a model name or folder (any kind: BERT, ELMo, static)")
    p.add_argument("--word", required=True, help="the word whose occurrence is searched for (its first occurrence "
                                                 "in the sentence; case does not matter)")
    p.add_argument("sentence", help="the sentence the word occurs in")
    p.add_argument("--k", type=bounded_int(1, 1000), default=50, help="nearest words per layer (default 50)")
    p.add_argument("--show", type=bounded_int(0, 1000), default=10,
                   help="of those, how many to list by name per layer (default 10)")
    p.add_argument("--sentences", type=bounded_int(100, 40_000), default=REFERENCE_SENTENCES,
                   help=f"SemCor sentences to search, spread evenly over it (default {REFERENCE_SENTENCES:,}, as the "
                        "app; the index is kept in the cache)")
    add_semcor_option(p)
    p.add_argument("--json", action="store_true", help="print JSON: per layer, the counts by part of speech and the "
                                                       "nearest words with their sentences")


def run(args: argparse.Namespace) -> int:
    from ..analysis import token_search as ts
    from ..analysis.vectors import word_vectors

    model = load_model(args.model)
    occ = word_vectors(model, [args.sentence], args.word)
    with progress_bar("embedding SemCor (once)", unit="sentence") as progress:
        index = ts.cached_index(model, args.semcor, n=args.sentences, progress=progress)
    layers = ts.nearest(index, occ.vectors[0], k=args.k)
    kinds = ts.neighbour_kinds(layers, index.layer_names, occ.forms)
    if args.json:
        print(json.dumps({
            "model": model.name, "word": args.word, "sentence": args.sentence, "k": args.k, "searched": len(index),
            "layers": [{"layer": name,
                        "counts": {r.pos: {"same": int(r.same), "other": int(r.other)}
                                   for r in kinds[kinds.layer == name].itertuples()},
                        "nearest": [{"word": n.word, "lemma": n.lemma, "pos": n.pos, "cosine": round(n.cosine, 6),
                                     "in_context": n.in_context()} for n in found]}
                       for name, found in zip(index.layer_names, layers)]}, ensure_ascii=False))
        return 0
    print(f"{args.word!r} in {args.sentence!r}: the {min(args.k, len(index))} nearest of {len(index):,} tagged "
          f"SemCor words ({args.sentences:,} sentences), by part of speech; (n) of them the word itself")
    width = max(len(name) for name in index.layer_names)
    for name, found in zip(index.layer_names, layers):
        rows = kinds[kinds.layer == name]
        counts = "  ".join(f"{r.pos} {r.same + r.other}" + (f" ({r.same})" if r.same else "")
                           for r in rows.itertuples() if r.same + r.other)
        listed = ", ".join(n.word for n in found[:args.show])
        print(f"{name:<{width}}  {counts}" + (f"\n{'':<{width}}  {listed}" if listed else ""))
    return 0

