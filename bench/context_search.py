"""Word senses' search for context words (the Projector's search): how often, layer by layer, the nearest
occurrences of one that has a given word around it have one too, per shipped model (run by hand, prints a table of
the figures the page prints under its panels, no assertions).

    python bench/context_search.py                                  # "bank" in the novels, ringed by river words
    python bench/context_search.py --word bank --find money, pounds, bankers --limit 1000 --sense financial
    python bench/context_search.py --preset run --find ran, running # a preset's sentences instead of the novels

The occurrences are those the page shows for ``source=corpus&corpus_word=WORD&limit=LIMIT&sample=0`` (a seeded
sample spread across the training novels' documents; ``$CTXMODELS_DATA/corpus/eltec-eng.txt``), or a preset's
sentences. Each model embeds them once on one torch thread; the share is that of ``ws.neighbour_share`` with the 5
nearest by cosine in each layer's full space, against the share of ringed occurrences overall.

The last columns are the page's *Colour by the dictionary sense each layer reads*
(``dictionary_senses.read_each``): the share of the ringed occurrences, and of the others, that the layer reads as
the WordNet sense whose gloss contains ``--sense`` (default "sloping land", the river bank), by the nearest SemCor
sense average.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["static-eltec", "elmo-eltec", "bert-eltec", "minilm-eltec"])
    ap.add_argument("--word", default="bank")
    ap.add_argument("--find", nargs="+", default=["river", "water", "stream", "shore"])
    ap.add_argument("--limit", type=int, default=1000)
    ap.add_argument("--preset", default=None, help="a preset of assets/examples/senses instead of the novels")
    ap.add_argument("--sense", default="sloping land", help="words of the gloss of the sense to count the readings of")
    args = ap.parse_args()

    import numpy as np
    import torch

    import ctxmodels
    from ctxmodels.analysis import dictionary_senses as ds
    from ctxmodels.analysis import sources, vectors
    from ctxmodels.analysis import word_senses as ws
    from ctxmodels.paths import data_dir

    torch.set_num_threads(1)
    words = ws.context_query(" ".join(args.find))
    if args.preset:
        lines = (ROOT / "assets" / "examples" / "senses" / f"{args.preset}.txt").read_text(encoding="utf-8")
        found = vectors.find_occurrences([line for line in lines.splitlines() if "|" in line], args.preset)
        where = f"the {args.preset} preset"
    else:  # the index the app uses, in the project's cache (built there on first use)
        index = sources.open_corpus(data_dir() / "corpus" / "eltec-eng.txt")
        found, _ = sources.corpus_search(index, args.word, limit=args.limit, seed=0)
        where = "the novels"
    marked = ws.containing(found.occurrences, words)
    print(f"\n{len(found.occurrences):,} occurrences of {args.word!r} in {where}; ringed (a sentence with "
          f"{', '.join(words)} or an inflection): {int(marked.sum()):,} ({marked.mean():.0%})\n")
    lemma = ds.lemma_of(args.preset or args.word)
    print(f"| model | layer | ringed among the ringed occurrences' 5 nearest | read as “{args.sense}…”: ringed | "
          "the others |")
    print("|---|---|---:|---:|---:|")
    keys = [(o.sentence, o.word_index) for o in found.occurrences]
    for name in args.models:
        model = ctxmodels.load(name)
        t0 = time.perf_counter()
        ov = vectors.occurrence_vectors(model, found, cache=False)
        took = time.perf_counter() - t0
        av = ds.sense_averages(model, lemma) if lemma else None
        wanted = [i for i, info in enumerate(av.senses) if args.sense in info.gloss] if av else []
        for layer, layer_name in enumerate(model.layer_names):
            share = ws.neighbour_share(ws.layer_vectors(ov.vectors, layer), marked)
            reads = "- | -"
            if wanted:
                read_as = np.isin(ds.read_each(av, ov.vectors, layer, keys=keys), wanted)
                reads = f"{read_as[marked].mean():.0%} | {read_as[~marked].mean():.0%}"
            print(f"| {name} | {layer_name} | {'-' if share is None else f'{share:.0%}'} | {reads} |")
        print(f"|  | (embedded in {took:.1f} s) | | | |")


if __name__ == "__main__":
    main()
