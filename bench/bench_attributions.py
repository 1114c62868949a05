"""Which words an answer rests on, two ways (Fill in the blank's *by hiding each word* and *by integrated
gradients*): what each costs per explanation, whether the gradients' scores add up, and how far the two methods
agree, per shipped model, over the project's cloze sentences (run by hand, prints tables, no assertions).

    python bench/bench_attributions.py
    python bench/bench_attributions.py --models minilm-eltec --steps 8 16 32 64 --sentences 20

For every sentence of ``assets/examples/cloze.tsv`` the model's first guess at the blank (a whole word) is explained
both ways, alternating, on one torch thread (as the app's server runs a model); the times are medians over the
sentences. Agreement is the Spearman rank correlation, per sentence, between the words' scores by the two methods
(hiding: the log of how many times less likely the answer is without the word; gradients: the word's share of the
log-probability), and the share of sentences where both name the same word as the one the answer rests on most.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["minilm-eltec", "bert-eltec", "elmo-eltec"])
    ap.add_argument("--steps", nargs="+", type=int, default=[8, 16, 32, 64],
                    help="set numbers of intervals to measure beside the app's setting (from 16, doubled until the "
                         "scores add up)")
    ap.add_argument("--sentences", type=int, default=50, help="the first N cloze sentences (all 50 by default)")
    args = ap.parse_args()

    import torch

    import ctxmodels
    from ctxmodels.analysis import fill_in
    from ctxmodels.analysis.blanks import rank_agreement
    from ctxmodels.analysis.integrated_gradients import TOLERANCE
    from ctxmodels.release.quality import read_cloze

    torch.set_num_threads(1)
    sentences = [s for s, _ in read_cloze()][:args.sentences]
    costs, gaps, agreement = [], [], []
    for name in args.models:
        model = ctxmodels.load(name)
        fill_in.guess_effects(model, None, sentences[0])  # first-call costs (allocations, caches) out of the timing
        runs = [None, *args.steps]  # None: the app's setting
        hide_s, ig_s = [], {n: [] for n in runs}
        gap = {n: [] for n in runs}
        used = []
        rhos, same_top = [], []
        for text in sentences:
            t0 = time.perf_counter()
            effects = fill_in.guess_effects(model, None, text)
            hide_s.append(time.perf_counter() - t0)
            for n in runs:
                t0 = time.perf_counter()
                result = fill_in.guess_attributions(model, None, text, steps=n)
                ig_s[n].append(time.perf_counter() - t0)
                gap[n].append(abs(result.gap))
                if n is None:
                    used.append(result.steps)
                    scored = [i for i, s in enumerate(result.scores) if s is not None]
                    by_hiding = [-math.log(max(effects.hidden_probs[i], 1e-45) / effects.prob) for i in scored]
                    by_gradients = [result.scores[i] for i in scored]
                    rhos.append(rank_agreement(effects, result))
                    same_top.append(max(zip(by_hiding, scored))[1] == max(zip(by_gradients, scored))[1])
        ms = {n: 1000 * statistics.median(v) for n, v in ig_s.items()}
        hide_ms = 1000 * statistics.median(hide_s)
        costs.append((name, hide_ms, ms, used))
        gaps.append((name, gap))
        agreement.append((name, statistics.median(r for r in rhos if r is not None), sum(same_top) / len(same_top)))

    n_words = statistics.median(len(fill_in.sentence_words(ctxmodels.load(args.models[0]), s)) for s in sentences)
    print(f"\n{len(sentences)} cloze sentences (median {n_words:.0f} words), one torch thread; medians. The app's "
          f"setting: intervals from 16, doubled until the scores add up within {TOLERANCE} nats\n")
    print("| model | hiding each word, ms | gradients as the app, ms (intervals used) | "
          + " | ".join(f"gradients, {n} steps, ms" for n in args.steps) + " | gradients as the app / hiding |")
    print("|---|---:|---:|" + "---:|" * len(args.steps) + "---:|")
    for name, hide_ms, ms, used in costs:
        steps_used = ", ".join(f"{n}: {used.count(n)}" for n in sorted(set(used)))
        print(f"| {name} | {hide_ms:.0f} | {ms[None]:.0f} ({steps_used}) | "
              + " | ".join(f"{ms[n]:.0f}" for n in args.steps) + f" | {ms[None] / hide_ms:.1f} |")
    print("\nHow far the scores miss adding up to the log-ratio, |gap| in nats: median (largest)\n")
    print("| model | as the app | " + " | ".join(f"{n} steps" for n in args.steps) + " |")
    print("|---|---:|" + "---:|" * len(args.steps))
    for name, gap in gaps:
        print(f"| {name} | " + " | ".join(f"{statistics.median(gap[n]):.4f} ({max(gap[n]):.3f})"
                                          for n in [None, *args.steps]) + " |")
    print("\nThe two methods' agreement (gradients as the app computes them)\n")
    print("| model | Spearman rho per sentence, median | same top word |")
    print("|---|---:|---:|")
    for name, rho, same in agreement:
        print(f"| {name} | {rho:.2f} | {same:.0%} |")

if __name__ == "__main__":
    main()
