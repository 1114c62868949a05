"""ELMo fills in blanks (ctxmodels.analysis.elmo_blanks, reached through fill_in's functions): a tiny random ELMo with
an output vocabulary, checked against its forward and backward states read directly; the command line and the
Fill in the blank page."""

from __future__ import annotations

import json
import math

import pytest
import torch

import ctxmodels
from ctxmodels.analysis import fill_in
from ctxmodels.char_ids import batch_to_char_ids
from ctxmodels.cli import main as cli_main
from ctxmodels.elmo import ElmoConfig, ElmoLanguageModel
from ctxmodels.formats.allennlp import save_elmo

VOCAB = ["<S>", "</S>", "<UNK>", ",", ".", "the", "bank", "river", "money", "of", "a", "boat", "far", "side", "end",
         "She", "put", "her", "in", "Paris"]


@pytest.fixture(scope="module")
def elmo(tmp_path_factory):
    torch.manual_seed(0)
    lm = ElmoLanguageModel(ElmoConfig.preset("tiny", n_tokens_vocab=len(VOCAB))).eval()
    with torch.no_grad():  # a peaked output distribution, so rankings are not ties
        lm.softmax.bias.normal_(0, 2)
    folder = tmp_path_factory.mktemp("elmo") / "elmo-lm"
    save_elmo(lm, folder, vocab=VOCAB, card="# tiny ELMo with a softmax\n\nRandom weights, for tests.")
    return ctxmodels.load(str(folder))


def direct(model, words: list[str], slot: int) -> torch.Tensor:
    """P(word at ``slot``) written out: the forward LM's top state at the word before, the backward LM's at the word
    after, each softmaxed over the vocabulary, multiplied, the specials dropped and the rest renormalised."""
    lm = model.model
    char_ids, mask = batch_to_char_ids([words], add_boundaries=True,
                                       max_chars=lm.config.char_cnn.max_characters_per_token)
    with torch.no_grad():
        out = lm(char_ids, mask)
        fwd = lm.softmax(out.forward_layers[-1][0, slot]).softmax(-1)  # position slot = the word before (or <S>)
        bwd = lm.softmax(out.backward_layers[-1][0, slot + 2]).softmax(-1)
    joint = fwd * bwd
    joint[:3] = 0  # <S>, </S>, <UNK>
    return joint / joint.sum()


def test_a_blank_is_read_from_both_sides(elmo):
    assert fill_in.fills_blanks(elmo) and fill_in.why_no_fill(elmo) == ""
    text = "She put the money in the [MASK] ."
    words = text.split()
    got = fill_in.fill_mask(elmo, None, text, top_k=len(VOCAB))[0]
    expected = direct(elmo, words, 6)
    assert len(got) == len(VOCAB) - 3 and {g["token"] for g in got}.isdisjoint({"<S>", "</S>", "<UNK>"})
    assert [g["prob"] for g in got] == pytest.approx(sorted(expected.tolist(), reverse=True)[:len(got)], abs=1e-6)
    assert got[0]["token"] == VOCAB[int(expected.argmax())]
    # whatever the blank holds is not read: the same slot with a word in it gives the same distribution
    assert torch.allclose(direct(elmo, [*words[:6], "river", "."], 6), expected, atol=1e-6)
    # whole words leave punctuation out, with each word's own probability
    whole = fill_in.fill_mask(elmo, None, "She put the money in the [mask].", top_k=5, whole_words=True)[0]
    assert whole == [g for g in got if g["token"] not in (",", ".")][:5]


def test_two_blanks_and_the_word_tokenizer(elmo):
    assert fill_in.sentence_words(elmo, "The boat's far [mask], of <mask>.") == [
        "The", "boat's", "far", "[MASK]", ",", "of", "[MASK]", "."]
    got = fill_in.fill_mask(elmo, None, "a [MASK] of the [MASK] .", top_k=3)
    assert len(got) == 2
    assert got[1][0]["prob"] == pytest.approx(float(direct(elmo, "a [MASK] of the [MASK] .".split(), 4).max()),
                                              abs=1e-6)


