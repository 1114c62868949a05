"""The shipped default models (assets/minilm-eltec, bert-eltec, elmo-eltec, static-eltec) and the figures in their
cards.

The fast tests load each model by its short name and use it as a user would. The card tests check that each
card names the sha256 of the weights beside it and that its measured section is exactly what
``assets/quality.json`` (the output of ``ctxmodels quality``) renders to; some figures are then measured again
here on the shipped files (the slow ones only in the slow tests).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

import ctxmodels
from ctxmodels.checkpoint import file_sha256, read_json
from ctxmodels.release import quality
from ctxmodels.release.shipping import BEGIN, END, measured_section, training_evaluation

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "assets"
NAMES = ("minilm-eltec", "bert-eltec", "elmo-eltec", "static-eltec")


@pytest.fixture(autouse=True)
def _shipped_assets(monkeypatch):
    monkeypatch.delenv("CTXMODELS_ASSETS", raising=False)  # the repository's own assets/


@pytest.fixture(scope="module")
def report() -> dict:
    return read_json(ASSETS / "quality.json")


@pytest.fixture(scope="module")
def models() -> dict:
    os.environ.pop("CTXMODELS_ASSETS", None)
    return {name: ctxmodels.load(name) for name in NAMES}


def test_assets_stay_small():
    total = sum(f.stat().st_size for f in ASSETS.rglob("*") if f.is_file())
    assert total < 150e6, f"assets/ holds {total / 1e6:.1f} MB: the ceiling is 150 MB"


def test_each_model_loads_by_name_and_reports_its_layers(models):
    bert, elmo, static = models["bert-eltec"], models["elmo-eltec"], models["static-eltec"]
    assert bert.kind == "bert" and bert.can_fill_mask and bert.has_attention
    assert bert.layer_names == ["embeddings"] + [f"layer {i}" for i in range(1, len(bert.layer_names))]
    assert elmo.kind == "elmo" and elmo.has_lm
    assert elmo.layer_names == ["layer 0 (char CNN)", "layer 1 (LSTM)", "layer 2 (LSTM)"]
    assert static.kind == "static" and static.layer_names == ["static"]
    for m in models.values():
        assert m.card.startswith("#") and BEGIN in m.card


def test_each_model_embeds_a_sentence(models):
    words = "She sat on the bank of the river".split()
    for m in models.values():
        (arr,) = m.embed([words])
        assert arr.shape == (len(m.layer_names), len(words), m.dim) and arr.dtype == np.float32
        assert np.isfinite(arr).all(), m.name
    # context changes BERT's and ELMo's top-layer vector of "bank", not the static one
    other = "He paid the money into the bank".split()
    for name in NAMES:
        m = models[name]
        a, b = m.embed([words])[0][-1, 4], m.embed([other])[0][-1, 6]
        cos = float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
        assert (cos > 0.999) == (name == "static-eltec"), (name, cos)


def test_bert_fills_a_mask(models):
    from ctxmodels.analysis.fill_in import fill_mask

    bert = models["bert-eltec"]
    (top,) = fill_mask(bert.model, bert.tokenizer, "She opened the [MASK] and walked into the room.", top_k=5)
    assert len(top) == 5 and all(t["token"] for t in top)
    probs = [t["prob"] for t in top]
    assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1.0 + 1e-6


def test_minilm_eltec_is_the_published_start_continued_here(models):
    """The default BERT: all-MiniLM-L6-v2's size and vocabulary, a masked-LM head of its own, the start and its
    licence named in the card, and today's English kept (the capital of France is filled in)."""
    from ctxmodels.analysis.fill_in import fill_mask

    m = models["minilm-eltec"]
    cfg = m.model.config
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.vocab_size) == (6, 384, 12, 30522)
    assert m.can_fill_mask and m.has_attention and m.n_heads == 12
    assert "all-MiniLM-L6-v2" in m.card and "Apache-2.0" in m.card and "NVIDIA H200" in m.card
    assert "WordNet 3.0" in m.card  # stage 2's present-day English, credited
    (top,) = fill_mask(m.model, m.tokenizer, "The capital of France is [MASK].", top_k=5)
    assert "paris" in [t["token"] for t in top]
    # what stage 2 was for: money goes into a bank, not only into pockets
    (top,) = fill_mask(m.model, m.tokenizer, "She deposited the money in the [MASK].", top_k=5)
    assert "bank" in [t["token"] for t in top]


