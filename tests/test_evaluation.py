"""`ctxmodels eval wsd|wic`: the formats, the measures (worked out by hand), the CLI with real tiny models."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from ctxmodels.analysis import evaluation as ev
from ctxmodels.cli import main
from ctxmodels.loading import LoadedModel

# Context vectors of a few words: a target's contextual vector is the sum over the other words of its sentence.
CONTEXT = {"money": (1.0, 0.0), "cash": (0.9, 0.1), "river": (0.0, 1.0), "water": (0.1, 0.9),
           "loan": (0.8, 0.3), "mud": (0.6, 0.5)}


class FakeModel(LoadedModel):
    """Layer "static": (1, 1) for every word. Layer "context": the sum of CONTEXT over the other words."""

    kind = "fake"

    def __init__(self, name: str = "fake"):
        super().__init__(name, None, None, {}, ["static", "context"], 2)

    def _embed(self, sentences, pooling, batch_size):
        out = []
        for s in sentences:
            v = np.zeros((2, len(s), 2), np.float32)
            v[0] = 1.0
            for i in range(len(s)):
                v[1, i] = sum((np.array(CONTEXT.get(w, (0.0, 0.0))) for j, w in enumerate(s) if j != i),
                              np.zeros(2))
            out.append(v)
        return out


def write_lines(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def write_wsd_word(root: Path, word: str, train: list[tuple[int, str, str]], test: list[tuple[int, str, str]],
                   classes: dict[str, str]) -> None:
    for split, rows in (("train", train), ("test", test)):
        write_lines(root / word / f"{split}.data.txt", [f"{i}\t{s}" for i, s, _ in rows])
        write_lines(root / word / f"{split}.gold.txt", [g for _, _, g in rows])
    (root / word / "classes_map.txt").write_text(json.dumps(classes), encoding="utf-8")


BANK_TRAIN = [(0, "bank money", "0"), (0, "bank cash", "0"), (0, "bank river", "1"), (0, "bank water", "1")]
BANK_TEST = [(0, "bank loan", "0"), (0, "bank mud", "1"), (1, "the bank river", "1")]


@pytest.fixture()
def wsd_dir(tmp_path: Path) -> Path:
    root = tmp_path / "coarsewsd"
    write_wsd_word(root, "bank", BANK_TRAIN, BANK_TEST, {"0": "bank_(finance)", "1": "bank_(river)"})
    # plant: the context layer gets both right, the static layer predicts the first train line's class for both.
    write_wsd_word(root, "plant", [(1, "a plant money", "1"), (1, "a plant river", "0")],
                   [(0, "plant cash", "1"), (0, "plant water", "0")], {"0": "plant_(factory)", "1": "plant_(flora)"})
    return root


def test_wsd_by_hand(wsd_dir: Path):
    words = ev.read_wsd_dataset(wsd_dir)
    assert [w.word for w in words] == ["bank", "plant"]
    assert words[0].classes == {"0": "bank_(finance)", "1": "bank_(river)"}
    records = ev.evaluate_wsd(words, [FakeModel()])
    by = {(r["model"], r["layer"], r["word"]): r for r in records}
    # bank, context layer: loan -> nearest "cash" (0, right); mud (0.6, 0.5) -> nearest "cash" (0, wrong);
    # "the bank river" (index 1) -> "river" (1, right). Gold [0,1,1], predicted [0,0,1]: F1 2/3 for both classes.
    r = by[("fake", "context", "bank")]
    assert r["n_test"] == 3
    assert r["accuracy"] == pytest.approx(2 / 3) and r["macro_f1"] == pytest.approx(2 / 3)
    # static layer: all cosines equal, the first train line wins: predicted [0,0,0]; F1 class 0 = 2/4, class 1 = 0.
    r = by[("fake", "static", "bank")]
    assert r["accuracy"] == pytest.approx(1 / 3) and r["macro_f1"] == pytest.approx(0.25)
    assert by[("fake", "context", "plant")]["accuracy"] == 1.0
    assert by[("fake", "static", "plant")]["accuracy"] == 0.5
    # ALL: accuracy over the 5 test occurrences, macro-F1 the mean over words.
    r = by[("fake", "context", "ALL")]
    assert r["n_test"] == 5 and r["accuracy"] == pytest.approx(4 / 5)
    assert r["macro_f1"] == pytest.approx((2 / 3 + 1.0) / 2)
    # the most-frequent-sense baseline: bank's train classes tie 2-2, the first seen (0) wins
    assert by[(ev.MFS_MODEL, "-", "bank")]["accuracy"] == pytest.approx(1 / 3)
    assert ev.best_layers("wsd", records)["fake"]["layer"] == "context"
    table = ev.format_table("wsd", records)
    assert "best layer of fake: context" in table


def test_nearest_neighbour_skips_missing_vectors():
    train = np.array([[1.0, 0.0], [np.nan, np.nan], [0.0, 1.0], [0.0, 1.0]])
    test = np.array([[0.1, 1.0], [np.nan, 0.0]])
    # the NaN train row is no candidate; the NaN test row gets no prediction (never a guess)
    assert ev.nearest_neighbour(train, ["a", "a", "b", "b"], test) == ["b", None]
    assert ev.nearest_neighbour(train, ["a", "b", "b", "c"], test) == ["b", None]
    assert ev.nearest_neighbour(np.full((2, 2), np.nan), ["a", "b"], test) == [None, None]


def test_occurrence_vectors_take_the_indexed_word():
    class Positions(FakeModel):
        def _embed(self, sentences, pooling, batch_size):
            return [np.stack([np.stack([np.arange(len(s)), [len(w) for w in s]], -1)] * 2).astype(np.float32)
                    for s in sentences]

    occ = [ev.Occurrence(["a", "bank", "x"], 1), ev.Occurrence(["the", "riverbank"], 1),
           ev.Occurrence(["a", "bank", "x"], 0)]
    v = ev.occurrence_vectors(Positions(), occ)
    assert v.shape == (3, 2, 2)
    assert v[:, 0].tolist() == [[1, 4], [1, 9], [0, 1]]


def test_choose_threshold_by_hand():
    scores = np.array([0.1, 0.4, 0.35, 0.8, 0.9])
    labels = [False, False, True, True, True]
    # sorted: .1F .35T .4F .8T .9T; 4 of 5 right between .1/.35 and between .4/.8: the lower one is taken
    t, acc = ev.choose_threshold(scores, labels)
    assert t == pytest.approx(0.225) and acc == pytest.approx(0.8)
    # all True above everything
    t, acc = ev.choose_threshold(np.array([0.2, 0.5]), [True, True])
    assert t == pytest.approx(0.2) and acc == 1.0
    t, acc = ev.choose_threshold(np.array([0.2, 0.5]), [False, False])
    assert t > 0.5 and acc == 1.0
    # equal scores cannot be split
    t, acc = ev.choose_threshold(np.array([0.5, 0.5, 0.5]), [True, False, True])
    assert acc == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="no scores"):
        ev.choose_threshold(np.array([np.nan]), [True])


WSD_FIELDS = {"model", "layer", "word", "n_test", "n_missing", "coverage", "n_train_missing", "accuracy", "macro_f1",
              "accuracy_with_fallback", "macro_f1_with_fallback"}


class PartialModel(FakeModel):
    """FakeModel without any vector for the words in ``unknown`` (NaN rows in both layers, as a static model
    gives for words it does not know), or without any vector at all in layer "static" (``no_static``)."""

    def __init__(self, unknown=(), no_static=False):
        super().__init__("partial")
        self.unknown, self.no_static = set(unknown), no_static

    def _embed(self, sentences, pooling, batch_size):
        out = super()._embed(sentences, pooling, batch_size)
        for s, v in zip(sentences, out):
            for i, w in enumerate(s):
                if w in self.unknown or any(x in self.unknown for x in s):
                    v[:, i] = np.nan
            if self.no_static:
                v[0] = np.nan
        return out


def test_wsd_never_reports_the_fallback_as_the_models_figure(wsd_dir: Path):
    """Occurrences without a vector are left out of a model's accuracy and macro-F1 and counted; the figures with
    the most-frequent-sense answer for them are kept apart."""
    words = ev.read_wsd_dataset(wsd_dir)
    # "loan" unknown: the first bank test sentence has no vector (and no train sentence holds "loan")
    records = ev.evaluate_wsd(words, [PartialModel(unknown={"loan"})])
    assert all(set(r) == WSD_FIELDS for r in records)
    by = {(r["model"], r["layer"], r["word"]): r for r in records}
    r = by[("partial", "context", "bank")]
    assert (r["n_test"], r["n_missing"], r["n_train_missing"]) == (3, 1, 0)
    assert r["coverage"] == pytest.approx(2 / 3)
    # of the two covered test occurrences, "bank mud" (gold 1) is nearest to "bank cash" (0): wrong;
    # "the bank river" (1) is right
    assert r["accuracy"] == pytest.approx(0.5) and r["macro_f1"] == pytest.approx((0 + 2 / 3) / 2)
    # the train majority (class 0, the first of a 2-2 tie) for "bank loan" (gold 0) would flatter the model
    assert r["accuracy_with_fallback"] == pytest.approx(2 / 3)
    r_all = by[("partial", "context", "ALL")]
    assert (r_all["n_test"], r_all["n_missing"]) == (5, 1) and r_all["accuracy"] == pytest.approx(3 / 4)
    # every occurrence missing in one layer: no figure, not the baseline's
    records = ev.evaluate_wsd(words, [PartialModel(no_static=True)])
    by = {(r["model"], r["layer"], r["word"]): r for r in records}
    r = by[("partial", "static", "ALL")]
    assert r["accuracy"] is None and r["macro_f1"] is None and r["coverage"] == 0.0 and r["n_missing"] == 5
    mfs = by[(ev.MFS_MODEL, "-", "ALL")]
    assert r["accuracy_with_fallback"] == pytest.approx(mfs["accuracy"])
    assert ev.best_layers("wsd", records)["partial"]["layer"] == "context"
    table = ev.format_table("wsd", records)
    assert "cover" in table and "partial: up to 5 of 5 test occurrences have no vector" in table
    static_row = next(line for line in table.splitlines() if line.startswith("partial") and "static" in line)
    assert static_row.split()[2:4] == ["-", "-"]


def test_wic_never_reports_the_fallback_as_the_models_figure(tmp_path: Path):
    root = tmp_path / "wic"
    write_wic_split(root, "train", WIC_TRAIN)
    write_wic_split(root, "test", WIC_TEST)
    fit, test = ev.read_wic_dataset(root)
    records = ev.evaluate_wic(fit, test, [PartialModel(unknown={"water"}, no_static=True)])
    by = {r["layer"]: r for r in records}
    r = by["context"]  # 2 train pairs and the test pair (bank loan / bank water, F) have no vector
    assert (r["n_test"], r["n_missing"], r["n_train_missing"]) == (4, 1, 2) and r["coverage"] == 0.75
    # the threshold from the 3 covered train pairs (cosines .994 T, 0 F, .936 T) lies midway between 0 and .936
    assert r["threshold"] == pytest.approx(0.8 / 0.73 ** 0.5 / 2) and r["train_accuracy"] == 1.0
    assert r["test_accuracy"] == 1.0  # over the 3 covered test pairs
    assert r["test_accuracy_with_fallback"] == pytest.approx(0.75)  # the train majority (True) for it: wrong
    r = by["static"]  # no vector at all: no threshold, no figures, no crash
    assert r["threshold"] is None and r["train_accuracy"] is None and r["test_accuracy"] is None
    assert r["coverage"] == 0.0 and r["test_accuracy_with_fallback"] == pytest.approx(0.5)
    table = ev.format_table("wic", records)
    assert "partial: up to 4 of 4 test pairs have no vector" in table and "best layer of partial: context" in table


def test_wsd_macro_f1_counts_a_class_only_predicted():
    """A test set need not hold every train class: a class only predicted counts with F1 0, as in sklearn's
    f1_score(average="macro"), the one definition the sense tables and the model cards use too."""
    from sklearn.metrics import f1_score

    from ctxmodels.analysis import metrics, senses

    gold, pred = ["a", "a", "b"], ["a", "c", "b"]   # c: a train class absent from this test set
    r = ev._wsd_record("m", "layer", "w", gold, pred, "a", 0)
    assert r["macro_f1"] == pytest.approx((2 / 3 + 1 + 0) / 3)
    assert r["macro_f1"] == pytest.approx(f1_score(gold, pred, average="macro", zero_division=0))
    assert r["accuracy"] == pytest.approx(2 / 3)
    assert ev.macro_f1 is senses.macro_f1 is metrics.macro_f1


def write_wic_split(root: Path, split: str, rows: list[tuple[str, str, str, str]], gold: bool = True) -> None:
    write_lines(root / split / f"{split}.data.txt",
                [f"bank\tN\t{idx}\t{s1}\t{s2}" for idx, s1, s2, _ in rows])
    if gold:
        write_lines(root / split / f"{split}.gold.txt", [g for *_, g in rows])


WIC_TRAIN = [("0-0", "bank money", "bank cash", "T"), ("0-1", "bank river", "the bank water", "T"),
             ("0-0", "bank money", "bank river", "F"), ("0-0", "bank cash", "bank water", "F"),
             ("0-0", "bank loan", "bank money", "T")]
WIC_TEST = [("0-0", "bank loan", "bank cash", "T"), ("0-0", "bank loan", "bank water", "F"),
            ("1-0", "the bank river", "bank money", "F"), ("0-0", "bank mud", "bank river", "T")]


def test_wic_by_hand(tmp_path: Path):
    root = tmp_path / "wic"
    write_wic_split(root, "train", WIC_TRAIN)
    write_wic_split(root, "dev", WIC_TRAIN[:2])
    write_wic_split(root, "test", WIC_TEST)
    fit, test = ev.read_wic_dataset(root)
    assert fit.name == "train" and len(test.first) == 4 and test.second[2].index == 0
    records = ev.evaluate_wic(fit, test, [FakeModel()])
    by = {r["layer"]: r for r in records}
    assert set(records[0]) == {"model", "layer", "threshold", "train_accuracy", "test_accuracy", "n_train",
                               "n_train_missing", "n_test", "n_missing", "coverage", "test_accuracy_with_fallback"}
    assert all(r["coverage"] == 1.0 and r["test_accuracy_with_fallback"] == r["test_accuracy"] for r in records)
    # context layer, train cosines: T pairs .994, .994, .936; F pairs 0 and .220 -> threshold (.220 + .936) / 2
    r = by["context"]
    assert r["train_accuracy"] == 1.0 and r["threshold"] == pytest.approx((0.18 / 0.82 + 0.8 / 0.73 ** 0.5) / 2)
    # test cosines: .969 (T), .452 (F), 0 (F), .640 (T): all on the right side of .578
    assert r["test_accuracy"] == 1.0
    # static layer: every cosine is 1, so "all True" (3 of 5 on train) is best; test has 2 of 4 True
    r = by["static"]
    assert r["train_accuracy"] == pytest.approx(0.6) and r["test_accuracy"] == pytest.approx(0.5)
    assert "best layer of fake: context" in ev.format_table("wic", records)


def test_wic_uses_dev_without_train(tmp_path: Path):
    root = tmp_path / "wic"
    write_wic_split(root, "dev", WIC_TRAIN)
    write_wic_split(root, "test", WIC_TEST)
    fit, _ = ev.read_wic_dataset(root)
    assert fit.name == "dev"


@pytest.mark.parametrize("name, lines, message", [
    ("train.data.txt", ["0\tbank money", "x\tbank cash"], r"train.data.txt, line 2: token index 'x'"),
    ("train.data.txt", ["0\tbank money", "5\tbank cash"], r"line 2: token index 5 is outside"),
    ("train.data.txt", ["0 bank money"], r"line 1: expected 'token_index<TAB>sentence'"),
    ("train.gold.txt", ["0", "0", "1"], r"train.gold.txt has 3 labels but train.data.txt has 4"),
    ("test.gold.txt", ["0", "7", "1"], r"test.gold.txt, line 2: label '7' is not one of 0, 1"),
])
def test_wsd_format_errors(wsd_dir: Path, name: str, lines: list[str], message: str):
    write_lines(wsd_dir / "bank" / name, lines)
    with pytest.raises(ev.DataFormatError, match=message):
        ev.read_wsd_dataset(wsd_dir)


def test_wsd_missing_things(tmp_path: Path, wsd_dir: Path):
    with pytest.raises(ev.DataFormatError, match="no word folders"):
        ev.read_wsd_dataset(tmp_path)  # holds coarsewsd/, not word folders
    (wsd_dir / "plant" / "test.gold.txt").unlink()
    with pytest.raises(ev.DataFormatError, match="plant: missing test.gold.txt"):
        ev.read_wsd_dataset(wsd_dir)
    with pytest.raises(ev.DataFormatError, match="no folder for apple"):
        ev.read_wsd_dataset(wsd_dir, words=["apple"])
    (wsd_dir / "bank" / "classes_map.txt").write_text("{not json", encoding="utf-8")
    with pytest.raises(ev.DataFormatError, match="classes_map.txt: not valid JSON"):
        ev.read_wsd_word(wsd_dir / "bank")
    # a single word's folder works as DIR
    (wsd_dir / "bank" / "classes_map.txt").unlink()
    assert ev.read_wsd_dataset(wsd_dir / "bank")[0].classes == {"0": "0", "1": "1"}


@pytest.mark.parametrize("line, message", [
    ("bank\tN\t0-0\tbank money", r"line 2: expected 5 tab-separated fields"),
    ("bank\tN\t0\tbank money\tbank cash", r"line 2: indices '0' are not 'i1-i2'"),
    ("bank\tN\t0-4\tbank money\tbank cash", r"line 2: token index 4 is outside"),
])
def test_wic_format_errors(tmp_path: Path, line: str, message: str):
    root = tmp_path / "wic"
    write_wic_split(root, "train", WIC_TRAIN)
    write_wic_split(root, "test", WIC_TEST[:1])
    write_lines(root / "test" / "test.data.txt", ["bank\tN\t0-0\tbank loan\tbank cash", line])
    write_lines(root / "test" / "test.gold.txt", ["T", "F"])
    with pytest.raises(ev.DataFormatError, match=message):
        ev.read_wic_dataset(root)


def test_wic_missing_things(tmp_path: Path):
    root = tmp_path / "wic"
    write_wic_split(root, "train", WIC_TRAIN)
    with pytest.raises(ev.DataFormatError, match="expected train/ .or dev/. and test/"):
        ev.read_wic_dataset(root)
    write_wic_split(root, "test", WIC_TEST, gold=False)
    with pytest.raises(ev.DataFormatError, match="no \\*.gold.txt"):
        ev.read_wic_dataset(root)
    write_lines(root / "test" / "test.gold.txt", ["T", "F", "X", "T"])
    with pytest.raises(ev.DataFormatError, match="test.gold.txt, line 3: label 'X' is not one of F, T"):
        ev.read_wic_dataset(root)


# ---------------------------------------------------------------------------------------------------------
# the command line with real (tiny, random) models


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory) -> dict[str, Path]:
    from ctxmodels.bert import BertConfig, BertForPreTraining
    from ctxmodels.elmo import ElmoConfig, ElmoLanguageModel
    from ctxmodels.formats.allennlp import save_elmo
    from ctxmodels.formats.huggingface import save_pretrained
    from ctxmodels.tokenization import WordPieceTokenizer

    root = tmp_path_factory.mktemp("models")
    torch.manual_seed(0)
    save_elmo(ElmoLanguageModel(ElmoConfig.preset("tiny")), root / "elmo-tiny")
    words = ["bank", "money", "cash", "river", "water", "loan", "the", "a", "plant"]
    rng = np.random.default_rng(0)
    lines = [f"{w} " + " ".join(f"{x:.4f}" for x in rng.normal(size=8)) for w in words]
    (root / "static.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words, *letters, *(f"##{c}" for c in letters)]
    (root / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    bert = BertForPreTraining(BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                                         num_attention_heads=2, intermediate_size=64))
    save_pretrained(bert, WordPieceTokenizer.from_vocab(root / "vocab.txt"), root / "bert-tiny")
    return {"elmo": root / "elmo-tiny", "static": root / "static.txt", "bert": root / "bert-tiny"}


def test_cli_wsd(wsd_dir: Path, tiny_models, tmp_path: Path, capsys):
    out = tmp_path / "wsd.json"
    rc = main(["eval", "wsd", "--data", str(wsd_dir), "--model", str(tiny_models["elmo"]),
               "--model", str(tiny_models["static"]), "--json", str(out)])
    assert rc == 0
    result = json.loads(out.read_text())
    assert set(result) == {"task", "results"} and result["task"] == "wsd"
    recs = result["results"]
    assert all(set(r) == WSD_FIELDS for r in recs)
    models = {r["model"] for r in recs}
    assert len(models) == 3 and ev.MFS_MODEL in models
    layers = {(r["model"], r["layer"]) for r in recs}
    elmo_name = next(m for m, lay in layers if lay == "layer 1 (LSTM)")
    assert {lay for m, lay in layers if m == elmo_name} == {"layer 0 (char CNN)", "layer 1 (LSTM)", "layer 2 (LSTM)"}
    static_name = (models - {elmo_name, ev.MFS_MODEL}).pop()
    assert {lay for m, lay in layers if m == static_name} == {"static"}
    assert all(0.0 <= r["accuracy"] <= 1.0 for r in recs)
    printed = capsys.readouterr().out
    assert f"best layer of {elmo_name}:" in printed and "best overall:" in printed


def test_cli_wic_and_errors(tiny_models, tmp_path: Path, capsys):
    root = tmp_path / "wic"
    write_wic_split(root, "train", WIC_TRAIN)
    write_wic_split(root, "test", WIC_TEST)
    out = tmp_path / "wic.json"
    assert main(["eval", "wic", "--data", str(root), "--model", str(tiny_models["bert"]), "--model",
                 str(tiny_models["static"]), "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["task"] == "wic"
    assert [r["layer"] for r in result["results"]] == ["embeddings", "layer 1", "layer 2", "static"]
    assert all(0.0 <= r["train_accuracy"] <= 1.0 and 0.0 <= r["test_accuracy"] <= 1.0 for r in result["results"])
    capsys.readouterr()
    write_lines(root / "test" / "test.gold.txt", ["T"])
    assert main(["eval", "wic", "--data", str(root), "--model", str(tiny_models["elmo"])]) == 2
    assert "test.gold.txt has 1 labels but test.data.txt has 4" in capsys.readouterr().err