def test_a_hidden_word_is_scored_whole_and_a_word_the_vocabulary_lacks_is_refused(elmo):
    text = "She put her money in the bank ."
    score = fill_in.mask_word(elmo, None, text, "bank", top_k=4)
    probs = direct(elmo, text.split(), 6)
    row = VOCAB.index("bank")
    assert score.pieces == ["bank"] and score.word_index == 6
    assert score.prob == pytest.approx(float(probs[row]), abs=1e-6)
    assert score.rank == int((probs > probs[row]).sum()) + 1 and score.piece_ranks == [score.rank]
    assert len(score.top[0]) == 4
    assert fill_in.mask_word(elmo, None, text, "BANK").word == "bank"  # matched in any case when not exact
    with pytest.raises(ValueError, match="'zebra' is not in elmo-lm's output vocabulary"):
        fill_in.mask_word(elmo, None, "She put a zebra in the bank .", "zebra")
    with pytest.raises(ValueError, match="occurs not at all"):
        fill_in.mask_word(elmo, None, text, "river")


def test_what_an_elmo_answer_rests_on_leaves_each_word_out(elmo):
    text = "She put the money in the [MASK] ."
    words = text.split()
    effects = fill_in.guess_effects(elmo, None, text, whole_words=False)
    first = fill_in.fill_mask(elmo, None, text, top_k=1)[0][0]
    assert effects.answer == first["token"] and effects.prob == pytest.approx(first["prob"], abs=1e-6)
    assert effects.hidden_probs[6] is None
    row = VOCAB.index(effects.answer)
    for j in (0, 3, 5, 7):
        shorter = words[:j] + words[j + 1:]
        assert effects.hidden_probs[j] == pytest.approx(float(direct(elmo, shorter, 6 - (j < 6))[row]), abs=1e-6)
    named = fill_in.guess_effects(elmo, None, text, guess="Paris")
    assert named.answer == "Paris"
    with pytest.raises(ValueError, match="'zebra' is not in"):
        fill_in.guess_effects(elmo, None, text, guess="zebra")
    hidden = fill_in.word_effects(elmo, None, "She put the money in the bank .", "money")
    score = fill_in.mask_word(elmo, None, "She put the money in the bank .", "money")
    assert hidden.answer == "money" and hidden.prob == pytest.approx(score.prob, abs=1e-6)
    assert hidden.hidden_probs[3] is None
    assert hidden.hidden_probs[6] == pytest.approx(
        fill_in.mask_word(elmo, None, "She put the money in the .", "money").prob, abs=1e-6)


def test_what_an_elmo_answer_rests_on_by_integrated_gradients(elmo):
    text = "She put the money in the [MASK] ."
    words = text.split()
    first = fill_in.fill_mask(elmo, None, text, top_k=1)[0][0]
    result = fill_in.guess_attributions(elmo, None, text, whole_words=False, steps=64)
    assert result.answer == first["token"] and result.prob == pytest.approx(first["prob"], rel=1e-5)
    assert result.scores[6] is None and all(s is not None for j, s in enumerate(result.scores) if j != 6)
    # the path starts at the sentence with every word read as the unknown word [MASK], as ELMo reads a blank
    baseline = ["[MASK]"] * len(words)
    row = VOCAB.index(result.answer)
    assert result.baseline_prob == pytest.approx(float(direct(elmo, baseline, 6)[row]), rel=1e-4)
    total = sum(s for s in result.scores if s is not None)
    assert abs(result.gap) < 0.01 and total == pytest.approx(math.log(result.prob / result.baseline_prob), abs=0.01)
    named = fill_in.guess_attributions(elmo, None, text, guess="Paris", steps=4)
    assert named.answer == "Paris" and named.prob == pytest.approx(float(direct(elmo, words, 6)[VOCAB.index("Paris")]),
                                                                    rel=1e-5)
    hidden = fill_in.word_attributions(elmo, None, "She put the money in the bank .", "money", steps=4)
    score = fill_in.mask_word(elmo, None, "She put the money in the bank .", "money")
    assert hidden.answer == "money" and hidden.prob == pytest.approx(score.prob, rel=1e-5)
    assert hidden.scores[3] is None
    with pytest.raises(ValueError, match="'zebra' is not in"):
        fill_in.guess_attributions(elmo, None, text, guess="zebra")


