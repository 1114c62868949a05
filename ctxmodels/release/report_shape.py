"""The shape of a ``ctxmodels quality --out`` report, checked before anything reads it.

``ship --cards`` and ``quality --fp32-report`` take a report a person may have edited or mixed up with another JSON
file; :func:`check_report` and :func:`check_models` turn a list where an object belongs, a missing key or a string
where a number belongs into one :class:`~ctxmodels.checkpoint.CheckpointError` naming the file and the field
(``report.json: models.bert-eltec.cloze.share_in_top_k should be a number, found a string``), instead of a
KeyError or a TypeError from deep inside the card writer.

A spec is a type (:data:`NUM`, :data:`INT`, :data:`STR`, ...), a dict (``"?key"`` optional, ``"*"`` every key),
a one-item list (every item) or a tuple (a list of exactly those items). Keys a spec does not name are allowed:
newer reports may hold more.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..checkpoint import CheckpointError


class _Type:
    def __init__(self, words: str, test):
        self.words, self.test = words, test


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


NUM = _Type("a number", _is_num)
INT = _Type("a whole number", lambda v: isinstance(v, int) and not isinstance(v, bool))
STR = _Type("a string", lambda v: isinstance(v, str))
FLAG = _Type("true/false or a number", lambda v: isinstance(v, (bool, int, float)))
RANK = _Type("a whole number or null", lambda v: v is None or INT.test(v))

_FIGURES = {"*": NUM}
_CLOZE = {"n": INT, "top_k": INT, "share_in_top_k": NUM, "share_top1": NUM, "rows": [{"in_top_k": FLAG}]}
_CLASSROOM = {**_CLOZE, "rows": [{"sentence": STR, "answers": [STR], "top": [STR], "?rank": RANK}]}
ENTRY = {"kind": STR, "weights_sha256": STR, "?weights_dtype": STR, "?heldout": _FIGURES, "?cloze": _CLOZE,
         "?classroom": _CLASSROOM, "?neighbours": {"*": [(STR, NUM)]}, "?heldout_sequences": INT,
         # BERT's successors (release/successors.py): which training wrote the model, how its held-out set was drawn
         "?trained_as": STR, "?heldout_settings": {"source": STR, "seed": INT, "max_seq_len": INT}}
_SENSES = {"summary": {"*": {"layers": {"*": {"accuracy": NUM, "macro_f1": NUM}}, "?best_layer": STR,
                             "?static_layer": STR, "?gain_macro_f1_points": NUM}},
           "lemmas": [STR], "records": [{"n": NUM, "model": STR, "layer_index": INT}]}
_PROBE = {"layers": [STR], "layer_accuracy": [NUM], "mix_accuracy": NUM, "mix_weights": [NUM], "gamma": NUM}
_CORPUS = {"file": STR, "sha256": STR, "documents": INT, "heldout": [{"index": INT, "?title": STR, "?author": STR}]}
REPORT = {"models": {"*": ENTRY}, "?corpus": _CORPUS, "?senses": _SENSES, "?probes": {"*": {"*": _PROBE}},
          "?fp32": {"*": {"?heldout": _FIGURES, "?cloze": _CLOZE}}}

_JSON_TYPES = {dict: "an object", list: "a list", str: "a string", bool: "true/false", type(None): "null",
               int: "a number", float: "a number"}


def _problem(value: Any, spec: Any, field: str) -> str | None:
    """What is wrong at ``field`` (None: nothing), the first problem found."""
    if isinstance(spec, _Type):
        return None if spec.test(value) else f"{field} should be {spec.words}, found {_JSON_TYPES[type(value)]}"
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            return f"{field or 'the file'} should be an object, found {_JSON_TYPES[type(value)]}"
        for key, inner in spec.items():
            names = value if key == "*" else [key.lstrip("?")]
            for name in names:
                if name not in value:
                    if not key.startswith("?"):
                        return f"{field + '.' if field else ''}{name} is missing"
                    continue
                problem = _problem(value[name], inner, f"{field + '.' if field else ''}{name}")
                if problem:
                    return problem
        return None
    if not isinstance(value, list) or isinstance(spec, tuple) and len(value) != len(spec):
        size = f"a list of {len(spec)}" if isinstance(spec, tuple) else "a list"
        shown = f"a list of {len(value)}" if isinstance(value, list) else _JSON_TYPES[type(value)]
        return f"{field} should be {size}, found {shown}"
    specs = spec if isinstance(spec, tuple) else spec * len(value)
    return next((p for i, (v, s) in enumerate(zip(value, specs)) if (p := _problem(v, s, f"{field}[{i}]"))), None)


def _links(report: dict[str, Any]) -> str | None:
    """Fields the card reads through others: a best layer among the layers, an author beside a title."""
    for model, mine in report.get("senses", {}).get("summary", {}).items():
        best = mine.get("best_layer")
        if best is not None and (best not in mine["layers"] or "gain_macro_f1_points" not in mine
                                 or "static_layer" not in mine):
            return f"senses.summary.{model}: best_layer {best!r} without its layer, static_layer or gain"
    for i, d in enumerate((report.get("corpus") or {}).get("heldout", [])):
        if d.get("title") and "author" not in d:
            return f"corpus.heldout[{i}].author is missing"
    return None


def check_report(report: Any, path: str | Path) -> dict[str, Any]:
    """``report`` when it has the shape of a quality report; CheckpointError naming the file and field if not."""
    problem = _problem(report, REPORT, "") or _links(report)
    if problem:
        raise CheckpointError(f"{path}: not a report of ctxmodels quality as the cards read it: {problem}")
    return report


def check_models(report: Any, path: str | Path) -> dict[str, Any]:
    """The per-model figures (``models``) of a quality report, checked as :func:`check_report` does."""
    problem = _problem(report, {"models": {"*": ENTRY}}, "")
    if problem:
        raise CheckpointError(f"{path}: not a report of ctxmodels quality: {problem}")
    return report["models"]
