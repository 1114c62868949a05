"""Corpus index: build time and size, and how fast a word's occurrences come back, next to a plain scan.

Run by hand: ``python bench/bench_occurrences.py [--corpus PATH] [--repeat N]``. The default corpus is the shared
novels (``../shared/data/corpus/eltec-eng.txt``). The index is built into a temporary cache (so it is always a
fresh build), then each word is looked up warm (median of ``--repeat`` runs) with and without inflections:
``lookup`` with ``limit=1000`` (sampling included) and ``count``. The baseline is what the index replaces: a
plain scan of the file with the project's tokenizer for one word.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from ctxmodels.corpus_index import CorpusIndex, word_forms
from ctxmodels.paths import data_dir
from ctxmodels.text import tokenize_with_offsets

CORPUS = data_dir() / "corpus" / "eltec-eng.txt"
WORDS = ("bank", "run", "light")


def median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def plain_scan(path: Path, forms: frozenset[str]) -> int:
    n = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            n += sum(1 for w, _, _ in tokenize_with_offsets(line) if w.casefold() in forms)
    return n


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", type=Path, default=CORPUS)
    p.add_argument("--repeat", type=int, default=20)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        t = time.perf_counter()
        index = CorpusIndex.open(args.corpus, cache=cache)
        build = time.perf_counter() - t
        t = time.perf_counter()
        CorpusIndex.open(args.corpus, cache=cache).close()
        reopen = time.perf_counter() - t
        size = index.db_path.stat().st_size
        corpus_size = args.corpus.stat().st_size
        print(f"corpus {args.corpus.name}: {corpus_size / 1e6:.1f} MB, {index.n_documents} documents, "
              f"{index.n_sentences:,} sentences, {index.n_words:,} words; python {sys.version.split()[0]}")
        print("\n| build (s) | index on disk (MB) | index / corpus | open an existing index (ms) |\n|---|---|---|---|")
        print(f"| {build:.1f} | {size / 1e6:.1f} | {size / corpus_size:.2f} | {reopen * 1000:.0f} |")
        print(f"\nwarm, median of {args.repeat}:\n")
        print("| word | inflections | occurrences | sentences | documents | lookup, limit 1000 (ms) | count (ms) |")
        print("|---|---|---|---|---|---|---|")
        for word in WORDS:
            for inflections in (False, True):
                found = index.lookup(word, inflections, limit=1000)
                lookup = median_ms(lambda w=word, i=inflections: index.lookup(w, i, limit=1000), args.repeat)
                count = median_ms(lambda w=word, i=inflections: index.count(w, i), args.repeat)
                print(f"| {word} | {'yes' if inflections else 'no'} | {found.total:,} | {found.n_sentences:,} | "
                      f"{found.n_documents} | {lookup:.1f} | {count:.2f} |")
        forms = word_forms("bank", True)
        t = time.perf_counter()
        scanned = plain_scan(args.corpus, forms)
        scan = time.perf_counter() - t
        lookup = median_ms(lambda: index.lookup("bank", True, limit=1000), args.repeat)
        assert scanned == index.count("bank", True), (scanned, index.count("bank", True))
        print("\n| plain scan of the file, bank + inflections (s) | occurrences | index lookup (ms) | speed-up |")
        print("|---|---|---|---|")
        print(f"| {scan:.1f} | {scanned:,} | {lookup:.1f} | {scan * 1000 / lookup:,.0f}x |")
        index.close()


if __name__ == "__main__":
    main()
