"""``ctxmodels train KIND``: each kind's options, turned into its run settings, trained by the one trainer.

The kinds that train, their task modules, settings classes, option functions and ``build_task`` extras are what
their registry entries declare (:class:`ctxmodels.kinds.Training`): ``bert``, ``roberta`` (read back as a
``transformers`` encoder), ``elmo``, ``static`` and ``gpt`` today, whose options are :func:`bert_options`,
:func:`roberta_options`, :func:`elmo_options`, :func:`static_options` and :func:`gpt_options` here.

Every option that is a run setting (:mod:`ctxmodels.training.settings`) defaults to None here, meaning "not
given", so that a new run can take the kind's defaults and a resumed run its stored values; the help shows
each kind's defaults, read from its settings class. :func:`build` turns the parsed options into the task and
the trainer's settings through the kind's module (``ctxmodels.training.bert_task``, ``elmo_task``,
``static_task``): ``Settings.resolve(given, out, resume)``, then ``build_task(settings, out, ...)`` with the
kind's own extras (BERT: ``resume``; ELMo: ``data_cache`` and ``resume``).
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
from pathlib import Path
from typing import Any

from .. import kinds
from ..bounds import float_range, int_range
from . import THREADS, bounded

#: --time-limit, in minutes (0: stop after the first step, with a checkpoint)
TIME_LIMIT = float_range(0, 10_000_000)
STOP_AT = int_range(0, 1_000_000_000)
DATA_WORKERS = int_range(0, 64)

def training(kind: str) -> kinds.Training:
    """How the registry says ``ctxmodels train KIND`` trains (``kind``: the word after ``train``, the kind's name
    unless its entry names another); ValueError for one that does not train."""
    found = kinds.training_for(kind)
    if found is None:
        kinds.get(kind)  # "no model kind ..." for a word that is no kind at all
        raise ValueError(f"a {kind} model is not trained with `ctxmodels train`; the kinds that are: "
                         f"{', '.join(kinds.training_commands())}")
    return found


def settings_class(kind: str) -> Any:
    spec = training(kind)
    return kinds.named(f"{spec.module}:{spec.settings}")


def _typer(settings: Any):
    """``T(name)``: the argparse type of a setting's option, a number in the range its settings class declares."""
    bounds = settings.bounds()
    return lambda name: bounded(bounds[name])


def _default(settings: Any, name: str, derived: dict[str, str]) -> str:
    """" (default X)" for a help text: the settings class's default, or ``derived[name]`` in words."""
    value = derived.get(name, getattr(settings, name))
    return f" (default {value:g})" if isinstance(value, float) else f" (default {value})"


