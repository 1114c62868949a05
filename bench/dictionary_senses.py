"""How often each shipped model names the right dictionary sense of the Word senses presets (run by hand; prints
Markdown tables, no assertions).

    python bench/dictionary_senses.py                       # every mapped preset x every shipped model
    python bench/dictionary_senses.py --model minilm-eltec --word bank

What the page's *Which dictionary sense is it?* does (``ctxmodels.analysis.dictionary_senses``): each WordNet sense
of the word's lemma gets the average of its SemCor occurrences' vectors (senses with at least 3), and an
occurrence is read as the sense whose average is nearest by cosine. Two figures per model and word:

* **SemCor**: the share of SemCor's own occurrences each layer reads right, each left out of its sense's average
  (what the page writes under every layer), against each spelling's most frequent sense.
* **presets**: the share of the preset's sentences (``assets/examples/senses/WORD.txt``, every occurrence, its
  inflections included) that each layer reads as a sense the preset's label allows. The labels are the presets'
  own (river, money …); ``ACCEPT`` below names the WordNet senses each one allows. Bear and match are left out:
  SemCor tags one of their two preset senses fewer than 3 times (bear the animal, match the contest), so there
  is no average to read it by. These sentences are the kind a class types: short, plain and not from SemCor, so
  this is the figure that tells how far the page's answer holds outside SemCor.

The last column times ``sense_averages`` (SemCor's occurrences embedded once per model and lemma; the page keeps
them for the server's life) on the threads given.
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
# preset label -> the WordNet 3.0 sense keys it allows, or a part of speech (run: noun vs verb)
ACCEPT: dict[str, dict[str, set[str] | str]] = {
    "bank": {"money": {"bank%1:14:00::"}, "river": {"bank%1:17:01::"}},
    "light": {"weight": {"light%3:00:01::"},
              "illumination": {"light%1:19:00::", "light%1:07:01::", "light%1:06:00::", "light%1:15:00::",
                               "light%1:07:00::", "light%3:00:06::"}},
    "play": {"drama": {"play%1:10:01::", "play%1:10:03::"},
             "game": {"play%2:33:00::", "play%2:41:03::", "play%2:41:00::"}},
    "rock": {"stone": {"rock%1:17:01::", "rock%1:27:00::"}, "sway": {"rock%2:38:00::", "rock%2:38:01::"}},
    "spring": {"season": {"spring%1:28:00::"}, "water": {"spring%1:17:00::"}},
    "run": {"noun": "n", "verb": "v"},
}


def allowed(info, want: set[str] | str) -> bool:
    return info.pos == want if isinstance(want, str) else info.sense_keys[0] in want


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", action="append", help="a shipped model's name (default: all four)")
    ap.add_argument("--word", action="append", choices=sorted(ACCEPT), help="a preset (default: all mapped)")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()

    import numpy as np
    import torch

    import ctxmodels
    from app.kit.presets import preset_sentences
    from ctxmodels.analysis import dictionary_senses as ds
    from ctxmodels.analysis.vectors import word_vectors
    from ctxmodels.semcor import load_semcor

    torch.set_num_threads(args.threads)
    semcor = load_semcor()
    words = args.word or list(ACCEPT)
    print("| word | model | layers: SemCor right (left out) | by spelling | layers: presets right | best on SemCor: "
          "presets right | n presets | averages s |")
    print("|---|---|---|---|---|---|---|---|")
    overall: dict[str, list[float]] = {}
    for name in args.model or MODELS:
        model = ctxmodels.load(ROOT / "assets" / name)
        for word in words:
            start = time.perf_counter()
            av = ds.sense_averages(model, word, semcor=semcor)
            took = time.perf_counter() - start
            lines = [line for line in preset_sentences(word) if line.rsplit("|", 1)[1].strip() in ACCEPT[word]]
            occ = word_vectors(model, lines, word, inflections=True)
            wants = [ACCEPT[word][o.label] for o in occ.occurrences]
            right = []
            for layer in range(len(av.layer_names)):
                reads = [ds.guess(av, v).sense(layer) for v in occ.vectors]
                right.append(np.mean([s is not None and allowed(av.senses[s], w) for s, w in zip(reads, wants)]))
            best = av.best_layer()
            overall.setdefault(name, []).append(right[best])
            print(f"| {word} | {name} | {', '.join(f'{a:.0%}' for a in av.accuracy)} | {av.by_spelling:.0%} | "
                  f"{', '.join(f'{r:.0%}' for r in right)} | {right[best]:.0%} ({av.layer_names[best]}) | "
                  f"{len(wants)} | {took:.2f} |")
    print()
    for name, shares in overall.items():
        print(f"{name}: presets read right by the best layer on SemCor, mean over {len(shares)} words: "
              f"{np.mean(shares):.0%}")


if __name__ == "__main__":
    main()
