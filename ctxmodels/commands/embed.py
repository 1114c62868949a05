"""``ctxmodels embed``."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..loading import POOLINGS, load


def read_sentences(path: str | Path) -> list[list[str]]:
    """One whitespace-tokenised sentence a line; an empty line is an empty sentence (indices follow lines)."""
    path = Path(path)
    # exists(), not is_file(): a shell pipe such as <(...) is a fine input too.
    if not path.exists() or path.is_dir():
        raise ValueError(f"{path}: input file not found")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text ({e}); save the file as UTF-8") from e
    return [line.split() for line in text.splitlines()]


def write_npz(path: str | Path, layer_names: list[str], arrays: Sequence[np.ndarray]) -> None:
    """``layers`` (names, in order) and ``s{i}`` float32 [layers, words, dim]; written atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"layers": np.array(layer_names, dtype=str)}
    payload.update({f"s{i}": np.asarray(a, dtype=np.float32) for i, a in enumerate(arrays)})
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **payload)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True,
                   help="short name, checkpoint directory, Hugging Face directory or cache name, published ELMo "
                        "folder (options.json + weights .hdf5) or word-vector .txt file")
    p.add_argument("--input", required=True, help="UTF-8 text, one whitespace-tokenised sentence a line")
    p.add_argument("--out", required=True, help="output .npz: `layers` and s0, s1, ... [layers, words, dim]")
    p.add_argument("--pooling", choices=POOLINGS, default="mean", help="how BERT word pieces become one vector")
    p.add_argument("--batch-size", type=int, default=32)


def run(args: argparse.Namespace) -> int:
    if args.batch_size < 1:
        raise ValueError("--batch-size must be at least 1")
    sentences = read_sentences(args.input)
    model = load(args.model)
    arrays = model.embed(sentences, pooling=args.pooling, batch_size=args.batch_size)
    write_npz(args.out, model.layer_names, arrays)
    n_words = sum(len(s) for s in sentences)
    print(f"{len(sentences)} sentences, {n_words} words, {len(model.layer_names)} layers x {model.dim} "
          f"-> {args.out}", file=sys.stderr)
    return 0
