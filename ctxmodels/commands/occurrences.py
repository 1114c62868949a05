"""``ctxmodels occurrences``: every occurrence of a word in a corpus, from the corpus index."""

from __future__ import annotations

import argparse
import json

from ..corpus_index import MAX_LIMIT, CorpusIndex, Hit, Lookup
from . import SEED, bounded, bounded_int, progress_bar

LISTED = 20  # occurrences a plain listing shows unless --limit says otherwise: a screenful
CONTEXT = 50  # characters of context on each side in the listing


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--corpus", required=True,
                   help="plain-text corpus: one paragraph a line, blank lines between documents; indexed on first "
                        "use (kept in the cache, rebuilt when the file changes)")
    p.add_argument("--word", required=True, help="the word to find (case does not matter)")
    p.add_argument("--inflections", action="store_true",
                   help="also its simple inflections and possessives (bank: banks, bank's, banked, banking)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--count", action="store_true", help="print only the number of occurrences")
    out.add_argument("--json", action="store_true",
                     help="one JSON object a line per occurrence: document, document_name, line, sentence, start, "
                          "end, word (all of them unless --limit)")
    p.add_argument("--limit", type=bounded_int(1, MAX_LIMIT), default=None, metavar="N",
                   help=f"show at most N occurrences, sampled evenly across the documents (default: {LISTED} in the "
                        "listing, all with --json)")
    p.add_argument("--seed", type=bounded(SEED), default=0, metavar="S", help="seed of that sample (default 0)")


def run(args: argparse.Namespace) -> int:
    index = _open(args.corpus)
    with index:
        if args.count:
            print(index.count(args.word, args.inflections))
            return 0
        limit = args.limit if args.limit is not None or args.json else LISTED
        found = index.lookup(args.word, args.inflections, limit=limit, seed=args.seed)
    if args.json:
        for h in found.hits:
            print(json.dumps({"document": h.document, "document_name": h.document_name, "line": h.line,
                              "sentence": h.sentence, "start": h.char_span[0], "end": h.char_span[1],
                              "word": h.word}, ensure_ascii=False))
        return 0
    for h in found.hits:
        print(_in_context(h))
    print(_summary(found, args.seed, index.n_documents))
    return 0


def _open(corpus: str) -> CorpusIndex:
    """The corpus index, with a progress bar on stderr when it has to be built first."""
    with progress_bar("indexing the corpus", unit="B", unit_scale=True) as progress:
        return CorpusIndex.open(corpus, progress=progress)


def _in_context(h: Hit) -> str:
    """``name:line  …left [word] right…``: the word at a fixed column, so a page of hits reads down one line."""
    a, b = h.char_span
    left, right = h.sentence[:a], h.sentence[b:]
    left = ("…" + left[-CONTEXT + 1:]) if len(left) > CONTEXT else left
    right = (right[:CONTEXT - 1] + "…") if len(right) > CONTEXT else right
    where = f"{h.document_name[:30]}:{h.line}"
    return _printable(f"{where:<38} {left:>{CONTEXT}}[{h.word}]{right}")


def _summary(found: Lookup, seed: int, n_documents: int) -> str:
    forms = ", ".join(sorted(found.forms))
    if not found.total:
        return f"no occurrence of {forms} in the {n_documents} document(s)"
    shown = (f"showing {len(found.hits)}, sampled evenly across the documents (seed {seed}; --limit, --seed)"
             if len(found.hits) < found.total else "showing all")
    return (f"{found.total} occurrence(s) of {forms} in {found.n_sentences} sentence(s) of {found.n_documents} of "
            f"{n_documents} document(s); {shown}")


def _printable(text: str) -> str:
    """Control characters shown escaped: a corpus line must not move the cursor or ring the bell."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
