"""The held-out figures of BERT's successors trained here (``ctxmodels train roberta|albert|electra|gpt``), measured
again from a model folder and its corpus by ``ctxmodels quality --corpus``, and their part of the model card.

What is measured is what the training run's own held-out evaluation measures, by the training task's own code
(``evaluate`` of :mod:`~ctxmodels.training.lm_task`, :mod:`~ctxmodels.training.albert_task` and
:mod:`~ctxmodels.training.electra_task`) on the same kind of set: the documents the run held out (its seed and
``--heldout-docs``), packed or paired and masked as the run did, with the masks (and ELECTRA's generator samples)
drawn from fixed seeds, so a figure can be measured again. The run's settings come from the folder's ``run.json``
(a run's folder) or ``train_args.json`` (the copy ``ctxmodels ship`` keeps), else the trainers' defaults; the
first ``--eval-sequences`` of the ``--bert-sequences`` measured here are then the very sequences and masks of the
run's own evaluation. On top of the run's figures: the top-5 of the masked (or next) word, read from the same
forward pass, and the precision of ELECTRA's discriminator.

- RoBERTa: masked-word top-1, top-5 and perplexity over the masked pieces (``top1``, ``top5``, ``ppl``);
- ALBERT: the same, and the sentence-order accuracy of the held-out pairs (``sop_accuracy``);
- ELECTRA: the generator's masked-word top-1, top-5 and perplexity (``gen_*``); the discriminator on the sequences
  the generator corrupted: accuracy on every piece, the share of replaced pieces it catches (``disc_recall``) and
  of its "replaced" calls that are right (``disc_precision``), its loss, and the share of pieces replaced;
- GPT: next-word top-1, top-5 and perplexity.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from .. import kinds
from ..checkpoint import CheckpointError, file_sha256
from ..masking import MASK_SPLIT_TEXT, parse_mask_split
from .quality import BERT_SEQUENCES
from .shipping import _columns, _pct

if TYPE_CHECKING:
    from ..loading import LoadedModel

#: the files holding a run's settings: a run's own, and the copy a shipped folder keeps
RECORDS = ("run.json", "train_args.json")
#: the settings that decide which held-out sequences and masks a run evaluates on
DRAW = ("seed", "heldout_docs", "max_seq_len", "max_predictions", "whole_word_masking")
TOP_K = 5


def trained_as(folder: Path) -> str | None:
    """Which ``ctxmodels train`` command wrote the model in ``folder`` ("roberta", "albert", "electra", "gpt"), read
    from its config; None for any other model (one downloaded, a generator alone)."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict):
        return None
    model_type, architectures = config.get("model_type"), config.get("architectures") or []
    if model_type == "roberta" and "RobertaForMaskedLM" in architectures:
        return "roberta"
    if model_type == "albert" and "AlbertForPreTraining" in architectures:
        return "albert"
    if model_type == "electra" and "ElectraForPreTraining" in architectures and (folder / "generator").is_dir():
        return "electra"
    if model_type == "gpt2" and "GPT2LMHeadModel" in architectures:
        return "gpt"
    return None


