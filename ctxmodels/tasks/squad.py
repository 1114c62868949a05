"""Extractive question answering from a user's file in SQuAD v1.1 form, and how its answers are scored.

The file (Rajpurkar et al. 2016) is ``{"data": [{"title": ..., "paragraphs": [{"context": ..., "qas": [{"id": ...,
"question": ..., "answers": [{"text": ..., "answer_start": ...}, ...]}, ...]}, ...]}, ...]}``: every answer is a
piece of its paragraph, ``context[answer_start : answer_start + len(text)] == text``, checked here with a message
that says where it is not. The split is by article (its ``title``) when the file has three or more, else by
paragraph: questions on one text never land in two splits.

Scoring is the official SQuAD v1.1 evaluation script's: both answers normalised (lower case, punctuation removed,
the articles a/an/the removed, white space collapsed); exact match is 1 where they are then equal, F1 the overlap
of their words; each prediction gets the best score over the question's gold answers. :func:`squad_scores`
gives them as fractions (the script prints them x 100). :func:`best_span` is the decoding step: the highest
start + end score over the valid spans of a window.
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..encoding import Encoded
from .data import SPLIT_SEED, TaskData, TaskError
from .splits import assemble
from .user_files import MAX_FILE_BYTES, MIN_USER_EXAMPLES

WHAT = "SQuAD v1.1 JSON file"
_PUNCTUATION = frozenset(string.punctuation)


@dataclass(frozen=True)
class QaExample:
    """One question on one paragraph, with its gold answers as (text, character start in ``context``)."""

    id: str
    question: str
    context: str
    answers: tuple[tuple[str, int], ...]
    doc: str  # the article (or paragraph) it comes from; a split never cuts through one


# ----------------------------------------------------------------------------------------------------------
# reading


def _load_json(path: Path) -> object:
    if not path.is_file():
        raise TaskError(f"{path}: file not found (a question-answering task is a {WHAT})")
    size = path.stat().st_size
    if size == 0:
        raise TaskError(f"{path}: the file is empty; a {WHAT} holds {{\"data\": [articles]}}")
    if size > MAX_FILE_BYTES:
        raise TaskError(f"{path}: {size / 2**20:.0f} MB is more than the {MAX_FILE_BYTES // 2**20} MB a task file "
                        "may have; sample it down first")
    try:
        return json.loads(path.read_bytes().decode("utf-8-sig"))
    except UnicodeDecodeError as e:
        raise TaskError(f"{path}: not UTF-8 ({e.reason} at byte {e.start}); convert the file") from None
    except json.JSONDecodeError as e:
        raise TaskError(f"{path}, line {e.lineno}, column {e.colno}: not valid JSON ({e.msg}); a {WHAT} holds "
                        "{\"data\": [articles]}") from None


def _field(obj: object, key: str, kind: type, where: str, path: Path) -> object:
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, kind) or isinstance(value, bool):
        shown = "is missing" if not isinstance(obj, dict) or key not in obj else f"is not a {kind.__name__}"
        raise TaskError(f"{path}: {where}: \"{key}\" {shown}; a {WHAT} has data -> paragraphs (context, qas) -> qas "
                        "(id, question, answers: text, answer_start)")
    return value


def _answers(qa: dict, context: str, where: str, path: Path) -> tuple[tuple[str, int], ...]:
    out = []
    for k, ans in enumerate(_field(qa, "answers", list, where, path)):
        text = _field(ans, "text", str, f"{where}, answer {k + 1}", path)
        start = _field(ans, "answer_start", int, f"{where}, answer {k + 1}", path)
        if not text.strip():
            raise TaskError(f"{path}: {where}, answer {k + 1}: the answer text is empty")
        if context[start : start + len(text)] != text:
            found = context[max(start, 0) : max(start, 0) + len(text)]
            raise TaskError(f"{path}: {where}, answer {k + 1}: the answer {text[:60]!r} is not at answer_start "
                            f"{start} of its context (it has {found[:60]!r} there); fix answer_start")
        out.append((text, start))
    if not out:
        raise TaskError(f"{path}: {where}: no answers; SQuAD v1.1 questions have at least one (v2.0's unanswerable "
                        "questions are not supported)")
    return tuple(out)


def read_squad_task(path: str | Path, seed: int = SPLIT_SEED) -> TaskData:
    """A question-answering task (kind "qa", examples :class:`QaExample`) from a SQuAD v1.1 JSON file, split
    80/10/10 by article (three or more) or by paragraph. TaskError with where and what to fix."""
    path = Path(path)
    data = _field(_load_json(path), "data", list, "the top level", path)
    examples: list[QaExample] = []
    ids: set[str] = set()
    for a, article in enumerate(data, start=1):
        title = article.get("title") if isinstance(article, dict) else None
        title = title.strip() if isinstance(title, str) and title.strip() else f"article {a}"
        for p, par in enumerate(_field(article, "paragraphs", list, f"article {a}", path), start=1):
            context = _field(par, "context", str, f"article {a}, paragraph {p}", path)
            for q, qa in enumerate(_field(par, "qas", list, f"article {a}, paragraph {p}", path), start=1):
                where = f"article {a}, paragraph {p}, question {q}"
                qid = str(qa.get("id", f"{a}.{p}.{q}")) if isinstance(qa, dict) else ""
                question = _field(qa, "question", str, where, path)
                if not question.strip():
                    raise TaskError(f"{path}: {where}: the question is empty")
                if qid in ids:
                    raise TaskError(f"{path}: {where}: the id {qid!r} is used twice; every question needs its own")
                ids.add(qid)
                examples.append(QaExample(qid, question, context, _answers(qa, context, where, path),
                                          f"{title} #{p}"))
    if len(examples) < MIN_USER_EXAMPLES:
        raise TaskError(f"{path}: {len(examples)} question(s); a task needs at least {MIN_USER_EXAMPLES} to fill a "
                        "train, dev and test split")
    by_article = len({e.doc.rsplit(" #", 1)[0] for e in examples}) >= 3
    groups = [e.doc.rsplit(" #", 1)[0] if by_article else e.doc for e in examples]
    unit = "article" if by_article else "paragraph"
    description = (f"A user's task from {path.name}: extractive question answering (the answer is a span of the "
                   f"paragraph). Split by {unit} (80/10/10 of the questions).")
    return assemble(path.stem, "qa", (), examples, groups, description, f"{path.name} (user file, SQuAD v1.1)",
                    unit, seed=seed)


# ----------------------------------------------------------------------------------------------------------
# scoring, as the official SQuAD v1.1 script


def normalize_answer(s: str) -> str:
    """Lower case, no punctuation, no articles (a, an, the), single spaces: the official script's order."""
    s = "".join(ch for ch in s.lower() if ch not in _PUNCTUATION)
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1(prediction: str, gold: str) -> float:
    """The harmonic mean of precision and recall over the normalised answers' words (0 with no word shared)."""
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def squad_scores(predictions: Sequence[str], golds: Sequence[Sequence[str]]) -> dict[str, float]:
    """Mean exact match and F1 (fractions), each the best over the question's gold answers."""
    if len(predictions) != len(golds):
        raise ValueError(f"{len(predictions)} predictions for {len(golds)} questions")
    if not predictions:
        return {"exact_match": float("nan"), "f1": float("nan"), "n": 0}
    em = [max(exact_match(p, g) for g in gs) for p, gs in zip(predictions, golds)]
    f = [max(f1(p, g) for g in gs) for p, gs in zip(predictions, golds)]
    return {"exact_match": float(np.mean(em)), "f1": float(np.mean(f)), "n": len(predictions)}


