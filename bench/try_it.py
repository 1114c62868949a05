"""The Overview's *Try it* on the shipped models: one word in two sentences, the cosine between its two vectors
layer by layer and the anisotropy baseline (how alike any two words of the two sentences are in that layer), as
``ctxmodels.analysis.word_senses.same_word`` computes them for the page. Run by hand:

    python bench/try_it.py                       # prints the table and writes bench/results/try_it.json
    python bench/try_it.py --out /tmp/try.json   # somewhere else

``docs/app.md``'s table of these figures is written from the JSON (``python -m ctxmodels.release.docs``), so a
re-run here followed by that command is all a new model needs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODELS = ("static-eltec", "elmo-eltec", "minilm-eltec")
WORD = "bank"
SENTENCE_A = "We sat on the bank of the river and watched the boats."
SENTENCES_B = ("She paid the money into her account at the bank.", "The boat drifted to the bank of the stream.")


def measure(models: tuple[str, ...] = MODELS) -> dict:
    """Every model's cosines and baselines for A against each B."""
    import ctxmodels
    from ctxmodels.analysis.word_senses import same_word

    loaded = {name: ctxmodels.load(name) for name in models}
    pairs = []
    for b in SENTENCES_B:
        results = {name: same_word(model, SENTENCE_A, b, WORD) for name, model in loaded.items()}
        pairs.append({"sentence_b": b, "models": {name: {"layers": r.layer_names, "cosine": r.cosine,
                                                          "baseline": r.baseline} for name, r in results.items()}})
    return {"command": "python bench/try_it.py", "word": WORD, "sentence_a": SENTENCE_A, "pairs": pairs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "try_it.json")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    result = measure()
    for pair in result["pairs"]:
        print(f"\nA: {result['sentence_a']}\nB: {pair['sentence_b']}")
        for name, m in pair["models"].items():
            print(f"  {name:<14} cosine   " + " ".join(f"{c:5.2f}" for c in m["cosine"]))
            print(f"  {'':<14} baseline " + " ".join(f"{c:5.2f}" for c in m["baseline"]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"\nwritten to {args.out}")


if __name__ == "__main__":
    main()
