"""The guesses layer by layer (Fill in the blank's *Show the guesses layer by layer*, the logit lens): where in each
shipped model the answer takes shape, and what reading every layer costs beside the guesses themselves (run by
hand, prints tables, no assertions).

    python bench/bench_by_layer.py
    python bench/bench_by_layer.py --models minilm-eltec --sentences 20

For every sentence of ``assets/examples/cloze.tsv``, ``fill_in.guesses_by_layer`` reads the masked-LM head (ELMo:
its softmax) from every layer at the blank. Per model and layer: the median rank of the model's own answer (its
last layer's first whole-word guess), the share of sentences where that layer already ranks it first and where it
ranks it in its top 10, and the share where the layer's first guess is one of the words the cloze item expects.
Then the time per call, median over the sentences, on one torch thread (as the app's server runs a model), against
``fill_mask`` on the same sentence, alternating.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["minilm-eltec", "bert-eltec", "elmo-eltec"])
    ap.add_argument("--sentences", type=int, default=50, help="the first N cloze sentences (all 50 by default)")
    args = ap.parse_args()

    import torch

    import ctxmodels
    from ctxmodels.analysis import fill_in
    from ctxmodels.release.quality import read_cloze

    torch.set_num_threads(1)
    items = read_cloze()[:args.sentences]
    print("| model | layer | median rank of the answer | answer first | answer in top 10 | an expected word first |")
    print("|---|---|---|---|---|---|")
    timing = []
    for name in args.models:
        model = ctxmodels.load(name)
        tok = getattr(model, "tokenizer", None)
        fill_in.guesses_by_layer(model, tok, items[0][0])  # first-call costs out of the timing
        results, lens_ms, fill_ms = [], [], []
        for sentence, _ in items:
            start = time.perf_counter()
            fill_in.fill_mask(model, tok, sentence, top_k=5, whole_words=True)
            fill_ms.append(1000 * (time.perf_counter() - start))
            start = time.perf_counter()
            results.append(fill_in.guesses_by_layer(model, tok, sentence, top_k=5, whole_words=True))
            lens_ms.append(1000 * (time.perf_counter() - start))
        for layer, layer_name in enumerate(results[0].layer_names):
            ranks = [r.answer_ranks[layer] for r in results]
            expected_first = [r.top[layer][0]["token"].lower() in {w.lower() for w in e}
                              for r, (_, e) in zip(results, items)]
            print(f"| {name} | {layer_name} | {statistics.median(ranks):,.0f} | "
                  f"{sum(x == 1 for x in ranks) / len(ranks):.0%} | {sum(x <= 10 for x in ranks) / len(ranks):.0%} | "
                  f"{sum(expected_first) / len(items):.0%} |")
        timing.append((name, statistics.median(lens_ms), statistics.median(fill_ms)))
    print()
    print("| model | by layer, median ms | guesses, median ms | ratio |")
    print("|---|---|---|---|")
    for name, lens, fill in timing:
        print(f"| {name} | {lens:.1f} | {fill:.1f} | {lens / fill:.1f} |")


if __name__ == "__main__":
    main()