def best_span(start: np.ndarray, end: np.ndarray, allowed: np.ndarray, max_answer_length: int
              ) -> tuple[float, int, int] | None:
    """(score, first, last) of the span with the highest ``start[first] + end[last]`` among the valid ones: both
    ends ``allowed`` (pieces of the context), ``last >= first``, at most ``max_answer_length`` pieces; None when
    no span is valid."""
    start, end, allowed = np.asarray(start, np.float64), np.asarray(end, np.float64), np.asarray(allowed, bool)
    n = len(start)
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    valid = (j >= i) & (j - i < max_answer_length) & allowed[:, None] & allowed[None, :]
    if not valid.any():
        return None
    scores = np.where(valid, start[:, None] + end[None, :], -np.inf)
    first, last = np.unravel_index(int(np.argmax(scores)), scores.shape)
    return float(scores[first, last]), int(first), int(last)


def context_mask(window: Encoded) -> np.ndarray:
    """True at the pieces of the paragraph that cover some characters (the only ones an answer may start or end
    at)."""
    return np.array([s == 1 and e > b for s, (b, e) in zip(window.sequence_ids, window.offsets)], bool)


def answer_positions(window: Encoded, start_char: int, end_char: int) -> tuple[int, int]:
    """(first piece, last piece) of the answer at characters [start_char, end_char) of the paragraph, or (0, 0)
    when this window does not hold all of it."""
    inside = np.flatnonzero(context_mask(window))
    if not len(inside) or window.offsets[inside[0]][0] > start_char or window.offsets[inside[-1]][1] < end_char:
        return 0, 0
    first = next(int(t) for t in inside if window.offsets[t][1] > start_char)
    last = next(int(t) for t in inside[::-1] if window.offsets[t][0] < end_char)
    return (first, last) if last >= first else (0, 0)


def decode_answer(context: str, windows: Sequence[Encoded], starts: Sequence[np.ndarray],
                  ends: Sequence[np.ndarray], max_answer_length: int) -> tuple[str, float]:
    """The best valid span over all the windows of one question: (its text in ``context``, its score); ("", -inf)
    when no window has a valid span."""
    best: tuple[float, str] = (float("-inf"), "")
    for window, s, e in zip(windows, starts, ends):
        found = best_span(s[: len(window)], e[: len(window)], context_mask(window), max_answer_length)
        if found is not None and found[0] > best[0]:
            _, first, last = found
            best = (found[0], context[window.offsets[first][0] : window.offsets[last][1]])
    return best[1], best[0]
