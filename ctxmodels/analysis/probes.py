"""Layer-weight probes: which layers of a frozen model does a small task head want?

The setup (ELMo paper, section 5.2 style, on SemCor):

* **Features.** A subset of SemCor sentences (``n_sentences``, drawn with ``seed``) is embedded once with the frozen
  model (:meth:`LoadedModel.embed`, word level, all layers). A tagged token that is a multi-word expression is the
  mean of its words. Each layer is standardised (per dimension, statistics of the training items) so that the mix
  weights compare what the layers carry, not their scales.
* **Head.** ``ScalarMix`` over the layers (softmax weights ``s_j`` and a scale ``gamma``, both learned) followed by
  one linear layer, trained with cross-entropy (Adam, mini-batches, a fixed number of epochs).
* **Single layers.** The same head with the mix fixed to one-hot on layer ``j`` (gamma 1, nothing of the mix
  trained): the accuracy a probe reaches from that layer alone. All these probes train in one loop
  (:class:`LayerProbes`), each exactly as it would alone.
* **Split.** Sentences (not tokens) are split into train and test with ``seed``, so no sentence is in both.

Tasks:

* ``pos``: part of speech of SemCor's tagged tokens. SemCor tags only content words, so this is a 5-way tagger over
  content words with a coarse tag set (NOUN, PROPN, VERB, ADJ, ADV; :func:`ctxmodels.semcor.coarse_pos`), or
  SemCor's raw Penn tags with ``tagset="penn"`` (which are nearly the same set plus a few one-off tags).
* ``wsd``: word sense of polysemous lemmas. The lemmas are those with at least ``min_senses`` senses of at least
  ``min_per_sense`` tagged examples (the ``n_lemmas`` most frequent, or the ``lemmas`` given); only those senses are
  used. Occurrences are taken round-robin over (lemma, sense), at most ``max_per_sense`` each, until
  ``n_sentences`` sentences are used. One head over all senses; for an item only its own lemma's senses compete
  (the other logits are masked), i.e. one classifier per lemma sharing the mix. The baseline is the most frequent
  sense of each lemma in the training items.

Results are cached on disk beside the model (``<model dir>/probes/<task>.json``; a user cache directory when that is
not writable), keyed by a fingerprint of the model files and the settings, so the app shows them at once.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from .. import paths
from ..checkpoint import write_json
from ..semcor import SemCor, coarse_pos, default_semcor_dir, load_semcor, semcor_files, table_size

if TYPE_CHECKING:
    from ..loading import LoadedModel

TASKS = ("pos", "wsd")
PROBE_VERSION = 1  # bump when the probe's procedure changes, so cached results are recomputed
Progress = Callable[[float, str], None]


@dataclass
class ProbeSettings:
    n_sentences: int = 600         # SemCor sentences embedded (the main cost)
    seed: int = 0
    test_fraction: float = 0.2     # share of the sentences held out for testing
    epochs: int = 10
    batch_size: int = 64
    lr: float = 1e-2               # the linear layer
    mix_lr: float = 1e-1           # s_j and gamma: few parameters, so a larger step
    weight_decay: float = 1e-4
    pooling: str = "mean"          # word pieces -> word (BERT)
    tagset: str = "coarse"         # pos: "coarse" | "penn"
    lemmas: tuple[str, ...] | None = None   # wsd: lemmas to use (None: chosen by the rules below)
    n_lemmas: int = 10
    min_per_sense: int = 20
    min_senses: int = 2
    max_per_sense: int = 20
    # torch threads while probing (None: leave as set). One thread by default: the work is many small matrix
    # products, and on a busy 2-core machine two threads were 5-10x slower (waits at OpenMP barriers).
    threads: int | None = 1

    def __post_init__(self) -> None:
        if self.lemmas is not None:
            self.lemmas = tuple(self.lemmas)

    def validate(self) -> None:
        if self.n_sentences < 2:
            raise ValueError(f"n_sentences must be at least 2 (one to train on, one to test), not {self.n_sentences}")
        if not 0 < self.test_fraction < 1:
            raise ValueError(f"test_fraction must be between 0 and 1, not {self.test_fraction}")
        if self.epochs < 1 or self.batch_size < 1:
            raise ValueError("epochs and batch_size must be at least 1")
        if self.tagset not in ("coarse", "penn"):
            raise ValueError(f"tagset must be 'coarse' or 'penn', not {self.tagset!r}")

    def for_task(self, task: str) -> dict:
        """The settings that matter for ``task`` (the cache key ignores the others)."""
        d = asdict(self)
        drop = ("lemmas", "n_lemmas", "min_per_sense", "min_senses", "max_per_sense") if task == "pos" else ("tagset",)
        drop += ("threads",)   # speed only: results do not depend on it
        for k in drop:
            d.pop(k)
        if d.get("lemmas") is not None:
            d["lemmas"] = list(d["lemmas"])
        return d


@dataclass
class ProbeResult:
    task: str
    model: str
    layer_names: list[str]
    labels: list[str]                  # class names (tags or sense keys)
    mix_weights: list[float]           # learned softmax-normalised s_j, one per layer
    gamma: float
    mix_accuracy: float
    layer_accuracies: list[float]      # the same probe on each single layer
    baseline_accuracy: float           # majority tag (pos) / most frequent sense per lemma (wsd)
    n_train: int
    n_test: int
    n_sentences: int
    settings: dict
    seconds: dict                      # {"embed": s, "train": s}
    lemmas: list[str] = field(default_factory=list)   # wsd: the lemmas probed
    model_fingerprint: str = ""
    cached: bool = False

    @property
    def best_layer(self) -> int:
        return int(np.argmax(self.layer_accuracies))

    def rows(self) -> list[dict]:
        """One row per layer: name, s_j, single-layer accuracy (for tables and plots)."""
        return [{"layer": n, "weight": w, "accuracy": a}
                for n, w, a in zip(self.layer_names, self.mix_weights, self.layer_accuracies)]

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("cached")
        return d

    @classmethod
    def from_dict(cls, d: dict) -> ProbeResult:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    def format_table(self) -> str:
        lines = [f"{self.task} probe on {self.model}: {self.n_train} train / {self.n_test} test items, "
                 f"{len(self.labels)} classes" + (f", {len(self.lemmas)} lemmas" if self.lemmas else ""),
                 f"{'layer':<24} {'s_j':>6} {'accuracy':>9}"]
        for r in self.rows():
            lines.append(f"{r['layer']:<24} {r['weight']:>6.3f} {r['accuracy']:>9.3f}")
        lines.append(f"{'scalar mix (gamma ' + format(self.gamma, '.3g') + ')':<24} {'':>6} {self.mix_accuracy:>9.3f}")
        base = "majority tag" if self.task == "pos" else "most frequent sense"
        lines.append(f"{base:<24} {'':>6} {self.baseline_accuracy:>9.3f}")
        lines.append(f"best single layer: {self.layer_names[self.best_layer]}; "
                     f"largest mix weight: {self.layer_names[int(np.argmax(self.mix_weights))]}")
        return "\n".join(lines)


# ----------------------------------------------------------------------------------------------------------
# items: which tokens to classify


@dataclass
class ProbeData:
    sentences: list[list[str]]         # words, as the model reads them
    sentence_ids: list[str]            # SemCor uids (the split unit)
    items: list[tuple[int, int, int]]  # (sentence, word_start, word_end)
    labels: list[int]                  # class index per item
    groups: list[int]                  # wsd: lemma index per item; pos: all 0
    class_names: list[str]
    class_groups: list[int]            # group of each class
    group_names: list[str]


def pos_data(semcor: SemCor, settings: ProbeSettings) -> ProbeData:
    """Every tagged token of ``n_sentences`` random tagged sentences, labelled with its (coarse) Penn tag."""
    candidates = [i for i, s in enumerate(semcor.sentences) if s.tags]
    chosen = sorted(random.Random(settings.seed).sample(candidates, min(settings.n_sentences, len(candidates))))
    tag_of = coarse_pos if settings.tagset == "coarse" else (lambda t: t)
    raw = []
    for new, i in enumerate(chosen):
        s = semcor.sentences[i]
        for t, tag in sorted(s.tags.items()):
            raw.append((new, *s.spans[t], tag_of(tag.pos)))
    classes = sorted({r[3] for r in raw})
    index = {c: k for k, c in enumerate(classes)}
    return ProbeData(
        sentences=[semcor.sentences[i].words for i in chosen],
        sentence_ids=[semcor.sentences[i].uid for i in chosen],
        items=[r[:3] for r in raw], labels=[index[r[3]] for r in raw], groups=[0] * len(raw),
        class_names=classes, class_groups=[0] * len(classes), group_names=["all"])


def wsd_data(semcor: SemCor, settings: ProbeSettings) -> ProbeData:
    """Occurrences of polysemous lemmas, balanced over senses, within a budget of ``n_sentences`` sentences."""
    picked = semcor.polysemous_lemmas(settings.min_per_sense, settings.min_senses)
    if settings.lemmas is not None:
        wanted = [lemma.lower() for lemma in settings.lemmas]
        by_lemma = dict(picked)
        missing = [lemma for lemma in wanted if lemma not in by_lemma]
        if missing:
            raise ValueError(f"not enough tagged examples in SemCor for {', '.join(missing)}: each lemma needs "
                             f"{settings.min_senses} senses with {settings.min_per_sense} examples or more")
        picked = [(lemma, by_lemma[lemma]) for lemma in wanted]
    else:
        picked = picked[: settings.n_lemmas]
    if not picked:
        raise ValueError(f"no SemCor lemma has {settings.min_senses} senses with {settings.min_per_sense} "
                         "examples or more; lower min_per_sense or min_senses")
    rng = random.Random(settings.seed)
    buckets = []   # one shuffled list of occurrences per (lemma, sense)
    for lemma, senses in picked:
        occ = [o for o in semcor.occurrences(lemma) if o.sense_key in senses]
        for key in senses:
            b = [o for o in occ if o.sense_key == key]
            rng.shuffle(b)
            buckets.append(b[: settings.max_per_sense])
    # Round-robin over the buckets keeps the senses balanced when the sentence budget runs out.
    chosen, used = [], {}
    for k in range(max(len(b) for b in buckets)):
        for b in buckets:
            if k < len(b) and (b[k].sentence_index in used or len(used) < settings.n_sentences):
                used.setdefault(b[k].sentence_index, len(used))
                chosen.append(b[k])
    lemma_names = [lemma for lemma, _ in picked]
    class_names = [key for _, senses in picked for key in senses]
    class_groups = [g for g, (_, senses) in enumerate(picked) for _ in senses]
    index = {c: k for k, c in enumerate(class_names)}
    lemma_index = {lemma: g for g, lemma in enumerate(lemma_names)}
    order = sorted(used, key=used.get)
    return ProbeData(
        sentences=[semcor.sentences[i].words for i in order],
        sentence_ids=[semcor.sentences[i].uid for i in order],
        items=[(used[o.sentence_index], o.word_start, o.word_end) for o in chosen],
        labels=[index[o.sense_key] for o in chosen], groups=[lemma_index[o.lemma.lower()] for o in chosen],
        class_names=class_names, class_groups=class_groups, group_names=lemma_names)


# ----------------------------------------------------------------------------------------------------------
# features


def embed_items(model: LoadedModel, data: ProbeData, pooling: str = "mean", chunk: int = 64,
                progress: Progress | None = None) -> np.ndarray:
    """[n_items, n_layers, dim] float32: each item's words averaged, per layer (NaN where the model had none)."""
    n_layers = len(model.layer_names)
    feats = np.full((len(data.items), n_layers, model.dim), np.nan, dtype=np.float32)
    by_sentence: dict[int, list[int]] = {}
    for k, (s, _, _) in enumerate(data.items):
        by_sentence.setdefault(s, []).append(k)
    for start in range(0, len(data.sentences), chunk):
        batch = data.sentences[start: start + chunk]
        arrays = model.embed(batch, pooling=pooling)
        for offset, arr in enumerate(arrays):
            for k in by_sentence.get(start + offset, ()):
                _, a, b = data.items[k]
                feats[k] = arr[:, a:b].mean(axis=1)
        if progress:
            progress(min(start + chunk, len(data.sentences)) / len(data.sentences),
                     f"embedding {len(data.sentences)} sentences")
    return feats