def test_an_elmo_without_its_softmax_cannot_fill_in_and_says_why(tmp_path):
    save_elmo(ElmoLanguageModel(ElmoConfig.preset("tiny")), tmp_path / "no-lm")
    model = ctxmodels.load(str(tmp_path / "no-lm"))
    assert not fill_in.fills_blanks(model) and "softmax" in fill_in.why_no_fill(model)
    with pytest.raises(ValueError, match="no language-model softmax"):
        fill_in.fill_mask(model, None, "the [MASK] .")


def test_cli_fills_blanks_with_an_elmo(elmo, capsys):
    assert cli_main(["fill-mask", "--model", str(elmo.path), "--top-k", "3", "--json", "the [MASK] of the river"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == json.loads(json.dumps(fill_in.fill_mask(elmo, None, "the [MASK] of the river", top_k=3)))
    assert cli_main(["fill-mask", "--model", str(elmo.path), "--rests-on", "--word", "bank",
                     "She put her money in the bank ."]) == 0
    text = capsys.readouterr().out
    assert "'bank' (bank): probability" in text and "what 'bank' rests on" in text
    assert math.isfinite(float(text.split("probability ")[1].split(",")[0]))


@pytest.mark.usefixtures("app_env")
def test_the_fill_in_page_offers_an_elmo_beside_the_bert(elmo, monkeypatch):
    pytest.importorskip("streamlit.testing.v1")
    from tests.app_fixtures import assert_clean, charts, page, texts

    monkeypatch.setenv("CTXMODELS_APP_MODELS", str(elmo.path))
    at = page("fill_in", text="She put the money in the [MASK] .", fill_models=["bert-eltec", str(elmo.path)],
              why="1")
    assert_clean(at)
    assert "elmo-lm" in at.multiselect(key="fill_models").options
    assert at.multiselect(key="fill_models").value == ["bert-eltec", str(elmo.path)]
    titles = [spec["layout"]["title"]["text"] for spec in charts(at)]
    assert titles.count("[MASK]") == 2 and len([t for t in titles if "rests on" in t]) == 2
    assert any("elmo-eltec" in c and "softmax" in c for c in texts(at.caption))  # the tiny one without: not offered
    at = page("fill_in", text="She put her money in the bank .", fill_models=[str(elmo.path)], blank="bank")
    assert_clean(at)
    assert at.metric[0].label == "P(bank)"
    at = page("fill_in", text="She put a zebra in the bank .", fill_models=[str(elmo.path)], blank="zebra")
    assert not at.exception and any("not in elmo-lm's output vocabulary" in e for e in texts(at.error))
    at = page("models")  # the Models table says which models fill in blanks
    listed = at.dataframe[0].value.set_index("model")
    assert listed.loc["elmo-lm", "fill in"] and not listed.loc["elmo-eltec", "fill in"]
    assert listed.loc["bert-eltec", "fill in"]


def test_an_elmo_compares_two_sentences_blanks(elmo):
    a, b = "She put the money in the [MASK] .", "She put the river in the [MASK] ."
    change = fill_in.compare_blanks(elmo, a, b, top_k=2, whole_words=False)
    pa, pb = direct(elmo, a.split(), 6), direct(elmo, b.split(), 6)
    rows = [VOCAB.index(w) for w in change.words]
    assert change.prob_a == pytest.approx([float(pa[r]) for r in rows], abs=1e-6)
    assert change.prob_b == pytest.approx([float(pb[r]) for r in rows], abs=1e-6)
    ratios = [y / x for x, y in zip(change.prob_a, change.prob_b)]
    assert ratios == sorted(ratios, reverse=True) and len(rows) == 4
    assert ratios[0] == pytest.approx(max(float(pb[r] / pa[r]) for r in range(3, len(VOCAB))), rel=1e-4)
