"""The How they learn page's two measured claims, as tables: the pre-train / fine-tune mismatch (the masked LM's
probability of the original piece where BERT's draw struck, against the same piece with nothing hidden, by what the
draw did to it) over the cloze sentences, and next-sentence or sentence-order prediction on held-out pairs
(consecutive, swapped, from another book). The same functions as the page (``ctxmodels.analysis.objectives``,
``ctxmodels.analysis.sentence_pairs``; the page measures pairs with seed 0, so ``learn_n=200`` shows these).

    python bench/how_they_learn.py [--models bert-eltec] [--seeds 5] [--pairs 200]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import ctxmodels  # noqa: E402
from ctxmodels.analysis import objectives, sentence_pairs  # noqa: E402
from ctxmodels.text import read_cloze  # noqa: E402


def mismatch(model, seeds: int) -> None:
    rows = []
    for sentence, answers in read_cloze(ROOT / "assets" / "examples" / "cloze.tsv"):
        text = sentence.replace("[MASK]", answers[0])
        for seed in range(seeds):
            c = objectives.corruption(model, text, seed)
            rows += [(c.fates[p], q, r) for p, q, r in zip(c.positions, c.prob, c.plain_prob)]
    print(f"\n{model.name}: P(original piece), {seeds} draws of each cloze sentence (answer filled in)")
    print(f"{'the draw made it':<14} {'pieces':>6} {'as drawn':>9} {'nothing hidden':>15}")
    for fate in ("[MASK]", "random word", "kept"):
        picked = [(q, r) for f, q, r in rows if f == fate]
        print(f"{fate:<14} {len(picked):>6} {np.mean([q for q, _ in picked]):>9.3f} "
              f"{np.mean([r for _, r in picked]):>15.3f}")


def pairs(model, n: int) -> None:
    if sentence_pairs.pair_head(model) is None:
        return
    problem = sentence_pairs.heldout_problem(model)
    if problem:
        print(f"\n{model.name}: pairs not measured: {problem}")
        return
    held = sentence_pairs.heldout_text(model)
    result = sentence_pairs.pair_test(model, sentence_pairs.draw_pairs(held.documents, n, seed=0))
    print(f"\n{model.name} ({sentence_pairs.pair_head(model)}): P(B follows A) on {n} pairs of each kind from "
          f"{held.source}")
    for group, r in result.items():
        print(f"{group:<12} {r['mean']:.3f} ± {2 * r['sem']:.3f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=["bert-eltec"])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--pairs", type=int, default=200)
    args = p.parse_args()
    torch.set_num_threads(1)
    for name in args.models:
        model = ctxmodels.load(name)
        if objectives.supports(model, objectives.MASKED_LM):
            mismatch(model, args.seeds)
        pairs(model, args.pairs)


if __name__ == "__main__":
    main()