def split_sentences(n_sentences: int, test_fraction: float, seed: int) -> np.ndarray:
    """Boolean mask over sentences, True = test; at least one sentence on each side."""
    order = np.random.default_rng(seed).permutation(n_sentences)
    n_test = min(max(1, round(n_sentences * test_fraction)), n_sentences - 1)
    test = np.zeros(n_sentences, dtype=bool)
    test[order[:n_test]] = True
    return test


def standardise(feats: np.ndarray, train: np.ndarray) -> np.ndarray:
    """Per layer and dimension: subtract the training mean, divide by the training standard deviation."""
    mean = feats[train].mean(axis=0, keepdims=True)
    std = feats[train].std(axis=0, keepdims=True)
    return (feats - mean) / np.where(std > 1e-6, std, 1.0)


# ----------------------------------------------------------------------------------------------------------
# the head


class LayerProbes(nn.Module):
    """The scalar-mix probe and, beside it, one probe per single layer, trained in one loop.

    Mix probe: ``ScalarMix`` (s_j, gamma) then a linear layer. Single-layer probe j: the same head with the mix
    fixed to one-hot on layer j and gamma = 1, i.e. a linear layer on layer j alone. The probes share no parameter
    and Adam updates each parameter from its own gradient, so training them on the summed loss gives each exactly
    the updates it would get alone, for the price of one loop. Logits of classes outside an item's group (another
    lemma's senses) are masked.
    """

    def __init__(self, n_layers: int, dim: int, n_classes: int, class_groups: torch.Tensor):
        super().__init__()
        from ..scalar_mix import ScalarMix

        self.mix = ScalarMix(n_layers)
        self.mix_head = nn.Linear(dim, n_classes)
        self.layer_weight = nn.Parameter(torch.zeros(n_layers, dim, n_classes))
        self.layer_bias = nn.Parameter(torch.zeros(n_layers, n_classes))
        # Start from zero: the first steps then train only the heads (s_j and gamma get no gradient while the
        # logits ignore the mix), so the mix moves by what a sensible head wants, not by a random start.
        nn.init.zeros_(self.mix_head.weight)
        nn.init.zeros_(self.mix_head.bias)
        self.register_buffer("class_groups", class_groups)

    def forward(self, feats: torch.Tensor, groups: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """feats [B, L, D] -> (mix logits [B, C], single-layer logits [B, L, C])."""
        masked = self.class_groups[None, :] != groups[:, None]                # [B, C]
        mix_logits = self.mix_head(self.mix(feats.transpose(0, 1)))          # the mix takes [L, B, D]
        layer_logits = torch.einsum("bld,ldc->blc", feats, self.layer_weight) + self.layer_bias
        return (mix_logits.masked_fill(masked, float("-inf")),
                layer_logits.masked_fill(masked[:, None, :], float("-inf")))

    def params(self, settings: ProbeSettings) -> list[dict]:
        heads = [self.mix_head.weight, self.mix_head.bias, self.layer_weight, self.layer_bias]
        return [{"params": heads, "lr": settings.lr, "weight_decay": settings.weight_decay},
                {"params": list(self.mix.parameters()), "lr": settings.mix_lr, "weight_decay": 0.0}]


@dataclass
class FitResult:
    mix_accuracy: float                  # test accuracies
    layer_accuracies: list[float]
    mix_train_accuracy: float
    layer_train_accuracies: list[float]
    weights: list[float]                 # s_j
    gamma: float


def fit_probes(feats: np.ndarray, labels: np.ndarray, groups: np.ndarray, class_groups: np.ndarray,
               train: np.ndarray, settings: ProbeSettings, progress: Callable[[float], None] | None = None
               ) -> FitResult:
    """Train the mix probe and the single-layer probes on cached features [N, L, D].

    ``labels`` [N] class indices, ``groups`` [N] each item's group, ``class_groups`` [C] each class's group,
    ``train`` [N] boolean (the rest is the test set). ``progress(fraction)`` after every epoch.
    """
    with torch_threads(settings.threads):
        return _fit(feats, labels, groups, class_groups, train, settings, progress)


@contextmanager
def torch_threads(n: int | None):
    """Run with ``n`` torch threads, then restore the previous number (a process-wide setting)."""
    before = torch.get_num_threads()
    if n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _fit(feats: np.ndarray, labels: np.ndarray, groups: np.ndarray, class_groups: np.ndarray, train: np.ndarray,
         settings: ProbeSettings, progress: Callable[[float], None] | None) -> FitResult:
    torch.manual_seed(settings.seed)
    x = torch.from_numpy(np.ascontiguousarray(feats, dtype=np.float32))
    y = torch.from_numpy(np.asarray(labels, dtype=np.int64))
    g = torch.from_numpy(np.asarray(groups, dtype=np.int64))
    tr = torch.from_numpy(np.flatnonzero(train))
    te = torch.from_numpy(np.flatnonzero(~train))
    n_layers = x.shape[1]
    probe = LayerProbes(n_layers, x.shape[2], len(class_groups), torch.as_tensor(np.asarray(class_groups)))
    opt = torch.optim.Adam(probe.params(settings))
    gen = torch.Generator().manual_seed(settings.seed)
    for epoch in range(settings.epochs):
        for batch in tr[torch.randperm(len(tr), generator=gen)].split(settings.batch_size):
            mix_logits, layer_logits = probe(x[batch], g[batch])
            target = y[batch]
            loss = nn.functional.cross_entropy(mix_logits, target) + n_layers * nn.functional.cross_entropy(
                layer_logits.flatten(0, 1), target.repeat_interleave(n_layers))   # the sum of the L layer losses
            opt.zero_grad()
            loss.backward()
            opt.step()
        if progress:
            progress((epoch + 1) / settings.epochs)

    def accuracies(idx: torch.Tensor) -> tuple[float, list[float]]:
        if len(idx) == 0:
            return float("nan"), [float("nan")] * n_layers
        with torch.no_grad():
            mix_logits, layer_logits = probe(x[idx], g[idx])
        mix = float((mix_logits.argmax(-1) == y[idx]).float().mean())
        return mix, (layer_logits.argmax(-1) == y[idx][:, None]).float().mean(0).tolist()

    (mix_te, layers_te), (mix_tr, layers_tr) = accuracies(te), accuracies(tr)
    return FitResult(mix_te, layers_te, mix_tr, layers_tr, probe.mix.weights(), probe.mix.gamma)


def baseline_accuracy(labels: np.ndarray, groups: np.ndarray, train: np.ndarray) -> float:
    """Accuracy of predicting each group's most frequent training label."""
    correct = 0
    for grp in np.unique(groups[~train]):
        tr_labels = labels[train & (groups == grp)]
        te_labels = labels[~train & (groups == grp)]
        if len(tr_labels):
            correct += int((te_labels == np.bincount(tr_labels).argmax()).sum())
    return correct / max(1, int((~train).sum()))


# ----------------------------------------------------------------------------------------------------------
# running and caching


def run_probe(model: LoadedModel, task: str, settings: ProbeSettings | None = None, semcor: SemCor | None = None,
              progress: Progress | None = None, cache: bool = True, cache_dir: str | Path | None = None
              ) -> ProbeResult:
    """Train the ``task`` probe ("pos" or "wsd") on ``model``'s layers, or return the cached result.

    ``progress(fraction, message)`` is called while embedding and training. ``semcor`` defaults to
    :func:`ctxmodels.semcor.load_semcor` (the shared data, else the copy in ``assets/semcor``). ``cache_dir``
    overrides where results are stored.
    """
    if task not in TASKS:
        raise ValueError(f"unknown probe task {task!r}; choose one of {', '.join(TASKS)}")
    settings = settings or ProbeSettings()
    settings.validate()
    n_layers = len(model.layer_names)
    if n_layers < 2:
        raise ValueError(f"{model.name} has {n_layers} layer; a layer-weight probe needs a model with several "
                         "layers (ELMo or BERT)")
    hit = cached_result(model, task, settings, semcor, cache_dir) if cache else None
    if hit is not None:
        if progress:
            progress(1.0, "cached result")
        return hit
    fingerprint = model_fingerprint(model)
    key = _cache_key(task, settings, fingerprint, _semcor_stamp(semcor))
    semcor = semcor if semcor is not None else load_semcor()
    with torch_threads(settings.threads):
        result = _compute(model, task, settings, semcor, progress)
    result.model_fingerprint = fingerprint or ""
    if cache and fingerprint:   # a model without files cannot be recognised later: not stored
        for path in cache_paths(model, task, fingerprint, cache_dir):
            if _write_cache(path, key, result):   # the first place that takes the write
                break
    return result


def cached_result(model: LoadedModel, task: str, settings: ProbeSettings | None = None,
                  semcor: SemCor | None = None, cache_dir: str | Path | None = None) -> ProbeResult | None:
    """The stored result of :func:`run_probe` with these arguments, or None; never computes (for the app)."""
    settings = settings or ProbeSettings()
    fingerprint = model_fingerprint(model)
    if task not in TASKS or fingerprint is None:
        return None
    key = _cache_key(task, settings, fingerprint, _semcor_stamp(semcor))
    return next((r for r in (_read_cache(p, key) for p in cache_paths(model, task, fingerprint, cache_dir))
                 if r is not None), None)


def latest_cached_result(model: LoadedModel, task: str) -> ProbeResult | None:
    """The newest stored result of ``task`` for this model's files, whatever its settings; never computes."""
    fingerprint = model_fingerprint(model)
    if task not in TASKS or fingerprint is None:
        return None
    found = (_read_cache(p, None, fingerprint) for p in cache_paths(model, task, fingerprint))
    return next((r for r in found if r is not None), None)


def _compute(model: LoadedModel, task: str, settings: ProbeSettings, semcor: SemCor,
             progress: Progress | None) -> ProbeResult:
    data = pos_data(semcor, settings) if task == "pos" else wsd_data(semcor, settings)
    t0 = time.perf_counter()
    embed_progress = (lambda f, m: progress(0.7 * f, m)) if progress else None
    feats = embed_items(model, data, settings.pooling, progress=embed_progress)
    t_embed = time.perf_counter() - t0

    labels, groups = np.asarray(data.labels), np.asarray(data.groups)
    keep = ~np.isnan(feats).any(axis=(1, 2))   # words the model had no vector for (e.g. beyond BERT's length)
    test_sentences = split_sentences(len(data.sentences), settings.test_fraction, settings.seed)
    train = ~test_sentences[[s for s, _, _ in data.items]]
    feats, labels, groups, train = feats[keep], labels[keep], groups[keep], train[keep]
    if train.all() or not train.any():
        raise ValueError(f"too few items for a {task} probe ({len(labels)}); raise n_sentences")
    feats = standardise(feats, train)

    t1 = time.perf_counter()
    step = (lambda f: progress(0.7 + 0.3 * f, "training the probes")) if progress else None
    fit = fit_probes(feats, labels, groups, np.asarray(data.class_groups), train, settings, step)
    t_train = time.perf_counter() - t1
    return ProbeResult(
        task=task, model=model.name, layer_names=list(model.layer_names), labels=data.class_names,
        mix_weights=fit.weights, gamma=fit.gamma, mix_accuracy=fit.mix_accuracy, layer_accuracies=fit.layer_accuracies,
        baseline_accuracy=baseline_accuracy(labels, groups, train),
        n_train=int(train.sum()), n_test=int((~train).sum()), n_sentences=len(data.sentences),
        settings=settings.for_task(task), seconds={"embed": round(t_embed, 3), "train": round(t_train, 3)},
        lemmas=data.group_names if task == "wsd" else [])


_FINGERPRINTS: dict[tuple, str] = {}
_SKIP = {"README.md", "metrics.jsonl"}


def _file_digest(path: Path) -> str:
    """sha256 of a file (of its size and first, middle and last 4 MB when larger than 64 MB); memoised."""
    st = path.stat()
    memo = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if memo not in _FINGERPRINTS:
        h = hashlib.sha256(str(st.st_size).encode())
        with path.open("rb") as f:
            if st.st_size <= 64 << 20:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            else:
                for pos in (0, st.st_size // 2, st.st_size - (4 << 20)):
                    f.seek(pos)
                    h.update(f.read(4 << 20))
        _FINGERPRINTS[memo] = h.hexdigest()
    return _FINGERPRINTS[memo]


def _model_files(path: Path) -> tuple[Path, list[Path], str]:
    """(the folder a model lives in, the files that make it up, a file-name prefix for its probe results)."""
    if path.is_file() and path.suffix.lower() != ".json":   # a weights or vector file: only it
        return path.parent, [path], path.name + "."
    folder = path if path.is_dir() else path.parent          # a folder, or its config.json
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.name not in _SKIP and not p.name.startswith("."))
    return folder, files, ""


def model_fingerprint(model: LoadedModel) -> str | None:
    """A hash of the model's files (a folder's top-level files but its README and logs); None without a path."""
    path = getattr(model, "path", None)
    if path is None or not Path(path).exists():
        return None
    h = hashlib.sha256()
    for p in _model_files(Path(path))[1]:
        h.update(p.name.encode() + b"\0" + _file_digest(p).encode())
    return h.hexdigest()


def cache_paths(model: LoadedModel, task: str, fingerprint: str, cache_dir: str | Path | None = None) -> list[Path]:
    """Where a result is looked for and written, in order: beside the model, then the user cache."""
    if cache_dir is not None:
        return [Path(cache_dir) / fingerprint[:16] / f"{task}.json"]
    folder, _, prefix = _model_files(Path(model.path))
    user = paths.cache_dir() / "probes" / fingerprint[:16] / f"{task}.json"
    return [folder / "probes" / f"{prefix}{task}.json", user]


def _semcor_stamp(semcor: SemCor | None) -> str:
    """Which SemCor, told without reading it (so a cached result comes at once): its files' sizes. A gzipped
    copy counts its text's size, so the shipped copy of the shared tables finds the results made from them."""
    if semcor is not None and semcor.path is None:
        return f"in memory: {len(semcor)} sentences, {sum(len(s.tags) for s in semcor.sentences)} tags"
    folder = semcor.path if semcor is not None else default_semcor_dir()
    sizes = (table_size(p) for p in semcor_files(folder))
    return ",".join(str(n) if n is not None else "-" for n in sizes)


def _cache_key(task: str, settings: ProbeSettings, fingerprint: str | None, data: str) -> str:
    blob = json.dumps({"task": task, "settings": settings.for_task(task), "model": fingerprint, "data": data,
                       "version": PROBE_VERSION}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _read_cache(path: Path, key: str | None, fingerprint: str | None = None) -> ProbeResult | None:
    """The entry under ``key`` of a cache file, or None. ``key`` None: the newest entry (entries are written
    oldest first) made for the model files with this ``fingerprint``, whatever its settings."""
    try:
        entries = json.loads(path.read_text(encoding="utf-8")).get("entries", {})
        if key is None:
            key = next((k for k in reversed(entries) if entries[k].get("model_fingerprint") == fingerprint), None)
        if key not in entries:
            return None
        result = ProbeResult.from_dict(entries[key])
        result.cached = True
        return result
    except (OSError, ValueError, TypeError, AttributeError):
        return None  # no cache, or an unreadable one: recompute


def _write_cache(path: Path, key: str, result: ProbeResult, keep: int = 8) -> bool:
    """Add ``result`` to the cache file (keeping the ``keep`` newest entries); False if the place is read-only."""
    try:
        try:
            entries = json.loads(path.read_text(encoding="utf-8")).get("entries", {})
        except (OSError, ValueError, AttributeError):
            entries = {}
        entries.pop(key, None)
        entries[key] = result.to_dict()
        write_json(path, {"version": PROBE_VERSION, "entries": dict(list(entries.items())[-keep:])})
        return True
    except OSError:
        return False
