"""One module per ``ctxmodels`` subcommand; each provides ``add_arguments(parser)`` and ``run(args) -> int``.

Command modules are the top layer of the package: they parse options, load models through
:func:`ctxmodels.load`, call the library (models, training, analysis, release) and print. Nothing below them
imports argparse or reads ``sys.argv``.
"""

# command -> (module under ctxmodels.commands, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "train": ("train", "train a model from scratch on a text corpus"),
    "fill-mask": ("fill_mask", "top-k words for every [MASK] in a sentence"),
    "embed": ("embed", "per-layer word vectors of sentences, saved as .npz"),
    "neighbours": ("neighbours", "nearest neighbours of a word in a static-vector model"),
    "eval": ("eval", "evaluate on WSD (CoarseWSD-20) or WiC data"),
    "probe": ("probe", "layer-weight probes (part of speech, word sense) on SemCor"),
    "export-elmo": ("export_elmo", "export our ELMo to options.json + weights.hdf5"),
    "quality": ("quality", "measure models: held-out LM figures, SemCor senses per layer, cloze"),
    "ship": ("ship", "copy a training run into assets/ (fp16) and write measured figures into its card"),
}


def load_model(name: str, kind: str | None = None, need: str = ""):
    """:func:`ctxmodels.load` for a command's ``--model``; ValueError when it is not of ``kind`` (``need`` says
    what for)."""
    from .. import load

    model = load(name)
    if kind is not None and model.kind != kind:
        raise ValueError(f"{name} is a {model.kind} model; {need or 'this command'} needs a {kind} model")
    return model
