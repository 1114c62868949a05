"""Evaluation on public benchmark formats: word-sense disambiguation (CoarseWSD-20 layout) and WiC.

``ctxmodels eval wsd --data DIR --model M [--model M2 ...] --json OUT``
    DIR holds one folder per word with ``train.data.txt`` / ``test.data.txt`` (lines
    ``token_index<TAB>tokenised lower-cased sentence``, the index counted from 0), ``train.gold.txt`` /
    ``test.gold.txt`` (one class id per line) and ``classes_map.txt`` (JSON: class id -> sense name). DIR may also
    be a single word's folder. Each test occurrence gets the class of its nearest train occurrence (cosine, 1-NN;
    ties go to the earlier train line), per model, layer and word. Records: ``model, layer, word, n_test,
    n_missing, coverage, n_train_missing, accuracy, macro_f1, accuracy_with_fallback, macro_f1_with_fallback``
    (:func:`ctxmodels.analysis.metrics.macro_f1`: sklearn's macro average over the classes in gold or predicted);
    per model and layer also a record with ``word: "ALL"`` (accuracy over all covered test occurrences, macro_f1
    the mean over words), and the most-frequent-sense baseline as model ``"most frequent sense"``.

``ctxmodels eval wic --data DIR --model M --json OUT``
    DIR holds ``train/``, ``dev/`` and ``test/``, each with one ``*.data.txt`` (lines
    ``lemma<TAB>N|V<TAB>i1-i2<TAB>sentence1<TAB>sentence2``, i1 and i2 the target's token indices from 0) and a
    ``*.gold.txt`` (T/F per line). Per layer: the cosine of the two occurrences; "same sense" when it is at or above
    a threshold chosen to maximise accuracy on train (on dev when there is no train folder: then
    ``train_accuracy`` is the accuracy on dev). Records: ``model, layer, threshold, train_accuracy,
    test_accuracy, n_train, n_train_missing, n_test, n_missing, coverage, test_accuracy_with_fallback``.

Static baselines: every contextual model's context-free layer (BERT "embeddings", ELMo "layer 0 (char CNN)") is in
its per-layer records, and a static-vector model given with ``--model`` gets records of its own (layer "static").
An occurrence without a vector (a word the static model does not know; a word beyond BERT's length) gets no
prediction: ``accuracy`` and ``macro_f1`` (wsd), ``train_accuracy`` and ``test_accuracy`` (wic) are over the
covered occurrences only (None when none is covered), ``coverage`` says which share that is, ``n_missing`` and
``n_train_missing`` count the others, and such occurrences are no nearest-neighbour candidates and take no part in
the threshold search. A model's figure is never the most-frequent-sense answer in disguise: the figures that do
give the uncovered occurrences the most frequent train class (wsd) or label (wic) are kept apart, as
``accuracy_with_fallback`` / ``macro_f1_with_fallback`` (wsd) and ``test_accuracy_with_fallback`` (wic).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..cosine import unit_rows
from .metrics import accuracy, macro_f1

if TYPE_CHECKING:
    from ..loading import LoadedModel

MFS_MODEL = "most frequent sense"


class DataFormatError(ValueError):
    """A benchmark file that does not follow its format; the message names the file and line."""


# ----------------------------------------------------------------------------------------------------------
# reading the formats


@dataclass
class Occurrence:
    tokens: list[str]
    index: int


@dataclass
class WsdWord:
    word: str
    classes: dict[str, str]                # class id -> sense name
    train: list[Occurrence]
    train_labels: list[str]
    test: list[Occurrence]
    test_labels: list[str]


@dataclass
class WicSplit:
    name: str
    first: list[Occurrence]
    second: list[Occurrence]
    labels: list[bool] | None              # None when the split has no gold file


def _read_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, line) for the non-blank lines of a UTF-8 file."""
    if not path.is_file():
        raise DataFormatError(f"{path}: file not found")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise DataFormatError(f"{path}: not UTF-8 text ({e})") from e
    return [(n, line.rstrip("\r")) for n, line in enumerate(text.split("\n"), start=1) if line.strip()]


