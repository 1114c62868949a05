"""One module per ``ctxmodels`` subcommand; each provides ``add_arguments(parser)`` and ``run(args) -> int``.

Command modules are the top layer of the package: they parse options, load models through
:func:`ctxmodels.load`, call the library (models, training, analysis, release) and print. Nothing below them
imports argparse or reads ``sys.argv``.

Every numeric option is parsed by :func:`bounded` (or :func:`bounded_int` / :func:`bounded_float`), so argparse
itself refuses a value out of range, NaN, infinity or a word, with a message naming the option and the range.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..bounds import MAX_SEED, Bound, float_range, int_range

# command -> (module under ctxmodels.commands, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "train": ("train", "train a model from scratch on a text corpus"),
    "wordnet-text": ("wordnet_text", "modern English training text from WordNet's definitions and examples"),
    "speeches-text": ("speeches_text", "present-day English training text from the State of the Union addresses"),
    "average": ("average", "one model whose weights are the mean of several continuations of one model"),
    "fill-mask": ("fill_mask", "top-k words for every [MASK] in a sentence"),
    "embed": ("embed", "per-layer word vectors of sentences, saved as .npz"),
    "neighbours": ("neighbours", "nearest neighbours of a word in a static-vector model"),
    "occurrences": ("occurrences", "every occurrence of a word in a corpus (an index kept in the cache)"),
    "nearest-words": ("nearest_words", "the SemCor words nearest to one occurrence's vector, layer by layer"),
    "which-sense": ("which_sense", "which WordNet sense one occurrence is: the nearest sense average over SemCor, "
                                   "layer by layer"),
    "eval": ("eval", "evaluate on WSD (CoarseWSD-20) or WiC data"),
    "probe": ("probe", "layer-weight probes (part of speech, word sense) on SemCor"),
    "export-elmo": ("export_elmo", "export our ELMo to options.json + weights.hdf5"),
    "quality": ("quality", "measure models: held-out LM figures, SemCor senses per layer, cloze"),
    "finetune": ("finetune", "fine-tune a BERT or ELMo on a labelled task (pos, ner, wsd:LEMMA, period, a file)"),
    "ship": ("ship", "copy a training run into assets/ (fp16) and write measured figures into its card"),
    "get": ("get", "download a published model (Hugging Face id, or elmo-small/-medium/-original/-original-5.5b)"),
    "app": ("app", "start the explorer app in the browser (from a checkout or an installed wheel)"),
}


@contextmanager
def progress_bar(desc: str, **tqdm_options: Any) -> Iterator[Callable[[int, int], None]]:
    """A ``progress(done, total)`` callback for a library call that reports how far it is: a bar on stderr from its
    first report (nothing when there is none: a result read from a cache), closed when the block ends."""
    from tqdm import tqdm

    bar = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, desc=desc, file=sys.stderr, **tqdm_options)
        bar.update(done - bar.n)

    try:
        yield progress
    finally:
        if bar is not None:
            bar.close()


def add_semcor_option(p: argparse.ArgumentParser) -> None:
    """``--semcor``, for the commands that read SemCor."""
    p.add_argument("--semcor", default=None,
                   help="SemCor folder (default: $CTXMODELS_DATA/semcor, else the copy in assets/semcor)")


def load_model(name: str, kind: str | None = None, need: str = ""):
    """:func:`ctxmodels.load` for a command's ``--model``; ValueError when it is not of ``kind`` (``need`` says
    what for)."""
    from .. import load

    model = load(name)
    if kind is not None and model.kind != kind:
        raise ValueError(f"{name} is a {model.kind} model; {need or 'this command'} needs a {kind} model")
    return model


def bounded(bound: Bound) -> Callable[[str], int | float]:
    """An argparse ``type=`` that parses a number within ``bound``; argparse puts the option's name in front of
    the message: "argument --top-k: must be a whole number between 1 and 1000, got 0"."""

    def parse(text: str) -> int | float:
        try:
            return bound.parse("", text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e).strip()) from None

    parse.__name__ = "whole number" if bound.integer else "number"
    parse.bound = bound  # type: ignore[attr-defined]  # for --help texts and the tests
    return parse


def bounded_int(lo: int, hi: int) -> Callable[[str], int | float]:
    return bounded(int_range(lo, hi))


def bounded_float(lo: float, hi: float, lo_open: bool = False, hi_open: bool = False) -> Callable[[str], int | float]:
    return bounded(float_range(lo, hi, lo_open, hi_open))


def show_ranges(parser: argparse.ArgumentParser) -> None:
    """Add each numeric option's range to its --help text (for every subcommand's parser too)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                show_ranges(sub)
        bound = getattr(action.type, "bound", None)
        if bound is not None and action.help != argparse.SUPPRESS and bound.describe() not in (action.help or ""):
            action.help = f"{action.help or ''} [{bound.describe()}]".strip()


def nonempty_paths(paths: list[str], what: str = "PATH") -> None:
    """ValueError for an empty path among positional ``paths`` (an empty path is the current folder)."""
    if any(not p.strip() for p in paths):
        raise ValueError(f"a {what} must not be empty (it would mean the current folder)")


#: options several commands share
THREADS = int_range(1, 1024)
SEED = int_range(0, MAX_SEED)
BATCH_SIZE = int_range(1, 4096)
