"""What the tests of ``ctxmodels train roberta|albert|electra|gpt`` share: a tiny run's options, a synthetic corpus
and its word pieces (module fixtures), torch's thread count put back after each test, and a command-line run."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from ctxmodels import cli
from tests.helpers import synthetic_corpus

TINY = ["--preset", "tiny", "--max-seq-len", "32", "--batch-size", "4", "--eval-sequences", "4", "--no-progress",
        "--threads", "1", "--log-every", "1", "--eval-every", "0"]


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "synthetic.txt"
    path.write_text(synthetic_corpus(n_docs=6, paragraphs=6), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory, corpus_file) -> Path:
    from ctxmodels.text import read_documents
    from ctxmodels.tokenization import WordPieceTokenizer

    out = tmp_path_factory.mktemp("tokenizer")
    WordPieceTokenizer.train([p for d in read_documents(corpus_file) for p in d], vocab_size=150).save(out)
    return out


@pytest.fixture(autouse=True)
def _restore_torch_threads():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def train(argv: list[str], capsys) -> tuple[int, str]:
    rc = cli.main(argv)
    return rc, capsys.readouterr().err
