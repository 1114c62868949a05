"""Where the senses of a preset word sit on an axis from one word to another (Word senses' custom axis), layer by
layer, for each shipped model (run by hand; prints one line per model):

    python bench/word_axis.py                          # bank, from money to river
    python bench/word_axis.py --word bank --axis money river

Each occurrence's position is ``ctxmodels.analysis.projector.axis_positions`` (0 at the first word, 1 at the
second); the line gives each sense's mean position per layer.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    import ctxmodels
    from ctxmodels import viz
    from ctxmodels.analysis import projector, vectors

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--word", default="bank")
    ap.add_argument("--axis", nargs=2, default=["money", "river"])
    ap.add_argument("--models", nargs="+", default=["minilm-eltec", "elmo-eltec", "bert-eltec", "static-eltec"])
    args = ap.parse_args()
    found = vectors.find_occurrences(viz.preset_sentences(args.word), args.word)
    labels = np.array([o.label for o in found.occurrences])
    senses = sorted({str(x) for x in labels if x})
    for name in args.models:
        model = ctxmodels.load(name)
        ov = vectors.occurrence_vectors(model, found)
        a, b = (projector.word_anchor(model, w) for w in args.axis)
        parts = []
        for layer, layer_name in enumerate(model.layer_names):
            t = projector.axis_positions(ov.vectors[:, layer], a[layer], b[layer])
            parts.append(f"{layer_name}: " + ", ".join(f"{s} {np.nanmean(t[labels == s]):.2f}" for s in senses))
        print(f"{name} ({args.axis[0]} 0 → {args.axis[1]} 1) | " + "; ".join(parts))


if __name__ == "__main__":
    main()