def run_settings(folder: Path, command: str) -> tuple[Any, str]:
    """(the settings of the run that trained the model in ``folder``, which file they come from): its
    :data:`RECORDS` when one is of this kind, else the defaults of ``ctxmodels train COMMAND``."""
    training = kinds.training_for(command)
    if training is None:
        raise ValueError(f"no `ctxmodels train {command}`")
    cls = getattr(kinds.named(training.module), training.settings)
    stored, source = {}, "the trainers' defaults"
    for name in RECORDS:
        try:
            record = json.loads((folder / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and record.get("kind") == command and isinstance(record.get("settings"), dict):
            stored, source = record["settings"], name
            break
    names = {f.name for f in fields(cls)}
    settings = cls(**{k: v for k, v in stored.items() if k in names})
    if settings.max_predictions is None:  # as the run's check() resolved it
        from ..training.bert_data import MLM_PROBABILITY

        settings.max_predictions = math.ceil(MLM_PROBABILITY * settings.max_seq_len)
    return settings, source


# ----------------------------------------------------------------------------------------------------------
# the training task, rebuilt around the saved model and the held-out set


def _task(command: str, folder: Path, tokenizer: Any, held: Any, settings: Any) -> Any:
    """The training task of ``command`` holding the model saved in ``folder`` (read by the task's own
    ``load_weights``, as ``--resume`` reads it) and the held-out set of ``held`` (tokenised documents)."""
    import transformers

    from ..training.bert_data import PretrainingData, VocabInfo
    from ..training.lm_data import PackedData

    config = transformers.AutoConfig.from_pretrained(folder, local_files_only=True)
    vocab, name = VocabInfo.from_tokenizer(tokenizer), "held-out documents"
    if command == "albert":
        from ..training.albert_task import AlbertTask, pair_options

        data = PretrainingData(held, vocab, name=name, **pair_options(settings))
        task = AlbertTask(transformers.AlbertForPreTraining(config), tokenizer, None, data, settings, {})
    else:
        from ..training.lm_task import packed_options

        data = PackedData(held, vocab, name=name, **packed_options(settings, mlm=command != "gpt"))
        if command == "electra":
            from ..training.electra_task import GENERATOR, ElectraPair, ElectraTask

            generator = transformers.AutoConfig.from_pretrained(folder / GENERATOR, local_files_only=True)
            pair = ElectraPair(transformers.ElectraForMaskedLM(generator), transformers.ElectraForPreTraining(config),
                               settings.disc_weight)
            task = ElectraTask(pair, tokenizer, None, data, settings, {})
        elif command == "gpt":
            from ..training.gpt_task import GptTask

            task = GptTask(transformers.GPT2LMHeadModel(config), tokenizer, None, data, settings, {})
        else:
            from ..training.roberta_task import RobertaTask

            task = RobertaTask(transformers.RobertaForMaskedLM(config), tokenizer, None, data, settings, {})
    task.load_weights(folder)
    return task


def _vocabulary_head(command: str, lm: torch.nn.Module) -> tuple[torch.nn.Module, Callable]:
    """(the module whose output scores the vocabulary at the predicted positions, a function giving a batch's right
    pieces in the order of that output's rows): what the task's ``score`` runs and scores."""
    from ..training.bert_data import IGNORE_INDEX

    def chosen(labels: torch.Tensor) -> torch.Tensor:
        return labels[labels != IGNORE_INDEX]

    if command == "gpt":  # every position's guess of the next piece: the output's rows but the last
        return lm.lm_head, lambda batch: chosen(batch["labels"][:, 1:])
    if command == "albert":
        return lm.predictions, lambda batch: chosen(batch["mlm_labels"])
    if command == "electra":
        return lm.generator.generator_lm_head, lambda batch: chosen(batch["labels"])
    return lm.lm_head, lambda batch: chosen(batch["labels"])


@contextmanager
def _top_guesses(head: torch.nn.Module, gpt: bool) -> Iterator[list[torch.Tensor]]:
    """The ``TOP_K`` best pieces of every row ``head`` scores while the block runs (a GPT's: at every position but
    each sequence's last, whose next piece is not there), read from the forward pass the task's own evaluation
    runs."""
    found: list[torch.Tensor] = []

    def keep(module: torch.nn.Module, inputs: Any, output: torch.Tensor) -> None:
        guesses = output.topk(TOP_K, dim=-1).indices.cpu()  # beside the batches' labels
        found.append(guesses[:, :-1] if gpt else guesses)

    handle = head.register_forward_hook(keep)
    try:
        yield found
    finally:
        handle.remove()


def _top_k_share(found: list[torch.Tensor], batches: list[dict], right: Callable) -> float:
    """The share of the right pieces among the guesses ``found`` (a GPT's at every position: those with a next
    piece are kept, in the order ``right`` gives them)."""
    from ..training.bert_data import IGNORE_INDEX

    hits = total = 0
    for guesses, batch in zip(found, batches, strict=True):
        rows = guesses[batch["labels"][:, 1:] != IGNORE_INDEX] if guesses.dim() == 3 else guesses
        answers = right(batch)
        hits += int((rows == answers[:, None]).any(-1).sum())
        total += len(answers)
    return hits / max(total, 1)


def disc_precision(s: Any) -> float:
    """The share of the discriminator's "replaced" calls that are right, from the summed scores of a held-out set
    (:class:`~ctxmodels.training.electra_task.PairScores`): its wrong calls are the real pieces it got wrong less
    the replaced ones it missed; 0 when it called nothing replaced."""
    false_calls = s.real - s.disc_right - (s.replaced - s.spotted)
    return float(s.spotted / max(s.spotted + false_calls, 1))


def task_figures(command: str, task: Any) -> dict[str, float]:
    """The training task's own held-out figures of its fixed set, with the top-5 of the same pass (and ELECTRA's
    precision)."""
    head, right = _vocabulary_head(command, task.lm)
    with _top_guesses(head, gpt=command == "gpt") as found:
        if command == "electra":
            sums = task.heldout_scores()
            figures = task.figures(sums)
        else:
            figures = task.evaluate(task.model)
    top_k = _top_k_share(found, task.eval_batches(), right)
    if command == "electra":
        figures.update(gen_top5=top_k, disc_precision=disc_precision(sums))
    else:
        figures["top5"] = top_k
    return figures


# ----------------------------------------------------------------------------------------------------------
# ctxmodels quality: the measure the registry names (Release.measure)


def heldout(m: LoadedModel, corpus: str | Path | None = None, bert_sequences: int = BERT_SEQUENCES, log=print,
            **_: Any) -> dict[str, Any]:
    """A successor's held-out figures (module docstring) on ``bert_sequences`` sequences of the corpus's held-out
    documents; nothing without a corpus or for a model no ``ctxmodels train`` command wrote."""
    if corpus is None or m.path is None:
        return {}
    folder = Path(m.path) if Path(m.path).is_dir() else Path(m.path).parent
    command = trained_as(folder)
    if command is None:
        log(f"{m.name}: no held-out figures (not a model `ctxmodels train roberta|albert|electra|gpt` wrote)")
        return {}
    from ..tokenization import WordPieceTokenizer
    from ..training.bert_corpus import batch_encoder, tokenize_documents
    from ..training.corpus import heldout_documents

    settings, source = run_settings(folder, command)
    settings.eval_sequences = bert_sequences
    if settings.corpus_sha256 and settings.corpus_sha256 != file_sha256(corpus):
        log(f"{m.name}: warning: {Path(corpus).name} is not the text its run trained on ({source} names "
            f"{Path(settings.corpus).name or 'another'}); its held-out documents are drawn from {Path(corpus).name}")
    docs, held = heldout_documents(corpus, settings.heldout_docs, settings.seed)
    if not held:
        raise CheckpointError(f"{corpus}: no held-out documents to measure {m.name} on")
    tokenizer = WordPieceTokenizer.load(folder)
    task = _task(command, folder, tokenizer, tokenize_documents([docs[i] for i in held], batch_encoder(tokenizer)),
                 settings)
    task.lm.to(m.device)
    log(f"{m.name}: held-out {command} figures on up to {bert_sequences} sequences (settings: {source})")
    figures = {k: float(v) for k, v in task_figures(command, task).items()}
    drawn = {k: getattr(settings, k) for k in DRAW} | {"heldout_docs": len(held), "source": source}
    if command != "gpt" and settings.mask_split != MASK_SPLIT_TEXT:  # (a default run's report stays as it was)
        drawn["mask_split"] = settings.mask_split
    return {"heldout": figures, "heldout_sequences": sum(len(b["input_ids"]) for b in task.eval_batches()),
            "trained_as": command, "heldout_settings": drawn}


# ----------------------------------------------------------------------------------------------------------
# the model card (Release.card)

_TITLES = {"roberta": "masked language model (RoBERTa)", "albert": "masked language model and sentence order "
           "(ALBERT)", "electra": "generator and discriminator (ELECTRA)", "gpt": "next-word prediction (GPT)"}


def _masked(s: dict[str, Any]) -> str:
    """How the held-out pieces were masked: as the run trained, 80/10/10 unless its ``--mask-split`` said else."""
    mask, random, keep = parse_mask_split(str(s.get("mask_split", MASK_SPLIT_TEXT)))
    return f"masked as in training (15% of the pieces; {mask}% [MASK], {random}% random, {keep}% kept)"


_ROWS = {
    "roberta": (("top1", "masked-word top-1"), ("top5", "masked-word top-5"),
                ("ppl", "perplexity over the masked pieces")),
    "albert": (("top1", "masked-word top-1"), ("top5", "masked-word top-5"),
               ("ppl", "perplexity over the masked pieces"), ("sop_accuracy", "sentence order: accuracy")),
    "electra": (("gen_top1", "generator: masked-word top-1"), ("gen_top5", "generator: masked-word top-5"),
                ("gen_ppl", "generator: perplexity over the masked pieces"),
                ("disc_accuracy", "discriminator: accuracy on every piece"),
                ("disc_recall", "discriminator: replaced pieces caught (recall)"),
                ("disc_precision", "discriminator: its 'replaced' calls that are right (precision)"),
                ("replaced", "pieces the generator replaced")),
    "gpt": (("top1", "next-word top-1"), ("top5", "next-word top-5"), ("ppl", "perplexity over the next pieces")),
}


def _how(command: str, n: int, s: dict[str, Any]) -> str:
    seqs = f"{n:,} held-out sequences of up to {s['max_seq_len']} pieces"
    if command == "albert":
        return (f"{seqs}, each two consecutive segments of a held-out document ([CLS] A [SEP] B [SEP]), half of them "
                f"swapped, {_masked(s)}; the pairs and masks drawn with seed {s['seed']}.")
    if command == "gpt":
        return (f"{seqs} (whole sentences packed across the held-out documents); every next piece guessed from the "
                "pieces before it.")
    what = (f"{seqs} (whole sentences packed across the held-out documents), {_masked(s)}, the masks drawn with seed "
            f"{s['seed']}")
    if command == "electra":
        return (what + "; the generator's samples at the masked pieces (drawn with a fixed seed) replace them, and "
                "the discriminator says of every piece whether it was replaced.")
    return what + "."


def _same_run(entry: dict[str, Any], training: dict[str, Any] | None, command: str) -> list[str]:
    """How these figures stand to the training card's *Held-out metrics* (the run's last evaluation)."""
    run = (training or {}).get("settings", {})
    metrics, s = (training or {}).get("metrics", {}), entry.get("heldout_settings", {})
    n, n_run = entry.get("heldout_sequences", 0), run.get("eval_sequences")
    if not metrics or not isinstance(n_run, int) or not 0 < n_run <= n:
        return []
    if any(run.get(k) != s.get(k) for k in DRAW):
        return [f"The training card's *Held-out metrics* are the run's last evaluation on {n_run:,} sequences drawn "
                "with other settings: the two differ by the sample.", ""]
    step = training.get("step")
    return ["The training card's *Held-out metrics* are the run's last evaluation"
            + (f" (step {step:,})" if isinstance(step, int) else "")
            + f" on {n_run:,} sequences: the first {n_run:,} of these" + (", with the same masks" * (command != "gpt"))
            + ", scored by the same code.", ""]


def heldout_part(entry: dict[str, Any], held: dict[str, Any], fp32: dict[str, Any] | None, dtype: str,
                 target: dict[str, float], training: dict[str, Any] | None,
                 corpus: dict[str, Any] | None) -> list[str]:
    """A successor's held-out figures as a table under its card's *Measured quality*."""
    command = entry.get("trained_as")
    if command not in _ROWS:
        return []
    parts = [f"### Held-out novels: {_TITLES[command]}", "",
             _how(command, entry.get("heldout_sequences", 0), entry.get("heldout_settings", {})), "",
             *_columns(dtype, fp32)]
    for key, label in _ROWS[command]:
        if key not in held:
            continue
        fmt = (lambda v: f"{v:.1f}") if key.endswith("ppl") else _pct
        # every piece called original: right on all but the replaced ones, so no "replaced" call to be right
        if key == "disc_precision" and abs(held.get("disc_accuracy", 0) + held.get("replaced", 0) - 1) < 1e-9:
            fmt = (lambda v: "– (no piece called replaced)")  # noqa: E731 - precision of no calls is undefined
        parts.append(f"| {label} | {fmt(held[key])} |" + (f" {fmt(fp32[key])} |" if fp32 and key in fp32
                                                            else " – |" if fp32 else ""))
    return parts + [""] + _same_run(entry, training, command)
