"""The measuring and shipping tools behind the model cards, on tiny models made here."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from ctxmodels import cli
from ctxmodels.checkpoint import CheckpointError, file_sha256, load_tensors
from ctxmodels.elmo import ElmoConfig
from ctxmodels.release import quality
from ctxmodels.release.shipping import BEGIN, measured_section, ship, write_card
from ctxmodels.text import read_documents
from ctxmodels.training import bert_task, elmo_task
from ctxmodels.training.elmo_task import ElmoLMTask, EncodedCorpus
from tests.helpers import synthetic_corpus, write_corpus


@pytest.fixture(autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)


def test_bert_heldout_metrics_rebuild_the_training_evaluation(tmp_path):
    """From the model and the corpus alone: the same fixed held-out set, so the same figures as training's."""
    corpus = tmp_path / "c.txt"
    corpus.write_text(synthetic_corpus(), encoding="utf-8")
    settings = bert_task.BertSettings.resolve(dict(corpus=corpus, vocab_size=150, preset="tiny", max_seq_len=32,
                                                   batch_size=8, eval_sequences=24), tmp_path / "run")
    task, _ = bert_task.build_task(settings, tmp_path / "run")
    model = task.model.eval()
    during_training = task.evaluate(model)
    again = bert_task.heldout_metrics(model, task.tokenizer, corpus, n_sequences=24, max_seq_len=32)
    assert again.keys() == during_training.keys()
    for k in again:
        assert again[k] == pytest.approx(during_training[k], rel=1e-5), k


def test_elmo_heldout_metrics_with_a_shipped_vocabulary(tmp_path):
    corpus = write_corpus(tmp_path / "c.txt", n_docs=4)
    docs = read_documents(corpus)
    # heldout_indices(4, None, 0) holds out one document; build the task the way a training run would.
    from ctxmodels.training.corpus import heldout_indices

    held = heldout_indices(len(docs), None, 0)
    encoded = EncodedCorpus.build([d for i, d in enumerate(docs) if i not in held], [docs[i] for i in held], 30)
    task = ElmoLMTask(encoded, ElmoConfig.preset("tiny"), seq_len=8, batch_size=4, n_samples=0, eval_tokens=400)
    lm = task.model.eval()
    lm.vocab = encoded.vocab.words
    expected = task.evaluate(lm)
    got = elmo_task.heldout_metrics(lm, encoded.vocab.words, corpus, eval_tokens=400, seq_len=8)
    for k in ("fwd_ppl", "bwd_ppl", "ppl"):
        assert got[k] == pytest.approx(expected[k], rel=1e-5)
    assert got["eval_tokens"] > 0 and 0 <= got["oov_rate"] < 1


def test_half_precision_weights_load_as_float32(tmp_path):
    from ctxmodels.checkpoint import save_tensors

    save_tensors(tmp_path / "w.safetensors", {"a": torch.randn(3, 2).half(), "b": torch.arange(3)})
    state = load_tensors(tmp_path / "w.safetensors")
    assert state["a"].dtype == torch.float32 and state["b"].dtype == torch.int64


@pytest.fixture(scope="module")
def tiny_assets(tmp_path_factory) -> Path:
    from tests.app_fixtures import build_tiny_assets

    return build_tiny_assets(tmp_path_factory.mktemp("assets"))


def test_ship_halves_weights_and_leaves_training_state_behind(tmp_path, tiny_assets):
    run = tmp_path / "run"
    import shutil

    shutil.copytree(tiny_assets / "static-eltec", run)
    (run / "checkpoint").mkdir()
    (run / "checkpoint" / "trainer_state.pt").write_bytes(b"x")
    (run / "metrics.jsonl").write_text("{}\n")
    out = ship(run, tmp_path / "asset")
    assert not (out / "checkpoint").exists() and (out / "metrics.jsonl").is_file()
    from safetensors import safe_open

    with safe_open(str(out / "model.safetensors"), framework="pt") as f:
        assert all(f.get_tensor(k).dtype == torch.float16 for k in f.keys())
    from ctxmodels import load

    a, b = load(str(run)), load(str(out))
    va, vb = a.model._matrix(), b.model._matrix()
    assert vb.dtype == np.float32 and np.allclose(va, vb, atol=1e-2)
    assert quality.weights_dtype(out) == "fp16" and quality.weights_dtype(run) == "fp32"
    kept = ship(run, tmp_path / "asset32", half=False)  # --fp32: for a model whose figures fp16 would move
    assert quality.weights_dtype(kept) == "fp32"
    with pytest.raises(CheckpointError, match="no model.safetensors"):
        ship(tmp_path / "nothing-here", tmp_path / "x")


