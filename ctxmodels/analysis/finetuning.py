"""What fine-tuning changes: a model before and after, compared layer by layer on the same sentences.

The measurements, each a plain function so that a class (or a test) can check it on its own:

* :func:`linear_cka` — linear centred kernel alignment (Kornblith et al. 2019, "Similarity of neural network
  representations revisited", eq. 3 with the linear kernel): for column-centred ``X [n, d1]`` and ``Y [n, d2]``,
  ``CKA = ||Yᵀ X||²_F / (||Xᵀ X||_F ||Yᵀ Y||_F)``, the normalised HSIC of the two linear kernels. It is 1 for
  identical representations, and unchanged by an orthogonal transform or an isotropic scaling of either side (but
  not by an arbitrary invertible linear map: it does not call two spaces the same because a regression could map
  one onto the other). The rows are the same words, run through the two models.
* the mean cosine between a word's vector before and after, per layer: what CKA's invariances hide (a rotated
  layer has CKA 1 and a cosine well below 1).
* class separation per layer, before and after: leave-one-out 1-nearest-neighbour accuracy and the silhouette
  of the task's labels (:mod:`ctxmodels.analysis.senses`, the measurements the Word senses page uses for
  senses), on the labelled words (token and word tasks) or on each sentence's mean word vector (sentence tasks).
* which attention heads changed: per layer and head, the Jensen–Shannon divergence (base 2, so 0 to 1) between
  the attention row of a token before and the same row after, averaged over every token of every sentence
  (:func:`ctxmodels.analysis.attention.compute_attention` gives the maps). Encoders only (BERT and the others),
  not ELMo.

:func:`compare` computes all of it for two models and a set of sentences with labels; :func:`compare_on_task`
takes them from a task's dev or test split (:mod:`ctxmodels.tasks`). Both need the same architecture on both
sides: the same layer names and width (a BERT and an ELMo cannot be compared layer by layer). Results are kept in
a small per-process cache, and the word vectors go through the project's embedding cache, so asking again for
another layer's projection costs nothing.

The expected picture (Merchant et al. 2020, "What happens to BERT embeddings during fine-tuning?"; Kovaleva et
al. 2019 for attention): the lower layers barely move (CKA near 1) and the top layers change most.
"""

from __future__ import annotations

import hashlib
import threading
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..cosine import unit_rows
from ..kinds import ATTENTION, supports
from ..thread_warnings import caught_warnings
from . import attention as att
from .senses import knn_sense_accuracy, majority_share, sense_silhouette
from .vectors import embed_sentences

if TYPE_CHECKING:
    from ..loading import LoadedModel

TASK_KINDS = ("sentence", "token", "word")
MAX_SENTENCES = 200  # sentences a comparison runs on by default (the page's cap)
MAX_CKA_WORDS = 5000  # words whose vectors CKA and the cosine use at most (a seeded sample beyond that)
MAX_POINTS = 1000  # labelled points for the class separation and the projections (1-NN is n x n)
MAX_ATTENTION_SENTENCES = 64  # sentences the head comparison runs on (one forward pass each, per model)
ATTENTION_WORDS = 64  # words of a sentence the head comparison reads at most
SPLITS = ("dev", "test", "train")


# ----------------------------------------------------------------------------------------------------------
# the measurements


def linear_cka(X: np.ndarray, Y: np.ndarray) -> float:
    """Linear CKA of two representations of the same ``n`` items (rows), in float64; see the module docstring.

    NaN when either side is constant (no variance to compare). ValueError for arrays that are not 2-D, differ in
    their number of rows, have fewer than 2 rows or hold NaN/inf."""
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    if X.ndim != 2 or Y.ndim != 2:
        raise ValueError(f"linear_cka needs two [n, d] arrays, got shapes {X.shape} and {Y.shape}")
    if len(X) != len(Y):
        raise ValueError(f"linear_cka compares the same items: {len(X)} rows against {len(Y)}")
    if len(X) < 2:
        raise ValueError("linear_cka needs at least 2 items")
    if not (np.isfinite(X).all() and np.isfinite(Y).all()):
        raise ValueError("linear_cka got NaN or infinite values; leave those rows out first")
    X = X - X.mean(axis=0)
    Y = Y - Y.mean(axis=0)
    sx, sy = np.linalg.norm(X), np.linalg.norm(Y)
    if sx == 0 or sy == 0:
        return float("nan")
    X, Y = X / sx, Y / sy  # CKA ignores the scale; this keeps the fourth powers below far from overflow
    n, d = X.shape[0], max(X.shape[1], Y.shape[1])
    if n < d:  # the same number through the n x n Gram matrices, cheaper for few, wide rows
        K, L = X @ X.T, Y @ Y.T
        return float(np.sum(K * L) / (np.linalg.norm(K) * np.linalg.norm(L)))
    return float(np.linalg.norm(Y.T @ X) ** 2 / (np.linalg.norm(X.T @ X) * np.linalg.norm(Y.T @ Y)))


