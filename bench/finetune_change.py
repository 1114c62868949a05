"""What fine-tuning changed in a fine-tuned model, as a table: per layer, linear CKA and the mean cosine of a word
before vs after, and the 1-NN accuracy of the task's labels before and after; then the heads that changed most.
The same numbers as the What fine-tuning changes page (``ctxmodels.analysis.finetuning.compare_on_task``).

    python bench/finetune_change.py runs/bert-pos [--split test] [--sentences 200]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ctxmodels  # noqa: E402
from ctxmodels.analysis import finetuning as ft  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", help="a folder written by ctxmodels finetune")
    p.add_argument("--split", default="test", choices=["dev", "test"])
    p.add_argument("--sentences", type=int, default=200)
    args = p.parse_args()
    torch.set_num_threads(1)
    after = ctxmodels.load(args.model)
    before = ft.base_model(after)
    info = ft.finetune_info(after)
    start = time.perf_counter()
    result = ft.compare_on_task(before, after, info["task"], split=args.split, max_sentences=args.sentences)
    took = time.perf_counter() - start
    print(f"{after.name} ({info['mode']}, {info['steps']} steps on {info['task']}) vs {before.name}: "
          f"{result.n_sentences} {args.split} sentences, {result.n_words} words, {len(result.point_labels)} "
          f"labelled points (majority label {result.majority:.3f}); {took:.1f} s")
    print(f"{'layer':<22} {'CKA':>7} {'cosine':>7} {'1-NN before':>12} {'1-NN after':>11}")
    for r in result.layers.to_dict("records"):
        print(f"{r['layer_name']:<22} {r['cka']:7.3f} {r['cosine']:7.3f} {r['knn_before']:12.3f} "
              f"{r['knn_after']:11.3f}")
    heads = result.ranked_heads(top=5)
    if heads is not None:
        print("heads that changed most (mean Jensen-Shannon divergence of the attention rows):")
        for r in heads.to_dict("records"):
            print(f"  layer {r['layer']}, head {r['head']}: {r['js_divergence']:.4f}")
    for note in result.notes:
        print("note:", note)


if __name__ == "__main__":
    main()
