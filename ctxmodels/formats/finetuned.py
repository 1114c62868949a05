"""Fine-tuned models on disk: a BERT with a task head in Hugging Face's layout, an encoder read through transformers
(RoBERTa, DistilBERT, ...) or a GPT with transformers' own head, an ELMo with its scalar mix and task layer beside
it, and ``finetune.json`` saying what was fine-tuned from what.

A fine-tuned BERT folder is a transformers folder: ``config.json`` (``architectures`` names the head class, with
``num_labels``, ``id2label``, ``label2id``), ``model.safetensors`` (``bert.*`` plus ``classifier.*`` or
``qa_outputs.*``) and the tokenizer files, so ``transformers.AutoModelForTokenClassification.from_pretrained``
(or the sequence-classification class) reads it. A fine-tuned transformers encoder is what transformers'
``save_pretrained`` writes for its head class (``RobertaForTokenClassification``, ...) plus the tokenizer files
(:func:`transformers_task_head` makes one, :func:`save_transformers_task_model` saves it); a fine-tuned GPT's
(``GPT2ForTokenClassification``, ...) likewise, its tokenizer files saying it takes no token types. A fine-tuned
ELMo folder is our ELMo checkpoint (so the biLM loads as any ELMo) plus ``task_head.safetensors`` (``scalar_mix.*``,
``classifier.*``) and ``task_head.json``.

:func:`ctxmodels.load` reads any of them as its backbone (a plain BERT, transformers encoder, GPT or ELMo);
:func:`load_task_model` gives the whole task model, with :meth:`TaskModel.predict` (``pair=`` for a sentence-pair
task), or a :class:`SpanModel` with :meth:`SpanModel.answer` for extractive question answering.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..bert import BertConfig
from ..char_ids import batch_to_char_ids
from ..checkpoint import CheckpointError, load_tensors, read_json, save_tensors, write_json
from ..elmo import ElmoLanguageModel
from ..encoding import Encoded, PieceTokenizer
from ..heads import HEAD_CLASSES, ElmoForTask, bert_head, label_fields, labels_from_config
from ..model_files import is_file
from ..tasks.squad import decode_answer
from ..tokenization import WordPieceTokenizer
from .allennlp import load_elmo, save_elmo
from .transformers_models import EncoderTokenizer, _quiet, _short, fit_length, load_tokenizer

FINETUNE_FILE = "finetune.json"
HEAD_FILE = "task_head.safetensors"
HEAD_CONFIG = "task_head.json"


def read_finetune_info(directory: str | Path) -> dict[str, Any] | None:
    """The parsed ``finetune.json`` of a fine-tuned model's folder; None for any other model (or a damaged file:
    the backbone still loads)."""
    path = Path(directory) / FINETUNE_FILE
    if not is_file(path):
        return None
    try:
        info = read_json(path)
    except CheckpointError:
        return None
    return info if isinstance(info, dict) else None


def encode_words(tokenizer: PieceTokenizer, words: Sequence[str], max_length: int) -> tuple[Encoded, int]:
    """[CLS] words [SEP] (or the model's own template) cut at a word boundary to at most ``max_length`` pieces;
    (encoding, words kept)."""
    enc, truncated = tokenizer.encode_words(list(words), max_length)
    kept = max((w for w in enc.word_ids if w is not None), default=-1) + 1 if truncated else len(words)
    return enc, kept


# ----------------------------------------------------------------------------------------------------------
# saving


def save_bert_task_model(model: torch.nn.Module, tokenizer: WordPieceTokenizer, directory: str | Path,
                         labels: Sequence[str]) -> None:
    """config.json (the head's class and labels), model.safetensors and the tokenizer files, as transformers
    writes them for the same class."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    config = model.config.to_dict()
    config["architectures"] = [model.architecture]
    config.pop("tie_word_embeddings", None)  # no decoder to tie: the head is not a language model
    config.update(label_fields(labels))
    write_json(directory / "config.json", config)
    save_tensors(directory / "model.safetensors", model.state_dict(), metadata={"format": "pt"})
    tokenizer.save(directory)
    limit = model.config.max_position_embeddings
    tok_config = read_json(directory / "tokenizer_config.json")
    tok_config["model_max_length"] = min(tokenizer.max_length or limit, limit)
    write_json(directory / "tokenizer_config.json", tok_config)


def save_elmo_task_model(model: ElmoForTask, base: ElmoLanguageModel, directory: str | Path,
                         labels: Sequence[str]) -> None:
    """The biLM as our ELMo checkpoint (with ``base``'s LM softmax and vocabulary, unchanged), the scalar mix and
    task layer in task_head.safetensors, their settings in task_head.json. ``save_elmo`` writes a README.md,
    which the caller replaces with its model card."""
    directory = Path(directory)
    lm = ElmoLanguageModel(base.config, bilm=model.bilm)
    lm.softmax, lm.vocab = base.softmax, base.vocab
    save_elmo(lm, directory)
    save_tensors(directory / HEAD_FILE, model.head_state_dict(), metadata={"format": "pt"})
    write_json(directory / HEAD_CONFIG, {"labels": list(labels), "pooling": model.pooling,
                                         "dropout": model.dropout.p, "freeze_bilm": model.freeze_bilm})


#: what a saved transformers classifier's class name ends with (``architectures`` in its config.json)
TRANSFORMERS_HEADS = ("ForTokenClassification", "ForSequenceClassification", "ForQuestionAnswering")
#: the base kinds (finetune.json's ``base_kind``) whose fine-tuned folders transformers' own head classes read
TRANSFORMERS_BASES = ("transformers", "gpt")


def transformers_task_head(folder: str | Path, labels: Sequence[str], sentence: bool, qa: bool = False
                           ) -> torch.nn.Module:
    """The transformers encoder in ``folder`` with a new head of transformers' own class for its model type
    (``RobertaForSequenceClassification`` for a sentence task, ``RobertaForQuestionAnswering`` with ``qa``,
    ``RobertaForTokenClassification`` otherwise), labels in its config, float32, eager attention; read from local
    files only."""
    import transformers

    folder, labels = Path(folder), [str(x) for x in labels]
    auto = transformers.AutoModelForSequenceClassification if sentence else transformers.AutoModelForTokenClassification
    classes = {} if qa else dict(num_labels=len(labels), id2label=dict(enumerate(labels)),
                                 label2id={lab: i for i, lab in enumerate(labels)})
    with _quiet():
        try:
            model, info = (transformers.AutoModelForQuestionAnswering if qa else auto).from_pretrained(
                folder, local_files_only=True, attn_implementation="eager", output_loading_info=True, **classes)
        except MemoryError:
            raise
        except Exception as e:  # noqa: BLE001 - transformers, safetensors and torch each have their own errors
            raise CheckpointError(f"{folder}: transformers cannot put a classification head on this model "
                                  f"({type(e).__name__}: {_short(e)})") from None
    prefix = model.base_model_prefix + "."
    # A pooler may be new (saved without one, as masked-LM checkpoints are); any other encoder weight must be there.
    lost = [k for k in info.get("missing_keys", []) if k.startswith(prefix) and ".pooler." not in f".{k}"]
    if lost:
        raise CheckpointError(f"{folder}: the weights lack {len(lost)} tensor(s) of the encoder "
                              f"({', '.join(sorted(lost)[:3])})")
    return model.float()


def save_transformers_task_model(model: torch.nn.Module, tokenizer: EncoderTokenizer, directory: str | Path
                                 ) -> None:
    """transformers' own files for the head class (config.json with the labels, model.safetensors) and the
    tokenizer's, so that ``AutoModelFor…Classification.from_pretrained(directory)`` reads it."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with _quiet():
        model.save_pretrained(directory, safe_serialization=True)
        tokenizer.fast.save_pretrained(directory)


# ----------------------------------------------------------------------------------------------------------
# loading


def load_bert_task_model(directory: str | Path) -> tuple[torch.nn.Module, WordPieceTokenizer, list[str]]:
    """(head model in eval mode, tokenizer, labels) of a fine-tuned BERT folder."""
    directory = Path(directory)
    d = read_json(directory / "config.json")
    arch = (d.get("architectures") or [""])[0]
    if arch not in HEAD_CLASSES:
        raise CheckpointError(f"{directory}: config.json names no task head ({arch or 'no architectures'}); "
                              f"expected one of {', '.join(HEAD_CLASSES)}")
    try:
        labels = labels_from_config(d) if arch != "BertForQuestionAnswering" else ["start", "end"]
        model = bert_head(arch, BertConfig.from_dict(d), len(labels))
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{directory / 'config.json'}: {e}") from e
    _load_strict(model, directory / "model.safetensors")
    tokenizer = WordPieceTokenizer.load(directory)
    if tokenizer.largest_id >= model.config.vocab_size:
        raise CheckpointError(f"{directory}: the tokenizer has ids beyond config.json's vocab_size")
    return model.eval(), tokenizer, labels


def load_transformers_task_model(directory: str | Path) -> tuple[torch.nn.Module, EncoderTokenizer, list[str]]:
    """(head model in eval mode, tokenizer, labels) of a fine-tuned transformers encoder's folder."""
    import transformers

    directory = Path(directory)
    arch = (read_json(directory / "config.json").get("architectures") or [""])[0]
    cls = getattr(transformers, arch, None) if isinstance(arch, str) and arch.endswith(TRANSFORMERS_HEADS) else None
    if cls is None:
        raise CheckpointError(f"{directory}: config.json names no transformers classification head "
                              f"({arch or 'no architectures'})")
    with _quiet():
        try:
            model, info = cls.from_pretrained(directory, local_files_only=True, attn_implementation="eager",
                                              output_loading_info=True)
        except MemoryError:
            raise
        except Exception as e:  # noqa: BLE001 - as in transformers_task_head
            raise CheckpointError(f"{directory}: the weights do not load as {arch} ({type(e).__name__}: "
                                  f"{_short(e)})") from None
    if info.get("missing_keys") or info.get("mismatched_keys"):
        raise CheckpointError(f"{directory}: the weights do not fill {arch} (missing or of the wrong shape: "
                              f"{', '.join(list(info.get('missing_keys', []))[:3] or ['...'])})")
    id2label = model.config.id2label  # transformers made the keys ints
    if sorted(id2label) != list(range(len(id2label))):
        raise CheckpointError(f"{directory / 'config.json'}: id2label is not numbered 0..{len(id2label) - 1}")
    labels = [str(id2label[i]) for i in range(len(id2label))]
    tokenizer = load_tokenizer(directory)
    fit_length(tokenizer, model.config)
    return model.float().eval(), tokenizer, labels


def load_elmo_task_model(directory: str | Path) -> tuple[ElmoForTask, ElmoLanguageModel, list[str]]:
    """(task model in eval mode, the ELMo it wraps, labels) of a fine-tuned ELMo folder."""
    directory = Path(directory)
    head = read_json(directory / HEAD_CONFIG)
    labels = head.get("labels")
    if not isinstance(labels, list) or not labels or head.get("pooling") not in ("token", "sentence"):
        raise CheckpointError(f"{directory / HEAD_CONFIG}: needs labels (a list) and pooling (token or sentence)")
    lm = load_elmo(directory)
    model = ElmoForTask(lm.bilm, len(labels), pooling=head["pooling"], freeze_bilm=bool(head.get("freeze_bilm")),
                        dropout=float(head.get("dropout", 0.0)))
    state = load_tensors(directory / HEAD_FILE)
    expected = model.head_state_dict()
    if {k: tuple(v.shape) for k, v in state.items()} != {k: tuple(v.shape) for k, v in expected.items()}:
        raise CheckpointError(f"{directory / HEAD_FILE}: does not fit {HEAD_CONFIG} and the ELMo "
                              f"(expected {sorted(expected)})")
    model.load_state_dict(state, strict=False)
    return model.eval(), lm, [str(x) for x in labels]


def _load_strict(model: torch.nn.Module, path: Path) -> None:
    state = load_tensors(path)
    own = model.state_dict()
    wrong = sorted(set(own) ^ set(state)) + [k for k in own if k in state and own[k].shape != state[k].shape]
    if wrong:
        raise CheckpointError(f"{path}: does not fit config.json (keys or shapes: {', '.join(wrong[:5])})")
    model.load_state_dict({k: v.to(own[k].dtype) for k, v in state.items()})


class TaskModel:
    """A fine-tuned model ready to label text. ``kind``: "token" (a label per word), "word" (a label for one
    word, ``target``) or "sentence" (a label for the whole text)."""

    def __init__(self, model: torch.nn.Module, labels: list[str], kind: str,
                 tokenizer: PieceTokenizer | None, max_length: int = 512):
        self.model, self.labels, self.kind, self.tokenizer = model, labels, kind, tokenizer
        self.max_length = max_length

    @torch.inference_mode()
    def probabilities(self, words: Sequence[str], target: int | None = None,
                      pair: Sequence[str] | None = None) -> np.ndarray:
        """Class probabilities: [n_words, labels] for a token task (NaN rows for words cut off by the length
        limit), [1, labels] for a sentence task, the ``target`` word of a word task, or the texts ``words`` and
        ``pair`` of a sentence-pair task."""
        words = [str(w) for w in words]
        if not words:
            raise ValueError("no words to label: give at least one word")
        if self.kind == "word" and (target is None or not 0 <= target < len(words)):
            raise ValueError(f"a word task labels one word: give target, an index in 0..{len(words) - 1}")
        if (self.kind == "pair") != (pair is not None and len(pair) > 0):
            raise ValueError("a sentence-pair task labels two texts: give pair, the second one's words" if pair is None
                             else f"a {self.kind} task labels one text: leave pair out")
        if self.tokenizer is not None:
            if self.kind == "pair":
                enc, _ = self.tokenizer.encode_word_pair(words, [str(w) for w in pair], self.max_length)
            else:
                enc, _ = encode_words(self.tokenizer, words, self.max_length)
            batch = self.tokenizer.collate([enc])  # just the inputs the model takes, by name
            logits = self.model(**batch).logits[0].float()
            if self.kind in ("sentence", "pair"):
                return logits.softmax(-1)[None].numpy()
            probs = np.full((len(words), len(self.labels)), np.nan, np.float32)
            seen = set()
            for t, w in enumerate(enc.word_ids):
                if w is not None and w not in seen:  # a word's first piece, as in training
                    seen.add(w)
                    probs[w] = logits[t].softmax(-1).numpy()
        else:
            char_ids, mask = batch_to_char_ids([words], add_boundaries=True)
            logits = self.model(char_ids, mask).logits[0]
            if self.kind == "sentence":
                return logits.softmax(-1)[None].numpy()
            probs = logits.softmax(-1).numpy()
        return probs[[target]] if self.kind == "word" else probs

    def predict(self, words: Sequence[str], target: int | None = None,
                pair: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """(label, probability) of the most likely class: one per word (token task), else one in all."""
        out = []
        for row in self.probabilities(words, target, pair):
            if np.isnan(row).any():
                out.append(("", float("nan")))
            else:
                out.append((self.labels[int(row.argmax())], float(row.max())))
        return out


class SpanModel:
    """A fine-tuned extractive question-answering model: :meth:`answer` finds the answer to a question in a text,
    reading a long text in windows as the model was trained."""

    kind = "qa"

    def __init__(self, model: torch.nn.Module, tokenizer: PieceTokenizer, max_length: int,
                 max_answer_length: int = 30, doc_stride: int | None = None):
        self.model, self.tokenizer, self.max_length = model, tokenizer, max_length
        self.max_answer_length, self.doc_stride = max_answer_length, doc_stride

    @torch.inference_mode()
    def answer(self, question: str, context: str) -> tuple[str, float]:
        """(the answer: a span of ``context``, its start + end score)."""
        if not question.strip() or not context.strip():
            raise ValueError("give a question and a text to find its answer in")
        windows = self.tokenizer.encode_windows(question, context, self.max_length, self.doc_stride)
        out = self.model(**self.tokenizer.collate(windows))
        starts, ends = out.start_logits.float().numpy(), out.end_logits.float().numpy()
        return decode_answer(context, windows, list(starts), list(ends), self.max_answer_length)


def _span_model(directory: Path, info: dict[str, Any]) -> SpanModel:
    settings = info.get("settings") if isinstance(info.get("settings"), dict) else {}
    if info.get("base_kind") in TRANSFORMERS_BASES:
        model, tokenizer, _ = load_transformers_task_model(directory)
        limit = tokenizer.max_length or 512
    else:
        model, tokenizer, _ = load_bert_task_model(directory)
        limit = model.config.max_position_embeddings
    given = settings.get("max_length")
    stride = settings.get("doc_stride")
    return SpanModel(model, tokenizer, min(given, limit) if isinstance(given, int) else limit,
                     int(settings.get("max_answer_length") or 30), stride if isinstance(stride, int) else None)


def load_task_model(directory: str | Path) -> TaskModel | SpanModel:
    """The task model of a folder written by ``ctxmodels finetune`` (BERT, a transformers encoder, a GPT or ELMo): a
    :class:`TaskModel` that labels text, or a :class:`SpanModel` that answers questions."""
    directory = Path(directory)
    info = read_finetune_info(directory)
    if info is None:
        raise CheckpointError(f"{directory}: no {FINETUNE_FILE}; not a model written by `ctxmodels finetune`")
    kind = info.get("task_kind")
    if kind == "qa":
        return _span_model(directory, info)
    if kind not in ("token", "word", "sentence", "pair"):
        raise CheckpointError(f"{directory / FINETUNE_FILE}: task_kind {kind!r} is not token, word, sentence, "
                              "pair or qa")
    if is_file(directory / HEAD_FILE):
        model, _, labels = load_elmo_task_model(directory)
        return TaskModel(model, labels, kind, None)
    if info.get("base_kind") in TRANSFORMERS_BASES:
        model, tokenizer, labels = load_transformers_task_model(directory)
        return TaskModel(model, labels, kind, tokenizer, max_length=tokenizer.max_length or 512)
    model, tokenizer, labels = load_bert_task_model(directory)
    return TaskModel(model, labels, kind, tokenizer, max_length=model.config.max_position_embeddings)
