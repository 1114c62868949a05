"""The objectives compared per unit of compute, as the app shows them: ``bench/bench_objectives.py`` trains every
objective (BERT, RoBERTa, ALBERT, ELECTRA, GPT) to the same number of operations and measures snapshots on the way;
its report keeps a small copy of the results beside the shipped successors (``assets/successors/compute.json``),
which :func:`load_comparison` reads, so a fresh install shows the comparison without the bench's runs.

One row per snapshot: the objective, its step of its run, the operations spent so far (TFLOP) and three measures,
each a share in 0..1 or None where it was not measured:

- ``guesses``: held-out guesses right (the masked word; ELECTRA's generator's masked word; a GPT's next word);
- ``pos``: part-of-speech accuracy on SemCor's test split after a short fine-tuning;
- ``senses``: SemCor word senses, the best layer's macro-F1 (leave-one-out nearest neighbour per lemma).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..checkpoint import CheckpointError
from ..paths import assets_dir

FILE = "compute.json"
MAX_BYTES = 2**20  # a few dozen rows: anything larger is not this file
MAX_ROWS = 1000
#: the measures, each with the words a figure's axis shows
MEASURES = {"guesses": "held-out guesses right", "pos": "part of speech after fine-tuning",
            "senses": "word senses, best layer (macro-F1)"}
#: what "held-out guesses" are for each objective (each guesses something else)
GUESS_TASKS = {"bert": "masked word", "roberta": "masked word", "albert": "masked word",
               "electra": "masked word (its generator)", "gpt": "next word"}


@dataclass(frozen=True)
class ComputeRow:
    """One snapshot: ``kind`` after ``step`` of its ``steps``, ``tflop`` operations spent, and its measures."""

    kind: str
    step: int
    steps: int
    tflop: float
    tokens_seen: int | None
    guesses: float | None
    pos: float | None
    senses: float | None
    senses_layer: str | None = None
    guess_task: str = ""


@dataclass(frozen=True)
class ComputeComparison:
    """The comparison as shipped: its rows and how they were made."""

    rows: list[ComputeRow]
    command: str = ""
    machine: str = ""
    budget_bert_steps: int | None = None
    pos_steps: int | None = None
    gflop_per_step: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def not_measured(comparison: dict[str, Any], measure: str) -> list[str]:
    """The objectives of ``comparison`` (as :meth:`ComputeComparison.to_dict` gives it) with no value of
    ``measure`` at any snapshot (a GPT's part of speech, where ``ctxmodels finetune`` did not fine-tune one)."""
    rows = comparison["rows"]
    kinds = dict.fromkeys(r["kind"] for r in rows)
    return [k for k in kinds if all(r[measure] is None for r in rows if r["kind"] == k)]


def shipped_file() -> Path:
    """Where the app's copy of the comparison lives: ``successors/compute.json`` of the assets folder."""
    return assets_dir() / "successors" / FILE


# ----------------------------------------------------------------------------------------------------------
# writing: from the bench's results


def from_results(results: dict[str, Any]) -> dict[str, Any]:
    """The app's copy of ``bench/bench_objectives.py``'s results (its report's JSON): the rows' measures only."""
    rows = []
    for r in results.get("rows", []):
        pos, senses = r.get("pos") or {}, r.get("senses") or {}
        rows.append({"kind": r["kind"], "step": r["step"], "steps": r["steps"], "tflop": r["flops"] / 1e12,
                     "tokens_seen": r.get("tokens_seen"), "guesses": r.get("guess_accuracy"),
                     "pos": (pos.get("test") or {}).get("accuracy"), "senses": senses.get("best_macro_f1"),
                     "senses_layer": senses.get("best_layer"), "guess_task": GUESS_TASKS.get(r["kind"], "")})
    flops = results.get("flops_per_step", {})
    return {"about": "bench/bench_objectives.py's results as the app shows them (written by its report)",
            "command": results.get("command", ""), "machine": results.get("machine", ""),
            "budget_bert_steps": results.get("budget_bert_steps"), "pos_steps": results.get("pos_steps"),
            "gflop_per_step": {k: v / 1e9 for k, v in flops.items()}, "rows": rows}


# ----------------------------------------------------------------------------------------------------------
# reading: checked, as a file a visitor never wrote but an operator may have damaged


def load_comparison(path: str | Path | None = None) -> ComputeComparison | None:
    """The comparison in ``path`` (default :func:`shipped_file`); None when there is no such file, CheckpointError
    naming the problem when it is not a comparison."""
    path = Path(path) if path is not None else shipped_file()
    if not path.is_file():
        return None
    if path.stat().st_size > MAX_BYTES:
        raise CheckpointError(f"{path.name} is larger than {MAX_BYTES // 2**20} MB: not a comparison file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path.name} is not valid JSON ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise CheckpointError(f"{path.name} holds no rows of measures")
    if len(data["rows"]) > MAX_ROWS:
        raise CheckpointError(f"{path.name} has {len(data['rows']):,} rows; a comparison has at most {MAX_ROWS}")
    rows = [_row(r, i, path.name) for i, r in enumerate(data["rows"])]
    flops = data.get("gflop_per_step") if isinstance(data.get("gflop_per_step"), dict) else {}
    return ComputeComparison(
        rows=sorted(rows, key=lambda r: (_order(r.kind), r.tflop)), command=_text(data.get("command")),
        machine=_text(data.get("machine")), budget_bert_steps=_count(data.get("budget_bert_steps")),
        pos_steps=_count(data.get("pos_steps")),
        gflop_per_step={_text(k): float(v) for k, v in flops.items() if _number(v)})


def _row(r: Any, i: int, name: str) -> ComputeRow:
    if not isinstance(r, dict) or not isinstance(r.get("kind"), str) or not r["kind"].strip():
        raise CheckpointError(f"{name}: row {i + 1} names no objective")
    if not _number(r.get("tflop")) or r["tflop"] < 0 or _count(r.get("step")) is None:
        raise CheckpointError(f"{name}: row {i + 1} ({_text(r['kind'])}) has no step and compute")
    measures = {}
    for key in MEASURES:
        value = r.get(key)
        if value is not None and not (_number(value) and 0 <= value <= 1):
            raise CheckpointError(f"{name}: row {i + 1} ({_text(r['kind'])}): {key} is not a share between 0 and 1")
        measures[key] = None if value is None else float(value)
    return ComputeRow(kind=_text(r["kind"]), step=r["step"], steps=_count(r.get("steps")) or r["step"],
                      tflop=float(r["tflop"]), tokens_seen=_count(r.get("tokens_seen")),
                      senses_layer=_text(r.get("senses_layer")) or None, guess_task=_text(r.get("guess_task")),
                      **measures)


def _order(kind: str) -> int:
    order = list(GUESS_TASKS)
    return order.index(kind) if kind in order else len(order)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _count(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def _text(v: Any, limit: int = 400) -> str:
    return v[:limit] if isinstance(v, str) else ""
