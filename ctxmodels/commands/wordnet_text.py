"""``ctxmodels wordnet-text``: modern English training text from WordNet (:mod:`ctxmodels.training.wordnet_text`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..checkpoint import check_not_an_input, write_text_atomic
from ..training.wordnet_text import build_text


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("wordnet_dir", help="folder of WordNet's data.noun, data.verb, data.adj, data.adv (Debian's "
                                       "wordnet-base: /usr/share/wordnet)")
    p.add_argument("out", help="corpus file to write (one synset a line, one lexicographer file a document)")
    p.add_argument("--exclude", action="append", default=[], metavar="CLOZE.tsv",
                   help="cloze items (sentence with [MASK], tab, answers) whose answer, with the three words before "
                        "it, no paragraph may contain (repeatable)")
    p.epilog = "Train on it beside the corpus with `ctxmodels train bert --add-text OUT.txt`."


def run(args: argparse.Namespace) -> int:
    check_not_an_input(args.out, files=args.exclude, folders=[args.wordnet_dir])
    text, counts = build_text(args.wordnet_dir, args.exclude)
    write_text_atomic(Path(args.out), text)
    print(f"{args.out}: {counts['paragraphs']:,} paragraphs in {counts['documents']} documents, "
          f"{counts['words']:,} words; {counts['dropped']} of {counts['synsets']:,} synsets dropped as "
          "evaluation items")
    return 0