def _parse_index(value: str, tokens: list[str], path: Path, n: int) -> int:
    try:
        i = int(value)
    except ValueError:
        raise DataFormatError(f"{path}, line {n}: token index {value!r} is not an integer") from None
    if not 0 <= i < len(tokens):
        raise DataFormatError(f"{path}, line {n}: token index {i} is outside the sentence "
                              f"({len(tokens)} tokens, counted from 0)")
    return i


def read_wsd_data(path: Path) -> list[Occurrence]:
    """``token_index<TAB>sentence`` lines."""
    out = []
    for n, line in _read_lines(path):
        parts = line.split("\t")
        if len(parts) != 2:
            raise DataFormatError(f"{path}, line {n}: expected 'token_index<TAB>sentence', found {len(parts)} "
                                  "tab-separated field(s)")
        tokens = parts[1].split()
        out.append(Occurrence(tokens, _parse_index(parts[0].strip(), tokens, path, n)))
    return out


def _read_gold(path: Path, n_expected: int, data_path: Path, allowed: Sequence[str] | None = None) -> list[str]:
    gold = []
    for n, line in _read_lines(path):
        label = line.strip()
        if allowed is not None and label not in allowed:
            raise DataFormatError(f"{path}, line {n}: label {label!r} is not one of {', '.join(allowed)}")
        gold.append(label)
    if len(gold) != n_expected:
        raise DataFormatError(f"{path} has {len(gold)} labels but {data_path.name} has {n_expected} lines; "
                              "they must match line by line")
    return gold


