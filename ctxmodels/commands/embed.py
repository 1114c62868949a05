"""``ctxmodels embed``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..checkpoint import atomic_file, check_writable_file
from ..loading import POOLINGS, load
from ..text import read_text_file
from . import BATCH_SIZE, bounded


def read_sentences(path: str | Path) -> list[list[str]]:
    """One whitespace-tokenised sentence a line; an empty line is an empty sentence (indices follow lines).
    A pipe such as ``<(...)`` is a fine input too; a file without a single word is refused."""
    lines = read_text_file(path, "input file").splitlines()
    sentences = [line.split() for line in lines]
    if not any(sentences):
        raise ValueError(f"{path}: no words to embed ({len(lines)} line(s), all empty); expected one sentence a line")
    return sentences


def write_npz(path: str | Path, layer_names: list[str], arrays: Sequence[np.ndarray]) -> None:
    """``layers`` (names, in order) and ``s{i}`` float32 [layers, words, dim]; written atomically."""
    payload = {"layers": np.array(layer_names, dtype=str)}
    payload.update({f"s{i}": np.asarray(a, dtype=np.float32) for i, a in enumerate(arrays)})
    size = sum(a.nbytes for a in payload.values()) + 200 * len(payload)
    with atomic_file(path, size=size) as tmp, open(tmp, "wb") as f:
        np.savez(f, **payload)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True,
                   help="short name, checkpoint directory, Hugging Face directory or cache name, published ELMo "
                        "folder (options.json + weights .hdf5) or word-vector .txt file")
    p.add_argument("--input", required=True, help="UTF-8 text, one whitespace-tokenised sentence a line")
    p.add_argument("--out", required=True, help="output .npz: `layers` and s0, s1, ... [layers, words, dim]")
    p.add_argument("--pooling", choices=POOLINGS, default="mean", help="how BERT word pieces become one vector")
    p.add_argument("--batch-size", type=bounded(BATCH_SIZE), default=32,
                   help="sentences per forward pass (default 32)")


def run(args: argparse.Namespace) -> int:
    check_writable_file(args.out)
    sentences = read_sentences(args.input)
    model = load(args.model)
    arrays = model.embed(sentences, pooling=args.pooling, batch_size=args.batch_size)
    write_npz(args.out, model.layer_names, arrays)
    n_words = sum(len(s) for s in sentences)
    print(f"{len(sentences)} sentences, {n_words} words, {len(model.layer_names)} layers x {model.dim} "
          f"-> {args.out}", file=sys.stderr)
    return 0
