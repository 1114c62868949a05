"""A trained WordPiece vocabulary depends on the text alone: the same corpus gives the same vocab.txt in every
process (the ``tokenizers`` trainer on its own numbered pieces in a per-process hash order, so 4 runs gave 4
different files)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ctxmodels.text import read_documents
from ctxmodels.tokenization import SPECIAL_TOKENS, WordPieceTokenizer
from tests.helpers import synthetic_corpus

ROOT = Path(__file__).resolve().parents[1]

TRAIN_IN_A_NEW_PROCESS = """
import sys
from ctxmodels.text import read_documents
from ctxmodels.tokenization import WordPieceTokenizer
texts = [p for d in read_documents(sys.argv[1]) for p in d]
WordPieceTokenizer.train(texts, vocab_size=int(sys.argv[3])).save(sys.argv[2])
"""


def test_the_same_corpus_gives_the_same_vocab_txt_in_separate_processes(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(synthetic_corpus(n_docs=8, paragraphs=10, seed=3), encoding="utf-8")
    vocabs = []
    for i in range(3):
        out = tmp_path / f"tok{i}"
        subprocess.run([sys.executable, "-c", TRAIN_IN_A_NEW_PROCESS, str(corpus), str(out), "120"], cwd=ROOT,
                       check=True, timeout=120)
        vocabs.append((out / "vocab.txt").read_text(encoding="utf-8"))
    assert vocabs[0] == vocabs[1] == vocabs[2]
    words = vocabs[0].splitlines()
    assert words[: len(SPECIAL_TOKENS)] == SPECIAL_TOKENS and len(words) == 120


def test_continuation_pieces_typed_in_a_text_are_not_special_tokens(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(synthetic_corpus(n_docs=4, paragraphs=5), encoding="utf-8")
    tok = WordPieceTokenizer.train([p for d in read_documents(corpus) for p in d], vocab_size=100)
    piece = tok.token_to_id("##a")
    assert piece is not None and not tok.is_special(piece)
    # "##a" in a text is punctuation and a word, as with any BERT vocabulary, not the piece "##a"
    assert "##a" not in tok.encode("ka ##a").tokens
