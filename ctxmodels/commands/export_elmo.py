"""``ctxmodels export-elmo``."""

from __future__ import annotations

import argparse

from ..formats.allennlp import export_published
from . import load_model


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True,
                   help="our ELMo checkpoint directory, a published one, or a short name (elmo-eltec)")
    p.add_argument("--out", required=True, help="directory for options.json + weights.hdf5")


def run(args: argparse.Namespace) -> int:
    model = load_model(args.model, "elmo", "export-elmo").model
    out = export_published(model, args.out)
    note = " (the LM head is not part of that layout and was left out)" if model.has_lm_head else ""
    print(f"wrote {out / 'options.json'} and {out / 'weights.hdf5'}{note}")
    return 0