def test_measure_report_and_card_section(tmp_path, tiny_assets, shipped_semcor):
    import shutil

    from ctxmodels import load
    from ctxmodels.semcor import load_semcor

    assets = tmp_path / "assets"
    for name in ("bert-eltec", "static-eltec"):
        shutil.copytree(tiny_assets / name, assets / name)
    models = [load(str(assets / n)) for n in ("bert-eltec", "static-eltec")]
    for m, n in zip(models, ("bert-eltec", "static-eltec")):
        m.name = n
    report = quality.measure(models, load_semcor(shipped_semcor), tiny_assets / "corpus.txt",
                             bert_sequences=16, lemmas=("bank", "run"), probes=False, log=lambda _: None)
    bert = report["models"]["bert-eltec"]
    assert bert["weights_sha256"] == file_sha256(assets / "bert-eltec" / "model.safetensors")
    assert 0 <= bert["heldout"]["mlm_accuracy"] <= bert["heldout"]["mlm_top5_accuracy"] <= 1
    assert bert["cloze"]["n"] == len(quality.read_cloze()) == 50
    classroom = bert["classroom"]
    assert [r["answers"] for r in classroom["rows"]] == [["bank"], ["banks"], ["paris"]]
    for r in bert["cloze"]["rows"] + classroom["rows"]:
        # the rank is where the best answer stands among the guesses; within the top 5 exactly when counted there
        assert (r["rank"] is not None and r["rank"] <= 5) == r["in_top_k"]
        assert r["rank"] is None or 1 <= r["rank"] <= quality.RANK_DEPTH
    card = measured_section("bert-eltec", report, "ctxmodels quality ...")
    assert "### The classroom sentences" in card and "| The capital of France is [MASK]. | paris |" in card
    assert len(report["models"]["static-eltec"]["neighbours"]) == 10
    records = report["senses"]["records"]
    # every model is scored on the same occurrences of each lemma
    for lemma in ("bank", "run"):
        assert len({r["n"] for r in records if r["lemma"] == lemma}) == 1
    summary = report["senses"]["summary"]
    assert set(summary["bert-eltec"]["layers"]) == set(models[0].layer_names)
    assert "best_layer" in summary["bert-eltec"] and "best_layer" not in summary["static-eltec"]
    best = summary["bert-eltec"]["best_layer"]
    assert summary["bert-eltec"]["gain_macro_f1_points"] == pytest.approx(
        100 * (summary["bert-eltec"]["layers"][best]["macro_f1"] - summary["bert-eltec"]["layers"]["embeddings"]
               ["macro_f1"]))
    json.dumps(report)  # the report is plain JSON

    card = write_card(assets / "bert-eltec", report, "ctxmodels quality …")
    assert f"shipped {bert['weights_dtype']} weights" in card and f"| {bert['weights_dtype']} (shipped) |" in card
    assert card.count(BEGIN) == 1 and bert["weights_sha256"] in card and "Cloze check" in card
    again = write_card(assets / "bert-eltec", report, "ctxmodels quality …")  # replaces, never duplicates
    assert again == card
    assert measured_section("bert-eltec", report, "ctxmodels quality …") in card
    (assets / "bert-eltec" / "model.safetensors").write_bytes(b"other weights")
    with pytest.raises(CheckpointError, match="other weights"):
        write_card(assets / "bert-eltec", report, "x")


def test_mfs_and_missing_vectors_in_sense_records():
    # a lemma with 3 occurrences of sense a, 2 of b; the static model lacks a vector for one occurrence of b
    X = np.array([[1, 0], [1, 0.1], [0.9, 0.2], [0, 1], [np.nan, np.nan], [0.1, 1]], dtype=np.float32)
    y = np.array([0, 0, 0, 1, 1, 1])
    r = quality._knn_record("m", "static", 0, "w", X, y)
    # figures over the 5 covered occurrences (all right), not the commonest sense (0) guessed for the sixth
    assert r["without_vector"] == 1 and r["n"] == 6 and r["accuracy"] == 1.0 and r["macro_f1"] == 1.0
    none = quality._knn_record("m", "static", 0, "w", np.full((3, 2), np.nan), np.array([0, 1, 1]))
    assert none["accuracy"] is None and none["macro_f1"] is None and none["without_vector"] == 3
    summary = quality.sense_summary([r, {**none, "lemma": "v"}], {"m": 0})
    assert summary["m"]["layers"]["static"]["accuracy"] == 1.0  # the mean over the lemmas with a figure
    assert quality.format_summary({"models": {}, "senses": {"summary": quality.sense_summary([none], {})}}) \
        == "m static: senses: no occurrence has a vector"


