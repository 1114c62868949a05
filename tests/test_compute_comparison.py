"""The objectives compared per unit of compute, as the app reads them (ctxmodels.analysis.compute_comparison): the
copy the bench's report writes, read back; no file is None; a damaged one is an error naming the problem, never a
traceback; the shipped copy is the bench's results; and the figure of one measure, with "not measured" said."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxmodels.analysis.compute_comparison import (
    MEASURES,
    from_results,
    load_comparison,
    not_measured,
    shipped_file,
)
from ctxmodels.checkpoint import CheckpointError
from ctxmodels.viz.compute_curves import measure_by_compute

ROOT = Path(__file__).resolve().parents[1]


def bench_row(kind: str, step: int, tflop: float, guess: float, pos: float | None, senses: float) -> dict:
    """A row as bench/bench_objectives.py's report writes it."""
    return {"kind": kind, "step": step, "steps": 2 * step, "flops": tflop * 1e12, "tokens_seen": 1000 * step,
            "eval": {}, "guess_accuracy": guess, "senses": {"best_macro_f1": senses, "best_layer": "layer 2"},
            "pos": None if pos is None else {"dev": {"accuracy": pos}, "test": {"accuracy": pos}}}


RESULTS = {"command": "python bench/bench_objectives.py --budget 10", "machine": "a test", "budget_bert_steps": 10,
           "pos_steps": 30, "flops_per_step": {"bert": 2e9, "gpt": 8e9},
           "rows": [bench_row("gpt", 1, 8.0, 0.2, None, 0.5), bench_row("bert", 4, 8.0, 0.15, 0.7, 0.4),
                    bench_row("bert", 2, 4.0, 0.1, 0.6, 0.3)]}


def written(tmp_path: Path, data: dict | str) -> Path:
    path = tmp_path / "compute.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_the_reports_copy_reads_back_in_the_objectives_order(tmp_path):
    c = load_comparison(written(tmp_path, from_results(RESULTS)))
    assert [(r.kind, r.step) for r in c.rows] == [("bert", 2), ("bert", 4), ("gpt", 1)]  # BERT first, by compute
    bert = c.rows[1]
    assert (bert.tflop, bert.guesses, bert.pos, bert.senses, bert.senses_layer) == (8.0, 0.15, 0.7, 0.4, "layer 2")
    assert bert.guess_task == "masked word" and c.rows[2].guess_task == "next word"
    assert c.command == RESULTS["command"] and c.pos_steps == 30 and c.gflop_per_step == {"bert": 2.0, "gpt": 8.0}
    assert not_measured(c.to_dict(), "pos") == ["gpt"] and not_measured(c.to_dict(), "guesses") == []


def test_no_file_is_none_and_the_default_is_beside_the_successors(tmp_path, monkeypatch):
    assert load_comparison(tmp_path / "nothing.json") is None
    monkeypatch.setenv("CTXMODELS_ASSETS", str(tmp_path))
    assert shipped_file() == tmp_path / "successors" / "compute.json" and load_comparison() is None


@pytest.mark.parametrize("data, said", [
    ("{not json", "not valid JSON"), ("[1, 2]", "no rows"), ({"rows": "many"}, "no rows"),
    ({"rows": [{"step": 1, "tflop": 1}]}, "row 1 names no objective"),
    ({"rows": [{"kind": "bert", "step": 1, "tflop": "lots"}]}, "no step and compute"),
    ({"rows": [{"kind": "bert", "step": 1, "tflop": float("inf")}]}, "no step and compute"),  # json reads Infinity
    ({"rows": [{"kind": "bert", "step": 1, "tflop": 1, "pos": 74.5}]}, "pos is not a share"),
    ({"rows": [{"kind": "bert", "step": 1, "tflop": 1, "senses": True}]}, "senses is not a share"),
    ({"rows": [{"kind": "bert", "step": 1, "tflop": 1}] * 1001}, "at most 1000"),
])
def test_a_damaged_file_is_an_error_that_names_the_problem(tmp_path, data, said):
    with pytest.raises(CheckpointError, match=said):
        load_comparison(written(tmp_path, data))


def test_a_huge_file_is_refused_before_it_is_read(tmp_path):
    with pytest.raises(CheckpointError, match="larger than"):
        load_comparison(written(tmp_path, " " * (2**20 + 1)))


def test_the_shipped_copy_is_the_bench_results():
    """assets/successors/compute.json is what the bench's report writes from bench/results/objectives.json: run
    `python bench/bench_objectives.py --phase report` after the results change."""
    results = json.loads((ROOT / "bench" / "results" / "objectives.json").read_text(encoding="utf-8"))
    shipped = json.loads((ROOT / "assets" / "successors" / "compute.json").read_text(encoding="utf-8"))
    assert shipped == json.loads(json.dumps(from_results(results)))
    c = load_comparison(ROOT / "assets" / "successors" / "compute.json")
    assert {r.kind for r in c.rows} == {"bert", "roberta", "albert", "electra", "gpt"}


def test_one_measure_a_line_per_objective_and_not_measured_in_the_legend(tmp_path):
    c = load_comparison(written(tmp_path, from_results(RESULTS))).to_dict()
    fig = measure_by_compute(c["rows"], "pos", MEASURES["pos"], not_measured(c, "pos"), title="<b>x</b>")
    bert, gpt = fig.data
    assert list(bert.x) == [4.0, 8.0] and list(bert.y) == [60.0, 70.0]
    assert gpt.name.endswith(": not measured") and list(gpt.x) == [None]
    assert fig.layout.title.text == "&lt;b&gt;x&lt;/b&gt;" and fig.layout.yaxis.ticksuffix == "%"
    guesses = measure_by_compute(c["rows"], "guesses", MEASURES["guesses"]).data
    assert [t.name.endswith("not measured") for t in guesses] == [False, False]