def mean_cosine(X: np.ndarray, Y: np.ndarray) -> float:
    """Mean cosine between each row of ``X`` and the same row of ``Y`` (a word before and after)."""
    X, Y = np.asarray(X, dtype=np.float64), np.asarray(Y, dtype=np.float64)
    if X.shape != Y.shape or X.ndim != 2 or len(X) == 0:
        raise ValueError(f"mean_cosine needs two equally shaped, non-empty [n, d] arrays, got {X.shape}, {Y.shape}")
    return float(np.mean(np.sum(unit_rows(X) * unit_rows(Y), axis=1)))


def js_divergence(P: np.ndarray, Q: np.ndarray, axis: int = -1) -> np.ndarray:
    """Jensen–Shannon divergence (base 2: between 0 and 1) between distributions along ``axis``."""
    P = np.asarray(P, dtype=np.float64)
    Q = np.asarray(Q, dtype=np.float64)
    M = (P + Q) / 2

    def kl(A: np.ndarray) -> np.ndarray:
        ratio = np.divide(A, M, out=np.ones_like(A), where=A > 0)  # 0 log 0 = 0
        return np.sum(A * np.log2(ratio), axis=axis)

    return np.clip((kl(P) + kl(Q)) / 2, 0.0, 1.0)


def check_comparable(before: LoadedModel, after: LoadedModel) -> None:
    """ValueError, saying what to do, unless the two models can be compared layer by layer (same kind, layer
    names and width; for BERT and the other encoders the same model type and word pieces)."""
    b, a = _name(before), _name(after)
    if before.kind != after.kind:
        raise ValueError(f"{b} is a {before.kind} model and {a} a {after.kind} model: a comparison layer by layer "
                         "needs the same architecture on both sides (a model and its own fine-tuned version)")
    if list(before.layer_names) != list(after.layer_names):
        raise ValueError(f"{b} and {a} have different layers ({len(before.layer_names)} vs "
                         f"{len(after.layer_names)}: {before.layer_names} vs {after.layer_names}); compare a model "
                         "with its own fine-tuned version")
    if before.dim != after.dim:
        raise ValueError(f"{b} has {before.dim}-dimensional layers and {a} {after.dim}-dimensional ones; compare a "
                         "model with its own fine-tuned version")
    types = [m.model_type for m in (before, after)]
    if types[0] != types[1]:
        raise ValueError(f"{b} is a {types[0]} model and {a} a {types[1]} model: a comparison layer by layer needs "
                         "the same architecture on both sides (a model and its own fine-tuned version)")
    if supports(before, ATTENTION):  # the word-piece encoders
        vb, va = _vocab(before), _vocab(after)
        if vb is not None and va is not None and vb != va:
            raise ValueError(f"{b} and {a} split words into different word pieces (different vocabularies): "
                             "compare a model with its own fine-tuned version")
        heads = [m.config.get("num_attention_heads") for m in (before, after)]
        if heads[0] != heads[1]:
            raise ValueError(f"{b} has {heads[0]} attention heads a layer and {a} {heads[1]}")


def _vocab(model: LoadedModel) -> int | None:
    tok = model.tokenizer
    size = getattr(tok, "vocab_size", None)
    return None if size is None else int(size)


def _name(model: Any) -> str:
    return str(getattr(model, "name", type(model).__name__))