def test_static_neighbours_of_a_common_word(models):
    static = models["static-eltec"]
    near = [w for w, _ in static.model.most_similar("king", 10)]
    assert len(near) == 10 and "king" not in near


# -- the cards -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv, expect", [
    (["fill-mask", "--model", "bert-eltec", "She deposited the money in the [MASK]."], "[MASK]:"),
    (["neighbours", "--model", "static-eltec", "--k", "3", "river"], "river:"),
    (["embed", "--model", "elmo-eltec", "--input", "{tmp}/s.txt", "--out", "{tmp}/v.npz"],
     "1 sentences, 6 words, 3 layers"),
    (["export-elmo", "--model", "elmo-eltec", "--out", "{tmp}/published"], "weights.hdf5"),
])
def test_every_cli_command_takes_the_short_names(argv, expect, capsys, tmp_path):
    from ctxmodels import cli

    (tmp_path / "s.txt").write_text("The bank by the river .\n", encoding="utf-8")
    rc = cli.main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert expect in out + err  # embed reports on stderr: its stdout is left free for pipes



@pytest.mark.parametrize("name", NAMES)
def test_card_names_the_weights_beside_it(name, report):
    card = (ASSETS / name / "README.md").read_text(encoding="utf-8")
    sha = file_sha256(ASSETS / name / "model.safetensors")
    assert report["models"][name]["weights_sha256"] == sha
    assert re.search(rf"sha256 `{sha}`", card), "the card does not name these weights"


@pytest.mark.parametrize("name", NAMES)
def test_card_figures_are_the_measured_ones(name, report):
    card = (ASSETS / name / "README.md").read_text(encoding="utf-8")
    section = card[card.index(BEGIN): card.index(END) + len(END)] + "\n"
    command = re.search(r"\n    (ctxmodels quality .*)\n", section).group(1)
    assert section == measured_section(name, report, command, training_evaluation(ASSETS / name))
    assert "ELTeC" in card and "held-out" in card.lower()


def test_bert_card_explains_its_two_top1_figures(report):
    """The training card's top-1 (the run's last evaluation) and the measured one differ; the card says why."""
    card = (ASSETS / "bert-eltec" / "README.md").read_text(encoding="utf-8")
    trained = training_evaluation(ASSETS / "bert-eltec")["metrics"]["mlm_accuracy"]
    measured = report["models"]["bert-eltec"]["heldout"]["mlm_accuracy"]
    assert f"| mlm_accuracy | {trained:.4g} |" in card and f"| masked-token top-1 | {100 * measured:.1f}% |" in card
    note = card[card.index("**Two top-1 figures.**"):].split("\n")[0]
    assert f"{100 * trained:.1f}%" in note and f"{100 * measured:.1f}%" in note
    assert "first 256 are those same sequences" in note and "2,048" in note


@pytest.mark.shared_data
def test_the_training_evaluation_is_the_start_of_the_measured_sequences(shared_data):
    """What the card's note claims: the run's 256 evaluation sequences (bert_task.build_task's eval data) are the
    first 256 of the 2,048 that ``ctxmodels quality`` measures (bert_task.heldout_metrics), masks included."""
    import math
    import warnings

    import torch

    from ctxmodels.tokenization import WordPieceTokenizer
    from ctxmodels.training.bert_data import PretrainingData, VocabInfo, batch_encoder, tokenize_documents
    from ctxmodels.training.corpus import heldout_documents

    s = read_json(ASSETS / "bert-eltec" / "train_args.json")["settings"]
    tok = WordPieceTokenizer.load(ASSETS / "bert-eltec")
    docs, held = heldout_documents(shared_data / "corpus" / "eltec-eng.txt", s["heldout_docs"], s["seed"])
    tokenized = tokenize_documents([docs[i] for i in held], batch_encoder(tok))
    vocab = VocabInfo.from_tokenizer(tok)
    with warnings.catch_warnings():  # "n sentence(s) longer than 125 tokens will be truncated": as in both runs
        warnings.simplefilter("ignore", UserWarning)
        run = PretrainingData(tokenized, vocab, max_seq_len=s["max_seq_len"], max_predictions=s["max_predictions"],
                              batch_size=s["batch_size"], whole_word_masking=s["whole_word_masking"], seed=s["seed"])
        measured = PretrainingData(tokenized, vocab, max_seq_len=128, max_predictions=math.ceil(0.15 * 128), seed=0)

    def rows(batches):
        return [(ids[mask.bool()], labels) for b in batches
                for ids, mask, labels in zip(b["input_ids"], b["attention_mask"], b["mlm_labels"])]

    first = rows(run.fixed_batches(s["eval_sequences"], s["batch_size"]))
    every = rows(measured.fixed_batches(quality.BERT_SEQUENCES, 32))
    assert len(first) == s["eval_sequences"] == 256 and len(every) == 2048
    for (ids_a, lab_a), (ids_b, lab_b) in zip(first, every):
        assert torch.equal(ids_a, ids_b) and torch.equal(lab_a[lab_a != -100], lab_b[lab_b != -100])