def add_common_arguments(p: argparse.ArgumentParser, kind: str, derived: dict[str, str] | None = None) -> None:
    """The options every kind has; ``derived`` names, in words, defaults that follow from other settings."""
    S, d = settings_class(kind), derived or {}
    T = _typer(S)
    p.add_argument("--corpus", default=None,
                   help="plain text: one paragraph a line, blank lines between documents (not needed with --resume)")
    p.add_argument("--add-text", default=None, metavar="FILE",
                   help="more training text in the corpus's format (for example modern English beside the novels: "
                        "ctxmodels wordnet-text); all of it is trained on and none held out, so "
                        "the held-out documents and figures stay those of --corpus")
    p.add_argument("--out", required=True, help="output directory (model, run.json, metrics.jsonl, checkpoint/)")
    p.add_argument("--steps", type=T("steps"), default=None,
                   help="optimizer steps in all" + _default(S, "steps", d) + "; with --resume, a new end for the "
                        "run (the learning-rate decay stretches from where it stands to the new end)")
    p.add_argument("--lr", type=T("lr"), default=None, help="peak learning rate" + _default(S, "lr", d))
    p.add_argument("--warmup", type=T("warmup"), default=None, help="linear warm-up steps" + _default(S, "warmup", d))
    p.add_argument("--weight-decay", type=T("weight_decay"), default=None,
                   help="AdamW weight decay" + _default(S, "weight_decay", d))
    p.add_argument("--bf16", action="store_true", default=None, help="bf16 autocast")
    p.add_argument("--heldout-docs", type=T("heldout_docs"), default=None,
                   help="whole documents held out for evaluation (default 2, or 1 under 10 documents)")
    p.add_argument("--seed", type=T("seed"), default=None,
                   help="seed of the held-out documents, the initial weights and (unless --data-seed) the training "
                        "order" + _default(S, "seed", d))
    p.add_argument("--data-seed", type=T("data_seed"), default=None,
                   help="seed of the training order only (which examples come when, their masks and dropout); "
                        "the held-out documents and initial weights stay --seed's. Give a new one when continuing a "
                        "model with --init-from, so that the run does not walk its start's order again "
                        "(default: --seed)")
    p.add_argument("--save-every", type=T("save_every"), default=None,
                   help="checkpoint every N steps (and on Ctrl-C)" + _default(S, "save_every", d))
    p.add_argument("--eval-every", type=T("eval_every"), default=None,
                   help="held-out evaluation every N steps, 0 = only at the end" + _default(S, "eval_every", d))
    p.add_argument("--log-every", type=T("log_every"), default=None,
                   help="log every N steps" + _default(S, "log_every", d))
    p.add_argument("--time-limit", type=bounded(TIME_LIMIT), default=None, metavar="MINUTES",
                   help="stop cleanly with a checkpoint after this many minutes; continue with --resume")
    p.add_argument("--stop-at", type=bounded(STOP_AT), default=None, metavar="STEP",
                   help="stop cleanly with a checkpoint on reaching this step, the learning-rate schedule still "
                        "running to --steps; continue with --resume (with a new --steps, this replays a run that "
                        "was stopped there and given a new end); 0 saves the untrained start (the run's initial "
                        "weights, evaluated), a control to read the trained model beside")
    p.add_argument("--resume", action="store_true",
                   help="continue exactly where the run in --out stopped, with the settings it stored in run.json: "
                        "no option needs repeating; one given again must equal the run's, except --steps and "
                        "--save-every/--eval-every/--log-every")
    p.add_argument("--threads", type=bounded(THREADS), default=None, help="torch CPU threads")
    p.add_argument("--data-workers", type=bounded(DATA_WORKERS), default=0, metavar="N",
                   help="processes that build batches ahead of the training step (default 0: none; on a GPU a "
                        "few keep it busy; the run is the same either way)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (logs still go to metrics.jsonl)")


def bert_options(p: argparse.ArgumentParser) -> None:
    from ..training.bert_task import DEFAULT_LR

    S = settings_class("bert")
    T = _typer(S)
    lrs = ", ".join(f"{preset} {lr:g}" for preset, lr in DEFAULT_LR.items())
    add_common_arguments(p, "bert", {"lr": f"by preset: {lrs}", "warmup": "10%% of --steps, at most 10000"})
    p.add_argument("--preset", default=None, choices=list(DEFAULT_LR), help="model size" + _default(S, "preset", {}))
    p.add_argument("--vocab-size", type=T("vocab_size"), default=None,
                   help="WordPiece vocabulary to train" + _default(S, "vocab_size", {}))
    p.add_argument("--tokenizer", default=None, metavar="DIR",
                   help="use this tokenizer (tokenizer.json or vocab.txt) instead of training one")
    p.add_argument("--max-seq-len", type=T("max_seq_len"), default=None,
                   help="pieces per sequence with [CLS]/[SEP]" + _default(S, "max_seq_len", {}))
    p.add_argument("--batch-size", type=T("batch_size"), default=None,
                   help="sequences per step" + _default(S, "batch_size", {}))
    p.add_argument("--max-predictions", type=T("max_predictions"), default=None,
                   help="most masked tokens per sequence (default 15%% of --max-seq-len, i.e. 20 for 128)")
    p.add_argument("--dropout", type=T("dropout"), default=None,
                   help=f"dropout of hidden states and attention while training (default {S.dropout:g}, as in BERT; "
                        "short runs learn faster with 0)")
    p.add_argument("--init-from", default=None, metavar="DIR",
                   help="start from the weights of an earlier run's model or of a Hugging Face BERT folder, or a "
                        "model name such as `minilm` (the installed all-MiniLM-L6-v2; missing heads start fresh), at "
                        "its size and with its tokenizer, with this run's own schedule: continued pre-training")
    p.add_argument("--sinusoidal-positions", action="store_true", default=None,
                   help="start the learned position embeddings from the Transformer's sines and cosines instead "
                        "of noise (they still train; the checkpoint format is unchanged)")
    p.add_argument("--whole-word-masking", action="store_true", default=None,
                   help="mask all pieces of a word together")
    mask_split_option(p)
    p.add_argument("--eval-sequences", type=T("eval_sequences"), default=None,
                   help="held-out sequences per evaluation, 0 = no evaluation" + _default(S, "eval_sequences", {}))