def head_changes(before: LoadedModel, after: LoadedModel, sentences: Sequence[Sequence[str]],
                 max_sentences: int = MAX_ATTENTION_SENTENCES) -> np.ndarray:
    """[layers, heads]: the mean Jensen–Shannon divergence between a token's attention row before and after,
    over every word piece of the first ``max_sentences`` sentences (each cut to :data:`ATTENTION_WORDS` words).
    Encoders only (not ELMo); ValueError otherwise."""
    check_comparable(before, after)
    if not (supports(before, ATTENTION) and supports(after, ATTENTION)):
        raise ValueError(f"{_name(after)} has no attention maps (kind {after.kind!r}): the head comparison needs "
                         "BERT")
    total = None
    rows = 0
    for words in [list(s)[:ATTENTION_WORDS] for s in sentences if len(s)][:max_sentences]:
        with caught_warnings():  # a tokenizer note per sentence would drown the result; the cut is documented
            mb = att.compute_attention(before, None, words)
            ma = att.compute_attention(after, None, words)
        if mb.tokens != ma.tokens:
            raise ValueError(f"{_name(before)} and {_name(after)} split {' '.join(words)[:60]!r} into different "
                             "word pieces: compare a model with its own fine-tuned version")
        d = js_divergence(mb.attentions, ma.attentions).sum(axis=2)  # [L, H]: summed over the rows
        total = d if total is None else total + d
        rows += mb.n_tokens
    if total is None:
        raise ValueError("no sentence to compare the attention on")
    return total / rows


def rank_head_changes(changes: np.ndarray, top: int | None = None) -> pd.DataFrame:
    """The heads by how much they changed, most first: layer and head numbered from 1 (as the Attention page)."""
    L, H = changes.shape
    table = pd.DataFrame({"layer": np.repeat(np.arange(1, L + 1), H), "head": np.tile(np.arange(1, H + 1), L),
                          "js_divergence": changes.ravel()})
    table = table.sort_values("js_divergence", ascending=False, kind="stable").reset_index(drop=True)
    return table if top is None else table.head(top)


# ----------------------------------------------------------------------------------------------------------
# the comparison