def test_cli_quality_and_ship_cards(tmp_path, tiny_assets, capsys):
    out = tmp_path / "q.json"
    rc = cli.main(["quality", "--model", str(tiny_assets / "static-eltec"), "--no-senses", "--out", str(out)])
    assert rc == 0 and "neighbours" in json.loads(out.read_text())["models"]["static-eltec"]
    assert cli.main(["quality", "--model", str(tmp_path / "missing")]) != 0
    assert "missing" in capsys.readouterr().err


def test_read_cloze_rejects_a_line_without_mask(tmp_path):
    bad = tmp_path / "cloze.tsv"
    bad.write_text("No mask here.\tword\n", encoding="utf-8")
    with pytest.raises(ValueError, match="cloze.tsv:1"):
        quality.read_cloze(bad)
    assert all("[MASK]" in s and answers for s, answers in quality.read_cloze())


def test_bert_section_explains_the_training_runs_own_top1():
    """The training card's top-1 is the run's last evaluation; the measured section says how it relates to its own."""
    held = {"mlm_accuracy": 0.369, "mlm_top5_accuracy": 0.579, "mlm_perplexity": 39.2, "nsp_accuracy": 0.94}
    report = {"models": {"b": {"kind": "bert", "weights_sha256": "0" * 64, "weights_dtype": "fp32",
                               "heldout": held, "heldout_sequences": 2048}},
              "corpus": {"file": "c.txt", "sha256": "0" * 64, "documents": 9, "heldout": [{"index": 3}, {"index": 7}]}}
    settings = {"seed": 0, "max_seq_len": 128, "max_predictions": 20, "whole_word_masking": False,
                "heldout_docs": 2, "eval_sequences": 256}
    training = {"step": 500, "metrics": {"mlm_accuracy": 0.3738}, "settings": settings}
    text = measured_section("b", report, "q", training)
    note = text[text.index("**Two top-1 figures.**"):].split("\n")[0]
    assert "37.4%" in note and "36.9%" in note and "(step 500)" in note
    assert "whose first 256 are those same sequences" in note and "8 times the sample" in note
    other = measured_section("b", report, "q", {**training, "settings": {**settings, "seed": 3}})
    assert "drawn with that run's own settings" in other and "first 256" not in other
    assert "Two top-1" not in measured_section("b", report, "q")  # no training run known: nothing to reconcile


_ENTRY = {"kind": "static", "weights_sha256": "0" * 64}
WRONG_REPORTS = [  # (report, the field the error names, whether quality --fp32-report reads that field)
    ([{"models": {}}], "expected a JSON object", True),
    ({}, "models is missing", True),
    ({"models": []}, "models should be an object, found a list", True),
    ({"models": {"static-eltec": {**_ENTRY, "kind": 3}}}, "models.static-eltec.kind should be a string", True),
    ({"models": {"static-eltec": {"kind": "static"}}}, "models.static-eltec.weights_sha256 is missing", True),
    ({"models": {"static-eltec": {**_ENTRY, "neighbours": {"bank": [["river"]]}}}},
     "models.static-eltec.neighbours.bank[0] should be a list of 2, found a list of 1", True),
    ({"models": {"static-eltec": {**_ENTRY, "cloze": {"n": 1, "top_k": 5, "share_in_top_k": "1", "share_top1": 0,
                                                      "rows": []}}}},
     "models.static-eltec.cloze.share_in_top_k should be a number, found a string", True),
    ({"models": {"other": _ENTRY}}, "models.static-eltec is missing", False),
    ({"models": {"static-eltec": _ENTRY}, "corpus": ["eltec"]}, "corpus should be an object, found a list", False),
    ({"models": {"static-eltec": _ENTRY}, "senses": {"summary": {"m": {"layers": {}, "best_layer": "x"}},
                                                     "lemmas": [], "records": []}},
     "senses.summary.m: best_layer 'x' without its layer", False),
    ({"models": {"static-eltec": _ENTRY}, "probes": {"static-eltec": {"pos": {"layers": "abc"}}}},
     "probes.static-eltec.pos.layers should be a list, found a string", False),
]


@pytest.mark.parametrize("report, field, fp32", WRONG_REPORTS, ids=[w[1][:40] for w in WRONG_REPORTS])
def test_a_report_of_the_wrong_shape_is_one_line_naming_the_field(tmp_path, tiny_assets, capsys, report, field, fp32):
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    commands = [["ship", "--cards", str(path), str(tiny_assets / "static-eltec")]]
    if fp32:
        commands.append(["quality", "--model", str(tiny_assets / "static-eltec"), "--no-senses", "--fp32-report",
                         str(path)])
    for argv in commands:
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and str(path) in err and field in err, (argv, err)
