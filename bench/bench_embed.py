"""Embedding speed of the analysis layer: 500 corpus sentences through BERT and ELMo, cold and cached.

Run by hand: ``python bench/bench_embed.py [--threads N] [--bert PATH] [--elmo PATH]``. Without paths it builds
random-weight models of the default sizes (BERT "mini" with a 16k WordPiece vocabulary, ELMo "mini"): speed does
not depend on the weights. Prints one table row per model: median of 3 cold runs (cache cleared) and the cost of
asking for another layer/word in the same sentences (served from the cache).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

import ctxmodels
from ctxmodels.analysis import vectors
from ctxmodels.paths import data_dir
from ctxmodels.text import tokenize

CORPUS = data_dir() / "corpus" / "eltec-eng.txt"


def _random_models(texts: list[str], root: Path) -> list[Path]:
    from ctxmodels.bert import BertConfig, BertForPreTraining
    from ctxmodels.elmo import ElmoConfig, ElmoLanguageModel
    from ctxmodels.formats.allennlp import save_elmo
    from ctxmodels.formats.huggingface import save_pretrained
    from ctxmodels.tokenization import WordPieceTokenizer

    tok = WordPieceTokenizer.train(texts, vocab_size=16000)
    save_pretrained(BertForPreTraining(BertConfig.preset("mini", vocab_size=tok.vocab_size)).eval(), tok, root / "bert")
    save_elmo(ElmoLanguageModel(ElmoConfig.preset("mini")).eval(), root / "elmo")
    return [root / "bert", root / "elmo"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", type=Path, default=CORPUS)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--bert", type=Path)
    p.add_argument("--elmo", type=Path)
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    with open(args.corpus, encoding="utf-8") as f:
        lines = [s for s in (line.strip() for line in f) if 60 < len(s) < 300]
    sents = lines[5000:5500]
    words = [tokenize(s) for s in sents]
    with tempfile.TemporaryDirectory() as tmp:
        models = _random_models(lines[:20000], Path(tmp))
        if args.bert:
            models[0] = args.bert
        if args.elmo:
            models[1] = args.elmo
        print(f"500 sentences, {sum(map(len, words)):,} words, torch threads {torch.get_num_threads()}")
        print("| model | cold median (s) | cold runs (s) | another layer/word, cached (ms) |\n|---|---|---|---|")
        for path in models:
            m = ctxmodels.load(path)
            runs = []
            for _ in range(3):
                vectors.CACHE.clear()
                t = time.perf_counter()
                vectors.embed_sentences(m, words)
                runs.append(time.perf_counter() - t)
            t = time.perf_counter()
            vectors.word_vectors(m, sents, "the", layers=1)
            cached = (time.perf_counter() - t) * 1000
            shown = ", ".join(f"{r:.2f}" for r in runs)
            print(f"| {m.kind} ({path.name}) | {np.median(runs):.2f} | {shown} | {cached:.0f} |")


if __name__ == "__main__":
    main()
