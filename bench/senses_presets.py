"""How well each shipped model separates the senses of each Word senses preset, layer by layer (issue 13; run by
hand, prints Markdown tables, no assertions).

    python bench/senses_presets.py                                  # every preset x every shipped model
    python bench/senses_presets.py --model minilm-eltec --model bert-eltec --word bank
    python bench/senses_presets.py --no-inflect --threads 2

The figures are the ones the page shows for a preset (``/word_senses?source=preset&preset=WORD``): the preset's
sentences (``assets/examples/senses/WORD.txt``, read by ``app/presets.py``), the occurrences of the word found
by ``ctxmodels.analysis.vectors.find_occurrences`` with its inflections (the page's default; ``--no-inflect``
turns that off), their vectors at every layer (``occurrence_vectors``), and ``ctxmodels.analysis.word_senses.
measure_word``, the page's per-layer table. Reported per layer: leave-one-out 1-nearest-neighbour sense accuracy
(``knn1_accuracy``, cosine), its macro-F1, the silhouette of the senses (cosine) and the majority share (the
accuracy of always answering the most frequent sense). Then, per model and word, the best layer (highest 1-NN
accuracy; ties: higher macro-F1, then the lower layer) and the page's verdict
(``word_senses.sense_separation``): whether the best layer's accuracy reaches
majority + 0.3 x (1 - majority) (0.65 for two equal senses).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("CTXMODELS_DATA", str(ROOT.parent / "shared" / "data"))

MODELS = ("minilm-eltec", "bert-eltec", "elmo-eltec", "static-eltec")


def fmt(x) -> str:
    try:
        return "" if x != x else f"{float(x):.3f}"  # NaN -> blank
    except (TypeError, ValueError):
        return str(x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", help="a model to measure (repeatable; default: the shipped ones: "
                        + ", ".join(MODELS) + ")")
    parser.add_argument("--word", action="append", help="a preset word (repeatable; default: every preset)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--no-inflect", action="store_true", help="find the word only, not its inflections")
    parser.add_argument("--no-layers", action="store_true", help="print only the best-layer table")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    import ctxmodels
    from app.kit.presets import preset_sentences, preset_words
    from ctxmodels.analysis import vectors
    from ctxmodels.analysis import word_senses as ws

    words = args.word or preset_words()
    model_names = args.model or list(MODELS)
    found = {w: vectors.find_occurrences(preset_sentences(w), w, inflections=not args.no_inflect) for w in words}

    per_layer: list[tuple[str, str, dict]] = []  # (model, word, row)
    best: list[tuple[str, str, dict, ws.Separation | None]] = []
    seconds: dict[str, float] = {}
    for name in model_names:
        t0 = time.perf_counter()
        model = ctxmodels.load(name, download=False)
        for w in words:
            m = ws.measure_word(model, found[w])
            table = m.table
            if "knn1_accuracy" not in table:
                print(f"<!-- {name} / {w}: no sense accuracy: {'; '.join(m.notes)} -->")
                continue
            rows = table.to_dict("records")
            per_layer += [(name, w, r) for r in rows]
            top = max(rows, key=lambda r: (r["knn1_accuracy"], r["knn1_macro_f1"], -r["layer_index"]))
            best.append((name, w, top, ws.sense_separation(table)))
        seconds[name] = time.perf_counter() - t0

    print(f"## Best layer per model and preset (LOO 1-NN, cosine; inflections {'off' if args.no_inflect else 'on'}; "
          f"separates: best 1-NN accuracy >= majority + {ws.SEPARATION_SHARE:g} x (1 - majority))\n")
    print("| word | n | senses | majority | model | best layer | 1-NN acc | 1-NN macro-F1 | silhouette | "
          "layer 0 acc | separates |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    first = {(m, w): r for m, w, r in per_layer if r["layer_index"] == 0}
    for w in words:
        for name, ww, r, sep in best:
            if ww != w:
                continue
            print(f"| {w} | {r['n']} | {r['n_senses']} | {fmt(r['majority_share'])} | {name} | "
                  f"{r['layer_index']} ({r['layer']}) | {fmt(r['knn1_accuracy'])} | {fmt(r['knn1_macro_f1'])} | "
                  f"{fmt(r['silhouette'])} | {fmt(first[(name, w)]['knn1_accuracy'])} | "
                  f"{'yes' if sep and sep.separates else 'NO'} |")

    print("\n## Mean over the presets\n")
    print("| model | mean best-layer 1-NN acc | mean best-layer macro-F1 | mean majority | presets that separate |")
    print("|---|---|---|---|---|")
    for name in model_names:
        mine = [(r, sep) for m, _, r, sep in best if m == name]
        if not mine:
            continue
        n = len(mine)
        print(f"| {name} | {fmt(sum(r['knn1_accuracy'] for r, _ in mine) / n)} | "
              f"{fmt(sum(r['knn1_macro_f1'] for r, _ in mine) / n)} | "
              f"{fmt(sum(r['majority_share'] for r, _ in mine) / n)} | "
              f"{sum(1 for _, s in mine if s and s.separates)} of {n} |")

    if not args.no_layers:
        print("\n## Every layer\n")
        print("| word | model | layer | 1-NN acc | 1-NN macro-F1 | silhouette | majority |")
        print("|---|---|---|---|---|---|---|")
        for w in words:
            for name in model_names:
                for m, ww, r in per_layer:
                    if m == name and ww == w:
                        print(f"| {w} | {name} | {r['layer_index']} ({r['layer']}) | {fmt(r['knn1_accuracy'])} | "
                              f"{fmt(r['knn1_macro_f1'])} | {fmt(r['silhouette'])} | {fmt(r['majority_share'])} |")
    print("\n" + ", ".join(f"{n}: {s:.1f} s" for n, s in seconds.items()) + f" (torch threads: {args.threads})")


if __name__ == "__main__":
    main()
