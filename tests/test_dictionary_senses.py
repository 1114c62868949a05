"""Which dictionary sense one occurrence is: SemCor's sense averages per layer, the leave-one-out accuracy and the
spelling baseline, and the guess for a new sentence or for one of the references itself."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ctxmodels.analysis import dictionary_senses as ds
from ctxmodels.analysis.sources import SenseInfo
from ctxmodels.analysis.vectors import word_vectors
from ctxmodels.semcor import load_semcor
from tests.app_fixtures import GLOSSES, MONEY, RIVER, write_semcor


class ContextModel:
    """A fake two-layer model: layer 0 is a word's one-hot vector (context-free); layer 1 adds a "money" direction
    to every word of a sentence with a money word in it and a "river" direction to every word of the others, so
    the words around an occurrence move it the way a good contextual layer would."""

    name = "context"
    layer_names = ["spelling", "context"]
    n_layers = 2
    MONEY_WORDS = {"money", "deposited", "wages", "interest", "account", "loan", "lent", "robbers"}

    def __init__(self, vocab: set[str]):
        self.index = {w: i for i, w in enumerate(sorted(vocab))}
        self.dim = len(self.index) + 2

    def embed(self, sentences, pooling="mean", batch_size=32):
        out = []
        for words in sentences:
            base = np.eye(self.dim)[[self.index[w.lower()] for w in words]]
            topic = np.eye(self.dim)[-1 if self.MONEY_WORDS & {w.lower() for w in words} else -2]
            out.append(np.stack([base, base + 2 * topic]).astype(np.float32))
        return out


@pytest.fixture(scope="module")
def semcor(tmp_path_factory):
    return load_semcor(write_semcor(tmp_path_factory.mktemp("data")) / "semcor")


@pytest.fixture(scope="module")
def model(semcor):
    extra = "we walked by the deep river with our dog . she put money in the bank . banks".split()
    return ContextModel({w.lower() for s in semcor.sentences for w in s.words} | set(extra))


def info(label: str, key: str, count: int) -> SenseInfo:
    return SenseInfo(label, (key,), label, (), count)


def test_the_nearest_average_reads_the_sense_from_the_words_around_it(model, semcor):
    av = ds.sense_averages(model, "bank", semcor=semcor)
    assert {i.sense_keys[0] for i in av.senses} == {RIVER, MONEY}
    assert av.n == 12 and list(av.counts) == [6, 6] and av.left_out == 0
    assert {i.gloss for i in av.senses} == set(GLOSSES.values())
    # the context-free layer reads the spelling only: every "bank" is one vector, so it is right for half of them
    # at best, which is what answering the spelling's most frequent sense gets
    assert av.by_spelling == 0.5 and av.accuracy[0] <= 0.5 and av.accuracy[1] == 1.0 and av.best_layer() == 1
    names = {i.sense_keys[0]: n for n, i in enumerate(av.senses)}
    for sentence, key in [("we walked by the deep river with our dog by the bank", RIVER),
                          ("she put money in the bank", MONEY)]:
        occ = word_vectors(model, [sentence], "bank")
        guess = ds.guess(av, occ.vectors[0])
        assert guess.sense(1) == names[key] and guess.sense(0) is None  # a tie: no sense nearer than another
        assert not guess.held_out and guess.tagged is None
        assert guess.cosines.shape == (2, 2) and np.allclose(guess.cosines[0], guess.cosines[0][0])


def test_a_reference_leaves_its_own_sense_average_before_it_is_compared(model, semcor):
    av = ds.sense_averages(model, "bank", semcor=semcor)
    (sentence, index), (sense, row) = next(iter(av.members.items()))
    own = av.vectors[row].astype(np.float64)
    guess = ds.guess(av, own, key=(sentence, index))
    assert guess.held_out and guess.tagged == sense
    rest = (av.sums[1, sense] - own[1]) / (av.counts[sense] - 1)
    expected = rest @ own[1] / np.linalg.norm(rest) / np.linalg.norm(own[1])
    assert guess.cosines[1, sense] == pytest.approx(expected)
    other = 1 - sense
    assert guess.cosines[1, other] == pytest.approx(
        av.sums[1, other] @ own[1] / np.linalg.norm(av.sums[1, other]) / np.linalg.norm(own[1]))


def test_averages_leave_out_rarer_senses_and_missing_vectors_and_need_two_senses():
    X = np.array([[[1, 0]], [[0.9, 0.1]], [[0, 1]], [[0.1, 0.9]], [[1, 1]], [[np.nan, 0]]])
    labels = ["a", "a", "b", "b", "other", "b"]
    infos = [info("a", "x%1:00:00::", 2), info("b", "x%2:00:00::", 3), SenseInfo("other", ("x%1:01:00::",), "", (), 1)]
    keys = [(f"s{i}", 0) for i in range(6)]
    av = ds.averages_from("x", X, labels, ["x", "x", "x", "xs", "x", "x"], infos, ["only"], keys)
    assert av.n == 4 and av.left_out == 2 and [i.label for i in av.senses] == ["a", "b"]
    assert av.accuracy[0] == 1.0 and av.by_spelling == 0.75  # "x": a, a, b -> 2 of 3; "xs": b -> 1 of 1
    assert set(av.members) == set(keys[:4])
    # the first reference, asked about, is compared with the other "a" alone; unnamed, with both (itself too)
    cos01 = X[0, 0] @ X[1, 0] / np.linalg.norm(X[1, 0])
    assert ds.guess(av, X[0], key=keys[0]).cosines[0, 0] == pytest.approx(cos01)
    assert ds.guess(av, X[0]).cosines[0, 0] > cos01
    assert [ds.sense_name(i) for i in av.senses] == ["a (noun)", "b (verb)"]
    with pytest.raises(ValueError, match="fewer than two senses"):
        ds.averages_from("x", X[:2], ["a", "a"], ["x", "x"], infos, ["only"], keys[:2])
    with pytest.raises(ValueError, match="one label, spelling and key each"):
        ds.averages_from("x", X, labels[:3], ["x"] * 6, infos, ["only"], keys)
    with pytest.raises(ValueError, match="another model"):
        ds.guess(av, np.zeros((2, 2)))


def test_a_sense_whose_only_reference_is_the_occurrence_has_no_average_left():
    X = np.array([[[1.0, 0]], [[0.9, 0.1]], [[0, 1.0]]])
    infos = [info("a", "x%1:00:00::", 2), info("b", "x%1:00:01::", 1)]
    av = ds.averages_from("x", X, ["a", "a", "b"], ["x"] * 3, infos, ["only"], [("s0", 0), ("s1", 0), ("s2", 0)])
    guess = ds.guess(av, X[2], key=("s2", 0))
    assert np.isnan(guess.cosines[0, 1]) and guess.sense(0) == 0


def test_the_lemma_of_a_word_as_written(semcor, tmp_path):
    assert ds.lemma_of("bank", semcor) == "bank" and ds.lemma_of("BANK", semcor) == "bank"
    assert ds.lemma_of("banks", semcor) == "bank"  # a stem the word inflects
    assert ds.lemma_of("bankers", semcor) is None and ds.lemma_of("the", semcor) is None
    # the annotators' lemma for a form they tagged wins over the spelling ("ran" -> "run")
    root = tmp_path / "semcor"
    root.mkdir()
    (root / "sentences.tsv").write_text("sent_uid\ttokens\nbrown1/br-a01.s1\tShe ran home .\n"
                                        "brown1/br-a01.s2\tThe thing fell .\n", encoding="utf-8")
    (root / "tags.tsv").write_text("sent_uid\ttok_idx\tword\tlemma\tpos\tsense_keys\tsynsets\n"
                                   "brown1/br-a01.s1\t1\tran\trun\tVBD\trun%2:38:00::\t\n"
                                   "brown1/br-a01.s2\t1\tthing\tthing\tNN\tthing%1:04:00::\t\n", encoding="utf-8")
    other = load_semcor(root)
    assert ds.lemma_of("ran", other) == "run" and ds.lemma_of("the", other) is None  # never an inflection of it


def test_the_command_line_names_the_nearest_sense_per_layer(tiny_assets, tmp_path, capsys):
    from ctxmodels.cli import main

    root = write_semcor(tmp_path / "data") / "semcor"
    args = ["which-sense", "--model", str(tiny_assets / "bert-eltec"), "--word", "banks", "--semcor", str(root),
            "We sat on the banks of the river."]
    assert main(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert "12 SemCor occurrences of 'bank' in 2 senses" in out[0]
    assert [line.split()[0] for line in out[1:]] == ["embeddings", "layer", "layer"]
    assert sum("<- best on SemCor" in line for line in out[1:]) == 1
    assert main(args + ["--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["lemma"] == "bank" and result["references"] == 12 and len(result["senses"]) == 2
    assert {s["sense_key"] for s in result["senses"]} == {RIVER, MONEY}
    assert [layer["layer"] for layer in result["layers"]] == ["embeddings", "layer 1", "layer 2"]
    assert all(len(layer["cosines"]) == 2 and 0 <= layer["accuracy"] <= 1 for layer in result["layers"])
    assert main(["which-sense", "--model", str(tiny_assets / "bert-eltec"), "--word", "the", "--semcor", str(root),
                 "the bank"]) == 2
    assert "SemCor tags no sense of 'the'" in capsys.readouterr().err


def test_reading_many_occurrences_at_once_matches_one_at_a_time(model, semcor):
    from ctxmodels.analysis.word_senses import MIX, LearnedMix, layer_vectors

    av = ds.sense_averages(model, "bank", semcor=semcor)
    sentences = ["we walked by the deep river with our dog by the bank", "she put money in the bank",
                 "the bank", *[" ".join(s.words) for s in semcor.sentences[:4]]]
    occ = word_vectors(model, sentences, "bank")
    keys = [(o.sentence, o.word_index) for o in occ.occurrences]
    for layer in range(2):
        read = ds.read_each(av, occ.vectors, layer, keys=keys)
        one = [ds.guess(av, v, key=k).sense(layer) for v, k in zip(occ.vectors, keys)]
        assert list(read) == [-1 if s is None else s for s in one]
    assert (ds.read_each(av, occ.vectors, 0) == -1).all()  # the context-free layer: every sense ties
    # a learned mix of the layers reads the mix of the averages (the mix is linear)
    mix = LearnedMix((0.25, 0.75), 2.0)
    in_rows = sorted(av.members, key=lambda k: av.members[k][1])  # the references in their rows' order
    mixed = ds.averages_from("bank", np.stack([layer_vectors(av.vectors, MIX, mix)] * 2, axis=1),
                             [av.senses[av.members[k][0]].label for k in in_rows], ["bank"] * av.n, av.senses,
                             ["mix", "mix"], in_rows)
    expected = ds.read_each(mixed, np.stack([layer_vectors(occ.vectors, MIX, mix)] * 2, axis=1), 0)
    assert list(ds.read_each(av, occ.vectors, MIX, mix=mix)) == list(expected)