@pytest.mark.parametrize("name", ["minilm-eltec", "bert-eltec"])
def test_cloze_share_measured_again(models, report, name):
    again = quality.cloze_check(models[name], quality.read_cloze())
    assert again["share_in_top_k"] == report["models"][name]["cloze"]["share_in_top_k"]
    classroom = quality.cloze_check(models[name], quality.read_cloze(ASSETS / "examples" / quality.CLASSROOM_FILE))
    assert [r["rank"] for r in classroom["rows"]] == [r["rank"] for r in report["models"][name]["classroom"]["rows"]]


def test_static_neighbours_measured_again(models, report):
    static = models["static-eltec"]
    for word, near in report["models"]["static-eltec"]["neighbours"].items():
        got = static.model.most_similar(word, len(near))
        assert [w for w, _ in got] == [w for w, _ in near]
        assert np.allclose([s for _, s in got], [s for _, s in near], atol=1e-5)


def test_sense_figures_measured_again_for_bank(models, report, shipped_semcor):
    from ctxmodels.semcor import load_semcor

    semcor = load_semcor(shipped_semcor)
    data = quality.sense_items(semcor, ("bank",))
    records = quality.sense_records(list(models.values()), data)
    shipped = {(r["model"], r["layer"]): r for r in report["senses"]["records"] if r["lemma"] == "bank"}
    for r in records:
        s = shipped[(r["model"], r["layer"])]
        assert (r["n"], r["accuracy"]) == (s["n"], pytest.approx(s["accuracy"])), (r["model"], r["layer"])


@pytest.mark.slow
@pytest.mark.shared_data
def test_heldout_figures_measured_again(models, report, shared_data):
    corpus = shared_data / "corpus" / "eltec-eng.txt"
    from ctxmodels.training import bert_task, elmo_task

    for name in ("minilm-eltec", "bert-eltec"):
        bert = models[name]
        expected = report["models"][name]["heldout"]
        got = bert_task.heldout_metrics(bert.model, bert.tokenizer, corpus, n_sequences=2048)
        for k in expected:
            assert got[k] == pytest.approx(expected[k], rel=1e-4), (name, k)
    elmo = models["elmo-eltec"]
    expected = report["models"]["elmo-eltec"]["heldout"]
    got = elmo_task.heldout_metrics(elmo.model, elmo.model.vocab, corpus, eval_tokens=100_000)  # the default
    for k in ("fwd_ppl", "bwd_ppl"):
        assert got[k] == pytest.approx(expected[k], rel=1e-4), k


def test_the_shipped_fine_tuned_model_tags_and_names_its_base():
    """assets/bert-eltec-pos: bert-eltec fine-tuned on `pos`, so the fine-tuning page has something to show on a
    fresh install. It names its base by short name only (no path of the machine it was trained on)."""
    from ctxmodels.analysis.finetuning import base_model

    tuned = ctxmodels.load("bert-eltec-pos")
    info = tuned.finetune_info
    assert info["task"] == "pos" and info["mode"] == "finetune" and info["base_model"] == "bert-eltec"
    folder = ASSETS / "bert-eltec-pos"
    assert info["base_path"] == "" and str(ROOT.parent) not in (folder / "README.md").read_text(encoding="utf-8")
    assert not (folder / "run.json").exists() and not (folder / "checkpoint").exists()
    assert tuned.kind == "bert" and tuned.has_attention and not tuned.can_fill_mask
    assert base_model(tuned).path == ctxmodels.load("bert-eltec").path
    words = "She walked slowly to the old bank and opened an account".split()
    tags = dict(zip(words, (label for label, _ in tuned.task_model().predict(words))))
    assert (tags["walked"], tags["slowly"], tags["old"], tags["bank"], tags["account"]) == (
        "VERB", "ADV", "ADJ", "NOUN", "NOUN"), tags
    # the card quotes the test figures that finetune.json holds
    test = info["metrics"]["test"]
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert f"| test | {test['accuracy']:.4f} | {test['macro_f1']:.4f} |" in card