def read_wsd_word(folder: Path) -> WsdWord:
    folder = Path(folder)
    missing = [f for f in ("train.data.txt", "train.gold.txt", "test.data.txt", "test.gold.txt")
               if not (folder / f).is_file()]
    if missing:
        raise DataFormatError(f"{folder}: missing {', '.join(missing)} (CoarseWSD-20 layout: one folder per word "
                              "with train/test .data.txt and .gold.txt, and classes_map.txt)")
    classes: dict[str, str] = {}
    cmap = folder / "classes_map.txt"
    if cmap.is_file():
        try:
            classes = json.loads(cmap.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise DataFormatError(f"{cmap}: not valid JSON ({e})") from e
        if not isinstance(classes, dict) or not classes:
            raise DataFormatError(f"{cmap}: expected a JSON object mapping class ids to sense names")
        classes = {str(k): str(v) for k, v in classes.items()}
    allowed = sorted(classes) if classes else None
    splits = {}
    for split in ("train", "test"):
        data_path = folder / f"{split}.data.txt"
        occ = read_wsd_data(data_path)
        if not occ:
            raise DataFormatError(f"{data_path}: no instances")
        splits[split] = (occ, _read_gold(folder / f"{split}.gold.txt", len(occ), data_path, allowed))
    if not classes:  # classes_map.txt is optional for us: name the classes by their ids
        classes = {c: c for c in sorted(set(splits["train"][1]) | set(splits["test"][1]))}
    return WsdWord(folder.name, classes, *splits["train"], *splits["test"])


def read_wsd_dataset(data_dir: str | Path, words: Sequence[str] | None = None) -> list[WsdWord]:
    """All word folders of a CoarseWSD-20-style directory (or DIR itself when it is one word's folder)."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise DataFormatError(f"{data_dir}: folder not found")
    if (data_dir / "train.data.txt").is_file():
        folders = [data_dir]
    else:
        folders = sorted(p for p in data_dir.iterdir() if p.is_dir() and (p / "train.data.txt").is_file())
    if words:
        by_name = {p.name: p for p in folders}
        unknown = [w for w in words if w not in by_name]
        if unknown:
            raise DataFormatError(f"{data_dir}: no folder for {', '.join(unknown)} "
                                  f"(found: {', '.join(by_name) or 'none'})")
        folders = [by_name[w] for w in words]
    if not folders:
        raise DataFormatError(f"{data_dir}: no word folders with train.data.txt (CoarseWSD-20 layout: "
                              "DIR/<word>/train.data.txt, train.gold.txt, test.data.txt, test.gold.txt)")
    return [read_wsd_word(p) for p in folders]


def read_wic_split(folder: Path) -> WicSplit:
    folder = Path(folder)
    found = sorted(folder.glob("*.data.txt"))
    if len(found) != 1:
        raise DataFormatError(f"{folder}: expected one *.data.txt file, found {len(found)}")
    data_path = found[0]
    first, second = [], []
    for n, line in _read_lines(data_path):
        parts = line.split("\t")
        if len(parts) != 5:
            raise DataFormatError(f"{data_path}, line {n}: expected 5 tab-separated fields "
                                  f"(lemma, N|V, i1-i2, sentence1, sentence2), found {len(parts)}")
        idx = parts[2].strip().split("-")
        if len(idx) != 2:
            raise DataFormatError(f"{data_path}, line {n}: indices {parts[2]!r} are not 'i1-i2'")
        t1, t2 = parts[3].split(), parts[4].split()
        first.append(Occurrence(t1, _parse_index(idx[0], t1, data_path, n)))
        second.append(Occurrence(t2, _parse_index(idx[1], t2, data_path, n)))
    if not first:
        raise DataFormatError(f"{data_path}: no instances")
    gold_path = data_path.with_name(data_path.name[: -len(".data.txt")] + ".gold.txt")
    labels = None
    if gold_path.is_file():
        labels = [g == "T" for g in _read_gold(gold_path, len(first), data_path, ["F", "T"])]
    return WicSplit(folder.name, first, second, labels)


def read_wic_dataset(data_dir: str | Path) -> tuple[WicSplit, WicSplit]:
    """(the split the threshold is chosen on: train, else dev; test). Both need gold labels."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise DataFormatError(f"{data_dir}: folder not found")
    fit_name = "train" if (data_dir / "train").is_dir() else "dev"
    if not (data_dir / fit_name).is_dir() or not (data_dir / "test").is_dir():
        raise DataFormatError(f"{data_dir}: expected train/ (or dev/) and test/ folders (WiC layout)")
    fit, test = read_wic_split(data_dir / fit_name), read_wic_split(data_dir / "test")
    for split in (fit, test):
        if split.labels is None:
            raise DataFormatError(f"{data_dir / split.name}: no *.gold.txt beside the data; gold labels are needed "
                                  "to choose the threshold and to score the test set")
    return fit, test


# ----------------------------------------------------------------------------------------------------------
# vectors and the two measures


def occurrence_vectors(model: LoadedModel, occurrences: Sequence[Occurrence], pooling: str = "mean",
                       batch_size: int = 32) -> np.ndarray:
    """[n, n_layers, dim]: every layer's vector of each occurrence's target word (each sentence embedded once)."""
    unique: dict[tuple[str, ...], int] = {}
    for o in occurrences:
        unique.setdefault(tuple(o.tokens), len(unique))
    arrays = model.embed([list(s) for s in unique], pooling=pooling, batch_size=batch_size)
    return np.stack([arrays[unique[tuple(o.tokens)]][:, o.index] for o in occurrences]).astype(np.float32)


def nearest_neighbour(train_x: np.ndarray, train_y: Sequence[str], test_x: np.ndarray) -> list[str | None]:
    """1-NN by cosine. Rows with NaN are no neighbours; a test row with NaN (or with no train row to compare
    with) gets None: no prediction, which the callers count as not covered rather than guess."""
    train_y = list(train_y)
    ok_train = np.isfinite(train_x).all(axis=1)
    ok_test = np.isfinite(test_x).all(axis=1)
    pred: list[str | None] = [None] * len(test_x)
    if ok_train.any() and ok_test.any():
        candidates = np.flatnonzero(ok_train)
        sims = unit_rows(test_x[ok_test]) @ unit_rows(train_x[candidates]).T
        best = candidates[sims.argmax(axis=1)]  # argmax takes the first of equal scores: the earlier train line
        for i, j in zip(np.flatnonzero(ok_test), best):
            pred[i] = train_y[j]
    return pred


def cosine_pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine of [n, dim] arrays (NaN where either side has no vector)."""
    return np.sum(unit_rows(a) * unit_rows(b), axis=-1)


def choose_threshold(scores: np.ndarray, labels: Sequence[bool]) -> tuple[float, float]:
    """The threshold t maximising the accuracy of "True when score >= t", with that accuracy.

    Candidates lie midway between neighbouring distinct scores, plus the lowest score (all True) and one just above
    the highest (all False); of equally good ones the lowest is taken. NaN scores are ignored.
    """
    y = np.asarray(labels, dtype=bool)
    ok = ~np.isnan(scores)
    s, y = scores[ok], y[ok]
    if len(s) == 0:
        raise ValueError("no scores to choose a threshold from (every pair lacks a vector)")
    order = np.argsort(s, kind="stable")
    s, y = s[order], y[order]
    # Threshold between positions k-1 and k: items < k predicted False, the rest True.
    false_below = np.concatenate([[0], np.cumsum(~y)])              # correct Falses among the first k
    true_from = np.concatenate([np.cumsum(y[::-1])[::-1], [0]])     # correct Trues among the rest
    correct = false_below + true_from
    valid = np.ones(len(s) + 1, dtype=bool)
    valid[1:-1] = s[1:] > s[:-1]   # no threshold between equal scores
    k = int(np.flatnonzero(valid)[np.argmax(correct[valid])])
    if k == 0:
        t = float(s[0])
    elif k == len(s):
        t = float(np.nextafter(s[-1], np.inf))
    else:
        t = float((s[k - 1] + s[k]) / 2)
        if t <= s[k - 1]:   # neighbouring floats: no number lies between them
            t = float(s[k])
    return t, float(correct[k] / len(s))


def predict_with_threshold(scores: np.ndarray, threshold: float | None, fallback: bool | None = None
                           ) -> list[bool | None]:
    """True when a score is at or above ``threshold``; for a NaN score (or no threshold) ``fallback``: None by
    default, i.e. no prediction."""
    return [fallback if threshold is None or np.isnan(x) else bool(x >= threshold) for x in scores]


def _covered(gold: Sequence, pred: Sequence) -> tuple[list, list]:
    """The (gold, prediction) pairs that have a prediction."""
    pairs = [(g, p) for g, p in zip(gold, pred) if p is not None]
    return [g for g, _ in pairs], [p for _, p in pairs]


def _accuracy(gold: Sequence, pred: Sequence) -> float | None:
    """Accuracy over the predicted items; None when nothing was predicted."""
    g, p = _covered(gold, pred)
    return accuracy(g, p) if g else None


# ----------------------------------------------------------------------------------------------------------
# the evaluations


def evaluate_wsd(words: Sequence[WsdWord], models: Sequence[LoadedModel], pooling: str = "mean",
                 batch_size: int = 32, log=None, names: Sequence[str] | None = None) -> list[dict]:
    """Records per model, layer and word, then ``ALL`` (see the module docstring for the fields).

    ``names`` (default: each model's ``name``) is what the records call the models.
    """
    names = list(names) if names is not None else [m.name for m in models]
    records = []
    for w in words:   # the baseline needs no model
        majority = Counter(w.train_labels).most_common(1)[0][0]
        records.append(_wsd_record(MFS_MODEL, "-", w.word, w.test_labels, [majority] * len(w.test), majority, 0))
    records += _wsd_all(records, MFS_MODEL, "-")
    for model, model_name in zip(models, names):
        if log:
            log(f"{model_name}: embedding {sum(len(w.train) + len(w.test) for w in words)} occurrences")
        per_word = []
        for w in words:
            train_x = occurrence_vectors(model, w.train, pooling, batch_size)
            test_x = occurrence_vectors(model, w.test, pooling, batch_size)
            majority = Counter(w.train_labels).most_common(1)[0][0]
            for layer, name in enumerate(model.layer_names):
                pred = nearest_neighbour(train_x[:, layer], w.train_labels, test_x[:, layer])
                n_train_missing = int((~np.isfinite(train_x[:, layer]).all(axis=1)).sum())
                per_word.append(_wsd_record(model_name, name, w.word, w.test_labels, pred, majority,
                                            n_train_missing))
        for name in model.layer_names:
            rows = [r for r in per_word if r["layer"] == name]
            records += rows + _wsd_all(rows, model_name, name)
    return records


def _wsd_record(model: str, layer: str, word: str, gold: list[str], pred: list[str | None], fallback: str,
                n_train_missing: int) -> dict:
    g, p = _covered(gold, pred)
    filled = [fallback if x is None else x for x in pred]
    return {"model": model, "layer": layer, "word": word, "n_test": len(gold), "n_missing": len(gold) - len(g),
            "coverage": len(g) / len(gold), "n_train_missing": n_train_missing,
            "accuracy": accuracy(g, p) if g else None, "macro_f1": macro_f1(g, p) if g else None,
            "accuracy_with_fallback": accuracy(gold, filled), "macro_f1_with_fallback": macro_f1(gold, filled)}


def _wsd_all(rows: list[dict], model: str, layer: str) -> list[dict]:
    rows = [r for r in rows if r["model"] == model and r["layer"] == layer and r["word"] != "ALL"]
    n = sum(r["n_test"] for r in rows)
    covered = [r for r in rows if r["accuracy"] is not None]
    n_covered = sum(r["n_test"] - r["n_missing"] for r in covered)
    return [{"model": model, "layer": layer, "word": "ALL", "n_test": n, "n_missing": n - n_covered,
             "coverage": n_covered / n, "n_train_missing": sum(r["n_train_missing"] for r in rows),
             "accuracy": (sum(r["accuracy"] * (r["n_test"] - r["n_missing"]) for r in covered) / n_covered
                          if n_covered else None),
             "macro_f1": float(np.mean([r["macro_f1"] for r in covered])) if covered else None,
             "accuracy_with_fallback": sum(r["accuracy_with_fallback"] * r["n_test"] for r in rows) / n,
             "macro_f1_with_fallback": float(np.mean([r["macro_f1_with_fallback"] for r in rows]))}]


def evaluate_wic(fit: WicSplit, test: WicSplit, models: Sequence[LoadedModel], pooling: str = "mean",
                 batch_size: int = 32, log=None, names: Sequence[str] | None = None) -> list[dict]:
    """Records per model and layer (see the module docstring for the fields)."""
    names = list(names) if names is not None else [m.name for m in models]
    records = []
    fallback = Counter(fit.labels).most_common(1)[0][0]
    for model, model_name in zip(models, names):
        if log:
            log(f"{model_name}: embedding {2 * (len(fit.first) + len(test.first))} occurrences")
        cos = {}
        for split in (fit, test):
            cos[split.name] = [occurrence_vectors(model, split.first, pooling, batch_size),
                               occurrence_vectors(model, split.second, pooling, batch_size)]
        for layer, name in enumerate(model.layer_names):
            fit_scores = cosine_pairs(cos[fit.name][0][:, layer], cos[fit.name][1][:, layer])
            test_scores = cosine_pairs(cos[test.name][0][:, layer], cos[test.name][1][:, layer])
            threshold = choose_threshold(fit_scores, fit.labels)[0] if np.isfinite(fit_scores).any() else None
            test_pred = predict_with_threshold(test_scores, threshold)
            n_missing = sum(p is None for p in test_pred)
            records.append({
                "model": model_name, "layer": name, "threshold": threshold,
                "train_accuracy": _accuracy(fit.labels, predict_with_threshold(fit_scores, threshold)),
                "test_accuracy": _accuracy(test.labels, test_pred),
                "n_train": len(fit_scores), "n_train_missing": int(np.isnan(fit_scores).sum()),
                "n_test": len(test_scores), "n_missing": n_missing,
                "coverage": 1 - n_missing / len(test_scores),
                "test_accuracy_with_fallback": accuracy(test.labels, [fallback if p is None else p
                                                                      for p in test_pred]),
            })
    return records


def best_layers(task: str, records: list[dict]) -> dict[str, dict]:
    """Per model, the record of its best layer (wsd: by ALL accuracy; wic: by test accuracy). Layers without a
    figure (no occurrence covered) are passed over."""
    key = "accuracy" if task == "wsd" else "test_accuracy"
    best: dict[str, dict] = {}
    for r in records:
        if task == "wsd" and (r["word"] != "ALL" or r["model"] == MFS_MODEL):
            continue
        if r[key] is None:
            continue
        old = best.get(r["model"])
        if old is None or r[key] > old[key]:
            best[r["model"]] = r
    return best


def _num(x: float | None, width: int, digits: int = 3) -> str:
    return f"{'-':>{width}}" if x is None else f"{x:>{width}.{digits}f}"


def format_table(task: str, records: list[dict]) -> str:
    if task == "wic":
        lines = [f"{'model':<28} {'layer':<22} {'threshold':>9} {'train acc':>9} {'test acc':>9} {'cover':>6}"]
        for r in records:
            lines.append(f"{r['model']:<28} {r['layer']:<22} {_num(r['threshold'], 9)} {_num(r['train_accuracy'], 9)} "
                         f"{_num(r['test_accuracy'], 9)} {_num(r['coverage'], 6, 2)}")
        lines.append("(accuracies over the pairs where both words have a vector; cover: the share of test pairs "
                     "that have)")
        key = "test_accuracy"
        partial = [r for r in records if r["coverage"] < 1]
    else:
        words = list(dict.fromkeys(r["word"] for r in records if r["word"] != "ALL"))
        shown = words if len(words) <= 8 else []   # per-word columns only while the table stays readable
        lines = [f"{'model':<28} {'layer':<22} {'acc':>6} {'F1':>6} {'cover':>6}"
                 + "".join(f" {w[:8]:>8}" for w in shown)]
        for r in records:
            if r["word"] != "ALL":
                continue
            per = {x["word"]: x["accuracy"] for x in records
                   if x["model"] == r["model"] and x["layer"] == r["layer"]}
            lines.append(f"{r['model']:<28} {r['layer']:<22} {_num(r['accuracy'], 6)} {_num(r['macro_f1'], 6)} "
                         f"{_num(r['coverage'], 6, 2)}" + "".join(f" {_num(per[w], 8)}" for w in shown))
        lines.append("(acc: over the test occurrences with a vector; F1: mean macro-F1 over words; cover: the share "
                     "of test occurrences with a vector; word columns: accuracy)")
        key = "accuracy"
        partial = [r for r in records if r["word"] == "ALL" and r["coverage"] < 1]
    for model in dict.fromkeys(r["model"] for r in partial):
        rs = [r for r in partial if r["model"] == model]
        n_missing = max(r["n_missing"] for r in rs)
        lines.append(f"{model}: up to {n_missing} of {rs[0]['n_test']} test "
                     f"{'pairs' if task == 'wic' else 'occurrences'} have no vector ({len(rs)} layer(s)); they are "
                     f"left out of its figures, not guessed (the most-frequent-{'label' if task == 'wic' else 'sense'}"
                     " figures for all are in the --json output, as *_with_fallback)")
    best = best_layers(task, records)
    for model, r in best.items():
        lines.append(f"best layer of {model}: {r['layer']} ({key.replace('_', ' ')} {r[key]:.3f})")
    if len(best) > 1:
        top = max(best.values(), key=lambda r: r[key])
        lines.append(f"best overall: {top['model']}, {top['layer']}")
    return "\n".join(lines)