@dataclass
class FinetuneComparison:
    """Everything :func:`compare` measured.

    layers: one row per layer: ``layer`` (index), ``layer_name``, ``cka``, ``cosine`` (before vs after, over
        ``n_words`` words), ``knn_before``/``knn_after`` (leave-one-out 1-NN accuracy of the labels),
        ``silhouette_before``/``silhouette_after`` (cosine silhouette of the labels; NaN when undefined).
    points_before / points_after: float32 ``[n_points, n_layers, dim]``: the labelled points (words, or sentence
        means) whose separation was measured, for projections.
    point_labels: their labels; point_text: the sentence of each (the word in ``point_spans``, character span in
        the sentence text, None for a sentence point).
    heads: ``[layers, heads]`` mean Jensen–Shannon divergence of the attention rows, or None (not BERT, or not
        asked for).
    majority: share of the most frequent label among the points (what 1-NN accuracy is to be compared with).
    """

    before: str
    after: str
    kind: str
    layer_names: list[str]
    layers: pd.DataFrame
    points_before: np.ndarray
    points_after: np.ndarray
    point_labels: list[str]
    point_text: list[str]
    point_spans: list[tuple[int, int] | None]
    heads: np.ndarray | None
    majority: float
    n_sentences: int
    n_words: int
    notes: list[str] = field(default_factory=list)
    sentences: list[list[str]] = field(default_factory=list)  # the words of the sentences compared

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays (for a cache's budget)."""
        return self.points_before.nbytes + self.points_after.nbytes + (0 if self.heads is None else self.heads.nbytes)

    def ranked_heads(self, top: int | None = None) -> pd.DataFrame | None:
        return None if self.heads is None else rank_head_changes(self.heads, top)

    def layer_points(self, layer: int | str) -> tuple[np.ndarray, np.ndarray]:
        """The labelled points at one layer (index or name): (before [n, dim], after [n, dim])."""
        i = self.layer_names.index(layer) if isinstance(layer, str) else int(layer)
        if not 0 <= i < len(self.layer_names):
            raise ValueError(f"layer {layer!r} out of range: there are {len(self.layer_names)} layers")
        return self.points_before[:, i], self.points_after[:, i]


def compare(
    before: LoadedModel,
    after: LoadedModel,
    sentences: Sequence[Sequence[str]],
    labels: Sequence[str | Sequence[str]],
    kind: str,
    targets: Sequence[int | None] | None = None,
    attention: bool = True,
    seed: int = 0,
    pooling: str = "mean",
) -> FinetuneComparison:
    """Compare ``before`` and ``after`` on ``sentences`` (lists of words) with the task's ``labels``.

    kind "token": one label per word (a sequence; "" for a word without a label); "word": one label per sentence
    for the word at ``targets[i]``; "sentence": one label per sentence (its words' mean vector is the point).
    ``attention``: also rank the heads by change (encoders only; skipped for ELMo). Cached per process: the
    same models, sentences and settings return the same object.
    """
    if kind not in TASK_KINDS:
        raise ValueError(f"kind must be one of {', '.join(TASK_KINDS)}, got {kind!r}")
    check_comparable(before, after)
    sentences = [list(s) for s in sentences]
    labels = [lab if isinstance(lab, str) else tuple(lab) for lab in labels]
    if len(labels) != len(sentences):
        raise ValueError(f"{len(sentences)} sentences but {len(labels)} labels")
    if kind == "word" and (targets is None or len(targets) != len(sentences)):
        raise ValueError("a word task needs the target word's index in every sentence (targets)")
    if not any(sentences):
        raise ValueError("no sentences to compare the models on")
    key = (id(before), id(after), kind, bool(attention), int(seed), pooling,
           _digest(sentences, labels, targets))
    found = _CACHE.get(key)
    if found is not None:
        return found
    result = _compare(before, after, sentences, labels, kind, targets, attention, seed, pooling)
    _CACHE.put(key, (before, after), result)
    return result


def _compare(before, after, sentences, labels, kind, targets, attention, seed, pooling) -> FinetuneComparison:
    notes: list[str] = []
    rng = np.random.default_rng(seed)
    with caught_warnings() as caught:
        vb = embed_sentences(before, sentences, pooling=pooling)
        va = embed_sentences(after, sentences, pooling=pooling)
    n_nan = sum(1 for m, _ in caught if "NaN" in str(m))
    if n_nan:
        notes.append("some words have no vector in one of the models (past the maximum length): left out")

    # every word, for CKA and the cosine
    word_b = np.concatenate([a for a in vb if a.shape[1]], axis=1)  # [L, N, d]
    word_a = np.concatenate([a for a in va if a.shape[1]], axis=1)
    finite = np.isfinite(word_b).all(axis=(0, 2)) & np.isfinite(word_a).all(axis=(0, 2))
    idx = np.flatnonzero(finite)
    if len(idx) < 2:
        raise ValueError("fewer than 2 words have vectors in both models: nothing to compare")
    if len(idx) > MAX_CKA_WORDS:
        notes.append(f"CKA and cosine on a sample of {MAX_CKA_WORDS:,} of the {len(idx):,} words")
        idx = np.sort(rng.choice(idx, MAX_CKA_WORDS, replace=False))

    # the labelled points
    pb, pa, plab, ptext, pspan = _points(sentences, labels, kind, targets, vb, va)
    counts = pd.Series(plab, dtype=object).value_counts() if plab else pd.Series(dtype=int)
    rare = set(counts[counts < 2].index)
    if rare:
        notes.append(f"{len(rare)} label(s) with a single point left out of the separation (1-NN and silhouette "
                     "need two of each)")
    keep = [i for i, lab in enumerate(plab) if lab not in rare]
    if len(keep) > MAX_POINTS:
        notes.append(f"class separation on a sample of {MAX_POINTS:,} of the {len(keep):,} labelled points")
        keep = sorted(rng.choice(keep, MAX_POINTS, replace=False).tolist())
    pb, pa = pb[keep], pa[keep]
    plab = [plab[i] for i in keep]
    ptext = [ptext[i] for i in keep]
    pspan = [pspan[i] for i in keep]
    separable = len(plab) >= 3 and len(set(plab)) >= 2
    if not separable:
        notes.append("fewer than 2 labels with 2 points each: no class separation to measure")

    rows = []
    for i, name in enumerate(before.layer_names):
        row: dict[str, Any] = {"layer": i, "layer_name": name,
                               "cka": linear_cka(word_b[i, idx], word_a[i, idx]),
                               "cosine": mean_cosine(word_b[i, idx], word_a[i, idx])}
        for side, P in (("before", pb), ("after", pa)):
            row[f"knn_{side}"] = row[f"silhouette_{side}"] = float("nan")
            if separable:
                row[f"knn_{side}"] = knn_sense_accuracy(P[:, i], plab, k=1).accuracy
                row[f"silhouette_{side}"] = sense_silhouette(P[:, i], plab)[0]
        rows.append(row)

    heads = None
    if attention and before.has_attention and after.has_attention:
        if len(sentences) > MAX_ATTENTION_SENTENCES:
            notes.append(f"attention heads compared on the first {MAX_ATTENTION_SENTENCES} sentences")
        heads = head_changes(before, after, sentences)
    return FinetuneComparison(
        before=_name(before), after=_name(after), kind=kind, layer_names=list(before.layer_names),
        layers=pd.DataFrame(rows), points_before=pb.astype(np.float32), points_after=pa.astype(np.float32),
        point_labels=plab, point_text=ptext, point_spans=pspan, heads=heads,
        majority=majority_share(plab) if plab else float("nan"), n_sentences=len(sentences),
        n_words=int(len(idx)), notes=notes, sentences=sentences)


def _points(sentences, labels, kind, targets, vb, va):
    """The labelled points: (before [n, L, d], after [n, L, d], labels, sentence texts, spans)."""
    pb, pa, plab, ptext, pspan = [], [], [], [], []
    for i, words in enumerate(sentences):
        if not words:
            continue
        text, spans = _text_and_spans(words)
        b, a = vb[i], va[i]
        if kind == "sentence":
            ok = np.isfinite(b).all(axis=(0, 2)) & np.isfinite(a).all(axis=(0, 2))
            if not ok.any() or not labels[i]:
                continue
            pb.append(b[:, ok].mean(axis=1))
            pa.append(a[:, ok].mean(axis=1))
            plab.append(str(labels[i]))
            ptext.append(text)
            pspan.append(None)
            continue
        if kind == "word":
            chosen = [(targets[i], labels[i])] if targets[i] is not None and labels[i] else []
        else:
            chosen = [(j, lab) for j, lab in enumerate(labels[i]) if lab]
        for j, lab in chosen:
            if not 0 <= j < len(words):
                raise ValueError(f"sentence {i}: target word {j} is outside its {len(words)} words")
            if not (np.isfinite(b[:, j]).all() and np.isfinite(a[:, j]).all()):
                continue
            pb.append(b[:, j])
            pa.append(a[:, j])
            plab.append(str(lab))
            ptext.append(text)
            pspan.append(spans[j])
    if not pb:
        shape = (0, vb[0].shape[0], vb[0].shape[2])
        return np.zeros(shape, np.float32), np.zeros(shape, np.float32), [], [], []
    return np.stack(pb), np.stack(pa), plab, ptext, pspan


def _text_and_spans(words: list[str]) -> tuple[str, list[tuple[int, int]]]:
    spans, pos = [], 0
    for w in words:
        spans.append((pos, pos + len(w)))
        pos += len(w) + 1
    return " ".join(words), spans


def _digest(sentences, labels, targets) -> str:
    h = hashlib.sha256()
    h.update(repr((sentences, labels, targets)).encode("utf-8", errors="surrogatepass"))
    return h.hexdigest()


class _Results:
    """The last few comparisons, each holding its two models (so their ids in the key stay theirs)."""

    def __init__(self, keep: int = 8):
        self.keep = keep
        self._items: OrderedDict[tuple, tuple[Any, FinetuneComparison]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple) -> FinetuneComparison | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[1]

    def put(self, key: tuple, models: Any, value: FinetuneComparison) -> None:
        with self._lock:
            self._items[key] = (models, value)
            while len(self._items) > self.keep:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


_CACHE = _Results(keep=3)  # a BERT-base comparison holds about 80 MB of points


# ----------------------------------------------------------------------------------------------------------
# fine-tuned models and their tasks


def finetune_info(model: Any) -> dict | None:
    """What a fine-tuned model's folder says about its training (``finetune.json``: base model, task, labels,
    mode, steps, metrics), or None for a model that was not fine-tuned."""
    info = getattr(model, "finetune_info", None)
    return info if isinstance(info, dict) else None


def base_model(model: LoadedModel) -> LoadedModel:
    """The model ``model`` was fine-tuned from, loaded from the path (or name) its ``finetune.json`` gives.

    ValueError with what to do when ``model`` was not fine-tuned or its base cannot be loaded."""
    from ..checkpoint import CheckpointError
    from ..loading import load

    info = finetune_info(model)
    if info is None:
        raise ValueError(f"{_name(model)} is not a fine-tuned model (its folder has no finetune.json); make one "
                         "with `ctxmodels finetune --model M --task T --out DIR`")
    tried = []
    for source in (info.get("base_path"), info.get("base_model")):
        if not isinstance(source, str) or not source.strip() or source in tried:
            continue
        tried.append(source)
        try:
            return load(source)
        except CheckpointError:
            continue
    shown = " or ".join(repr(t) for t in tried) or "nothing (finetune.json names no base model)"
    raise ValueError(f"the base model of {_name(model)} cannot be loaded: looked for {shown}; put it back, or "
                     "choose the base model by hand")


@dataclass
class TaskSentences:
    """Sentences of a task's split, ready for :func:`compare`."""

    name: str
    kind: str
    split: str
    sentences: list[list[str]]
    labels: list[str | tuple[str, ...]]
    targets: list[int | None]
    available: int  # examples in the split, before the cap
    description: str = ""


def task_sentences(spec: str, split: str = "dev", max_sentences: int = MAX_SENTENCES, seed: int = 0
                   ) -> TaskSentences:
    """Up to ``max_sentences`` examples of ``split`` of the task ``spec`` (as ``ctxmodels finetune --task`` takes
    it: ``pos``, ``ner``, ``wsd:LEMMA``, ``period``, or a file), drawn with ``seed`` when there are more.

    ValueError (a :class:`ctxmodels.tasks.TaskError`) when the task or its data is missing."""
    from ..tasks import load_task

    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    if not isinstance(max_sentences, int) or max_sentences < 1:
        raise ValueError(f"max_sentences must be a positive whole number, got {max_sentences!r}")
    with caught_warnings() as caught:  # this thread's only: catch_warnings would swap every thread's filters
        data = load_task(spec, seed=seed)
    for message, category in caught:  # a file left open by a task reader is upkeep, the rest is news
        if not issubclass(category, ResourceWarning):
            warnings.warn(message if isinstance(message, Warning) else category(message), stacklevel=2)
    if data.kind not in TASK_KINDS:  # pairs of texts, questions on paragraphs: no one sentence with its label
        what = {"pair": "a sentence-pair task", "qa": "a question-answering task"}.get(data.kind, "another kind")
        raise ValueError(f"the task {data.name} is {what}: the comparison runs on single sentences and their labels, "
                         "so for this model only its scores are shown")
    examples = list(getattr(data, split))
    if not examples:
        raise ValueError(f"the task {spec!r} has no {split} examples; choose another split")
    available = len(examples)
    if available > max_sentences:
        pick = np.sort(np.random.default_rng(seed).choice(available, max_sentences, replace=False))
        examples = [examples[i] for i in pick]
    return TaskSentences(
        name=data.name, kind=data.kind, split=split, sentences=[list(e.words) for e in examples],
        labels=[e.label if isinstance(e.label, str) else tuple(e.label) for e in examples],
        targets=[e.target for e in examples], available=available, description=getattr(data, "description", ""))


def builtin_tasks() -> list[str]:
    """The built-in task specs as ``ctxmodels.tasks.BUILTIN_TASKS`` names them (``wsd:LEMMA`` takes a lemma)."""
    from ..tasks import BUILTIN_TASKS

    return list(BUILTIN_TASKS)


def compare_on_task(before: LoadedModel, after: LoadedModel, spec: str, split: str = "dev",
                    max_sentences: int = MAX_SENTENCES, seed: int = 0, attention: bool = True) -> FinetuneComparison:
    """:func:`compare` on up to ``max_sentences`` sentences of a task's split (see :func:`task_sentences`)."""
    task = task_sentences(spec, split, max_sentences, seed)
    return compare(before, after, task.sentences, task.labels, task.kind, targets=task.targets,
                   attention=attention, seed=seed)