def packed_options(p: argparse.ArgumentParser, kind: str, masked: bool = True):
    """The options every transformers kind trained here shares (train roberta, albert, electra, gpt): the common
    ones with BERT's learning rates by preset, the word-piece options and, for a masked LM, the masking options.
    Returns the kind's option type maker (``T("field")``) for its own options."""
    from ..training.bert_task import DEFAULT_LR

    T = _typer(settings_class(kind))
    lrs = ", ".join(f"{preset} {lr:g}" for preset, lr in DEFAULT_LR.items())
    add_common_arguments(p, kind, {"lr": f"by preset: {lrs}", "warmup": "10%% of --steps, at most 10000"})
    piece_options(p, kind)
    if masked:
        p.add_argument("--max-predictions", type=T("max_predictions"), default=None,
                       help="most masked pieces per sequence (default 15%% of --max-seq-len, i.e. 20 for 128)")
        p.add_argument("--whole-word-masking", action="store_true", default=None,
                       help="mask all pieces of a word together")
        mask_split_option(p)
    return T


def mask_split_option(p: argparse.ArgumentParser) -> None:
    """``--mask-split MASK/RANDOM/KEEP`` of the masked LMs, stored as run.json writes it (``"85/0/15"``)."""
    from ..masking import format_mask_split, parse_mask_split

    def split(text: str) -> str:
        try:
            return format_mask_split(parse_mask_split(text))
        except ValueError as e:  # argparse names the option itself
            raise argparse.ArgumentTypeError(str(e).removeprefix("--mask-split ")) from None

    p.add_argument("--mask-split", type=split, default=None, metavar="MASK/RANDOM/KEEP",
                   help="of the chosen pieces, the percentages that become [MASK], a random piece and stay as they "
                        "are (default 80/10/10, BERT's, for every kind, so that they are corrupted alike; ELECTRA's "
                        "released code feeds its generator 85/0/15)")


def roberta_options(p: argparse.ArgumentParser) -> None:
    T = packed_options(p, "roberta")
    p.add_argument("--static-masking", type=T("static_masking"), default=None, metavar="N",
                   help="draw each sequence's masks once and reuse them for N epochs, as the original BERT data "
                        "did (default 0: dynamic masking, a new draw every time a sequence is seen)")


