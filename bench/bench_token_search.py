"""Search by vector (Word senses' "Find the nearest words in SemCor"): what the index costs to build, keep and
search, per shipped model, and what it finds for the preset sentences of a word (run by hand, prints tables, no
assertions).

    python bench/bench_token_search.py                        # the shipped models, 2,000 SemCor sentences
    python bench/bench_token_search.py --models minilm-eltec --sentences 500 --word run

Each model is built into a fresh temporary cache on one torch thread (as the app's server runs a model), then
read back from disk, then searched ``--searches`` times (the vector of every preset occurrence, 50 nearest).
The second table gives, per model, sense and layer, the share of the 50 nearest that are nouns and verbs, averaged
over the preset's occurrences of that sense: for ``run`` (verb and noun senses) it shows whether the layers tell
the two parts of speech apart.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["minilm-eltec", "bert-eltec", "elmo-eltec", "static-eltec"])
    ap.add_argument("--sentences", type=int, default=2000, help="SemCor reference sentences (the app: 2,000)")
    ap.add_argument("--word", default="run", help="a preset of assets/examples/senses (default run)")
    ap.add_argument("--searches", type=int, default=20)
    args = ap.parse_args()

    import numpy as np
    import torch

    import ctxmodels
    from ctxmodels.analysis import token_search as ts
    from ctxmodels.analysis import vectors

    torch.set_num_threads(1)
    lines = (ROOT / "assets" / "examples" / "senses" / f"{args.word}.txt").read_text(encoding="utf-8").splitlines()
    preset = [(s.strip(), label.strip()) for s, label in (line.rsplit("|", 1) for line in lines if "|" in line)]
    costs, shares = [], []
    for name in args.models:
        model = ctxmodels.load(name)
        with tempfile.TemporaryDirectory() as cache:
            t0 = time.perf_counter()
            index = ts.cached_index(model, n=args.sentences, cache=cache)
            built = time.perf_counter() - t0
            files = list(Path(cache).glob("*.npz"))
            size = sum(f.stat().st_size for f in files) / 2**20
            t0 = time.perf_counter()
            ts.load_index(files[0])
            loaded = time.perf_counter() - t0
        occ = vectors.word_vectors(model, preset, args.word)
        times = []
        found = []
        for i in range(args.searches):
            k = i % len(occ.occurrences)
            t0 = time.perf_counter()
            layers = ts.nearest(index, occ.vectors[k], k=50)
            times.append(time.perf_counter() - t0)
        for k, o in enumerate(occ.occurrences):
            found.append((o.label, ts.nearest(index, occ.vectors[k], k=50)))
        costs.append((name, len(index), index.vectors.shape[1], built, size, loaded, statistics.median(times)))
        for layer, layer_name in enumerate(index.layer_names):
            for sense in sorted({label for label, _ in found}):
                rows = [layers[layer] for label, layers in found if label == sense]
                noun = np.mean([sum(n.pos == "NOUN" for n in r) / max(len(r), 1) for r in rows])
                verb = np.mean([sum(n.pos == "VERB" for n in r) / max(len(r), 1) for r in rows])
                shares.append((name, layer_name, sense, len(rows), noun, verb))
        print(f"{name}: built in {built:.1f} s", flush=True)

    print(f"\nThe index of {args.sentences:,} SemCor sentences, one torch thread\n")
    print("| model | words | layers | build s | on disk MB | read back s | search ms (median) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, n, layers, built, size, loaded, search in costs:
        print(f"| {name} | {n:,} | {layers} | {built:.1f} | {size:.1f} | {loaded:.2f} | {search * 1000:.1f} |")
    print(f"\nThe 50 nearest SemCor words of the preset '{args.word}' occurrences: share that are nouns / verbs\n")
    print("| model | layer | sense | occurrences | nouns | verbs |")
    print("|---|---|---|---:|---:|---:|")
    for name, layer, sense, n, noun, verb in shares:
        print(f"| {name} | {layer} | {sense} | {n} | {noun:.0%} | {verb:.0%} |")


if __name__ == "__main__":
    main()