def electra_options(p: argparse.ArgumentParser) -> None:
    from ..training.electra_task import FRACTION, ElectraSettings, fraction_problem

    T = packed_options(p, "electra")

    def fraction(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
        problem = fraction_problem(value, name="")
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return float(value)

    fraction.bound = FRACTION  # type: ignore[attr-defined]  # its range in --help
    p.add_argument("--generator-fraction", type=fraction, default=None, metavar="F",
                   help="the generator's width (hidden size, feed-forward size, heads) as a fraction of the "
                        f"discriminator's (default {ElectraSettings.generator_fraction:g}; the paper found 1/4 to "
                        "1/2 best; at 1 it is as wide)")
    p.add_argument("--disc-weight", type=T("disc_weight"), default=None, metavar="LAMBDA",
                   help="λ: the loss is the generator's masked-LM loss + λ x the discriminator's"
                        + _default(ElectraSettings, "disc_weight", {}))


def albert_options(p: argparse.ArgumentParser) -> None:
    T = packed_options(p, "albert")
    p.add_argument("--embedding-size", type=T("embedding_size"), default=None, metavar="E",
                   help="width of the word-piece embeddings, projected to the hidden size (factorised embeddings; "
                        "default half the preset's hidden size, at most 128: 64 for tiny, 128 from mini on)")
    p.add_argument("--hidden-groups", type=T("hidden_groups"), default=None, metavar="G",
                   help="groups of layers that share their weights (default 1, ALBERT's: every layer the same "
                        "weights; the number of layers for no sharing)")


def gpt_options(p: argparse.ArgumentParser) -> None:
    packed_options(p, "gpt", masked=False)
    masked = "a GPT predicts every next word from the words before it: nothing is masked"
    for option, reason in (("--max-predictions", masked), ("--whole-word-masking", masked),
                           ("--static-masking", masked), ("--mask-split", masked),
                           ("--nsp", "a GPT has no next-sentence prediction; train bert has it"),
                           ("--sop", "a GPT has no sentence-order prediction")):
        p.add_argument(option, nargs="?", action=_refused(reason), help=argparse.SUPPRESS)


def _refused(reason: str) -> type[argparse.Action]:
    """An option that does not fit the kind: one clear line saying why, instead of "unrecognized arguments"."""

    class Refused(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None):
            parser.error(f"{option_string} does not fit this model: {reason}")

    return Refused


def piece_options(p: argparse.ArgumentParser, kind: str) -> None:
    """The model size, word-piece vocabulary and batch options that BERT's successors share with ``train bert``."""
    from ..training.bert_task import DEFAULT_LR

    S = settings_class(kind)
    T = _typer(S)
    p.add_argument("--preset", default=None, choices=list(DEFAULT_LR),
                   help="model size, as BERT's presets (default mini)")
    p.add_argument("--vocab-size", type=T("vocab_size"), default=None,
                   help="WordPiece vocabulary to train" + _default(S, "vocab_size", {}))
    p.add_argument("--tokenizer", default=None, metavar="DIR",
                   help="use this tokenizer (tokenizer.json or vocab.txt) instead of training one")
    p.add_argument("--max-seq-len", type=T("max_seq_len"), default=None,
                   help="pieces per sequence with [CLS]/[SEP]" + _default(S, "max_seq_len", {}))
    p.add_argument("--batch-size", type=T("batch_size"), default=None,
                   help="sequences per step" + _default(S, "batch_size", {}))
    p.add_argument("--dropout", type=T("dropout"), default=None,
                   help="dropout while training" + _default(S, "dropout", {}))
    p.add_argument("--eval-sequences", type=T("eval_sequences"), default=None,
                   help="held-out sequences per evaluation, 0 = no evaluation" + _default(S, "eval_sequences", {}))


def elmo_options(p: argparse.ArgumentParser) -> None:
    from ..elmo import PRESETS
    from ..training.elmo_task import DEFAULT_PRESET, DEFAULT_VOCAB_SIZE

    S = settings_class("elmo")
    T = _typer(S)
    add_common_arguments(p, "elmo")
    p.add_argument("--preset", default=None, choices=list(PRESETS),
                   help=f"model size (default {DEFAULT_PRESET}, or with --init-from the starting model's; see "
                        "ctxmodels.elmo.PRESETS)")
    p.add_argument("--vocab-size", type=T("vocab_size"), default=None,
                   help="output vocabulary: this many most frequent training words, plus <S>, </S>, <UNK> "
                        f"(default {DEFAULT_VOCAB_SIZE}, or with --init-from the starting model's)")
    p.add_argument("--init-from", default=None, metavar="DIR",
                   help="start from a trained ELMo's weights (an earlier run's model, or a name such as "
                        "`elmo-eltec`), at its size and with its output vocabulary, with this run's own schedule: "
                        "continued training")
    p.add_argument("--seq-len", type=T("seq_len"), default=None,
                   help="tokens per training window" + _default(S, "seq_len", {}))
    p.add_argument("--batch-size", type=T("batch_size"), default=None,
                   help="windows per batch" + _default(S, "batch_size", {}))
    p.add_argument("--n-samples", type=T("n_samples"), default=None,
                   help="distinct sampled-softmax candidates per batch; 0 = exact full softmax"
                        + _default(S, "n_samples", {}))
    p.add_argument("--dropout", type=T("dropout"), default=None,
                   help="dropout on every LSTM layer's input and on the softmax's while training; it replaces the "
                        "starting model's" + _default(S, "dropout", {}))
    p.add_argument("--eval-tokens", type=T("eval_tokens"), default=None,
                   help="held-out tokens scored per evaluation" + _default(S, "eval_tokens", {}))
    p.add_argument("--data-cache", default=None,
                   help="folder for the encoded corpus (default OUT/data_cache); share it between runs")
    p.epilog = (f"ELMo defaults: --preset {DEFAULT_PRESET} --steps {S.steps} --lr {S.lr:g} --warmup {S.warmup}: the "
                "shipped recipe, about two hours on a 2-core CPU. On a busy machine --threads 1 is much faster than "
                "the default of all cores.")


def static_options(p: argparse.ArgumentParser) -> None:
    S = settings_class("static")
    T = _typer(S)
    add_common_arguments(p, "static", {"steps": "one pass over the training text",
                                       "warmup": "10%% of --steps, at most 100"})
    p.add_argument("--dim", type=T("dim"), default=None, help="vector size" + _default(S, "dim", {}))
    p.add_argument("--window", type=T("window"), default=None,
                   help="largest context distance" + _default(S, "window", {}))
    p.add_argument("--negatives", type=T("negatives"), default=None,
                   help="noise words per pair" + _default(S, "negatives", {}))
    p.add_argument("--min-count", type=T("min_count"), default=None,
                   help="rarest word kept" + _default(S, "min_count", {}))
    p.add_argument("--vocab-size", type=T("vocab_size"), default=None,
                   help="most frequent words kept" + _default(S, "vocab_size", {}))
    p.add_argument("--subsample", type=T("subsample"), default=None,
                   help="frequent-word subsampling threshold t, 0 = off" + _default(S, "subsample", {}))
    p.add_argument("--cased", action="store_true", default=None,
                   help="keep letter case (default: lower-case everything)")
    p.add_argument("--batch-size", type=T("batch_size"), default=None,
                   help="about this many (centre, context) pairs a step" + _default(S, "batch_size", {}))


def add_kind_arguments(p: argparse.ArgumentParser, kind: str) -> None:
    """All options of ``ctxmodels train KIND`` (the parser's ``kind`` defaults to ``kind``): the kind's own option
    function, or the options every kind has."""
    spec = training(kind)
    if spec.options:
        kinds.named(spec.options)(p)
    else:
        add_common_arguments(p, kind)
    try:  # a kind without factorised embeddings says whose option it is (the others define their own)
        p.add_argument("--embedding-size", nargs="?", help=argparse.SUPPRESS, action=_refused(
            "factorised embeddings (word pieces narrower than the hidden size) are ALBERT's: ctxmodels train albert "
            "--embedding-size E"))
    except argparse.ArgumentError:
        pass
    p.set_defaults(kind=kind)


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="kind", required=True)
    for kind in kinds.training_commands():
        help_ = training(kind).help
        add_kind_arguments(sub.add_parser(kind, help=help_, description=help_), kind)


def build(args: argparse.Namespace):
    """(task, trainer settings) of the parsed options: the run's settings resolved, the kind's task built."""
    spec = training(args.kind)
    settings_cls = settings_class(args.kind)
    given = {name: getattr(args, name, None) for name in settings_cls.names()}
    if given.get("init_from") is not None and not Path(given["init_from"]).exists():
        from ..loading import resolve  # a name (minilm, bert-eltec, ORG/NAME in the cache) as every --model takes it

        given["init_from"] = str(resolve(given["init_from"], download=False)[0])
    settings = settings_cls.resolve(given, args.out, resume=args.resume)
    extras = {name: getattr(args, name, None) for name in spec.extras}
    task, cfg = kinds.named(spec.module).build_task(settings, args.out, **extras)
    limit = None if args.time_limit is None else 60.0 * args.time_limit
    return task, dataclasses.replace(cfg, time_limit_s=limit, stop_at=args.stop_at, progress=not args.no_progress,
                                     data_workers=args.data_workers)


def run(args: argparse.Namespace) -> int:
    from ..training.run_lock import hold_folder
    from ..training.trainer import Trainer, TrainingDiverged, TrainingInterrupted

    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    with hold_folder(args.out):  # from the settings check on: nothing else writes the run meanwhile
        task, cfg = build(args)
        command = "ctxmodels " + " ".join(shlex.quote(a) for a in getattr(args, "argv", []))
        trainer = Trainer(task, cfg, args.out, command=command)
        try:
            metrics = trainer.train(resume=args.resume)
        except (TrainingDiverged, TrainingInterrupted) as e:
            print(f"ctxmodels: {e}", file=sys.stderr)
            return 1 if isinstance(e, TrainingDiverged) else 130
    if trainer.info.is_main and trainer.step < cfg.max_steps:  # --time-limit or --stop-at
        print(f"stopped at step {trainer.step} of {cfg.max_steps}; checkpoint saved in {trainer.checkpoint_dir}. "
              f"Continue with: ctxmodels train {args.kind} --out {shlex.quote(str(args.out))} --resume")
    elif trainer.info.is_main:
        shown = ", ".join(f"{k}={v:.4g}" for k, v in metrics.items())
        print(f"done: {trainer.step} steps, model in {args.out}" + (f"; held-out {shown}" if shown else ""))
    return 0
