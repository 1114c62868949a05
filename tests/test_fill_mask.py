"""Fill-in: top-k guesses per [MASK] (checked against transformers' fill-mask pipeline), word scoring, the CLI,
which takes a GPT as the Fill in the blank page does (the first blank from the words before it, or the next word)."""

from __future__ import annotations

import json
import math

import pytest
import torch
import transformers

from ctxmodels.analysis import blanks
from ctxmodels.analysis.fill_in import (
    compare_blanks,
    fill_mask,
    guess_effects,
    is_whole_word,
    mask_word,
    normalize_masks,
    word_effects,
)
from ctxmodels.bert import BertForPreTraining
from ctxmodels.cli import main as cli_main
from tests import test_objectives
from tests.helpers import save_tiny_mlm_bert

tiny_gpt = test_objectives.tiny_gpt  # a GPT trained for two steps by `ctxmodels train gpt` (a fixture)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    directory = tmp_path_factory.mktemp("bert")
    return (*save_tiny_mlm_bert(directory), directory)


def test_one_list_per_mask_best_first(saved):
    model, tok, _ = saved
    out = fill_mask(model, tok, "the [MASK] of the river and the [MASK]", top_k=4)
    assert len(out) == 2
    for guesses in out:
        assert len(guesses) == 4 and set(guesses[0]) == {"token", "prob"}
        probs = [g["prob"] for g in guesses]
        assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1 + 1e-6
        assert all(tok.token_to_id(g["token"]) is not None for g in guesses)


@pytest.mark.slow
def test_matches_transformers_fill_mask_pipeline(saved):
    model, tok, directory = saved
    pipe = transformers.pipeline("fill-mask", model=str(directory), tokenizer=str(directory), top_k=5, device="cpu")
    for text in ["the [MASK] of the river", "she put [MASK] money in the [MASK] ."]:
        ours = fill_mask(model, tok, text, top_k=5)
        ref = pipe(text)
        ref = [ref] if isinstance(ref[0], dict) else ref
        assert len(ours) == len(ref)
        for o, r in zip(ours, ref):
            assert [g["token"] for g in o] == [tok.id_to_token(x["token"]) for x in r]
            for g, x in zip(o, r):
                assert g["prob"] == pytest.approx(x["score"], abs=1e-5)


def test_mask_word_single_piece_agrees_with_fill_mask(saved):
    model, tok, _ = saved
    text = "the bank of the river"
    full = fill_mask(model, tok, "the [MASK] of the river", top_k=tok.vocab_size)[0]
    score = mask_word(model, tok, text, "bank")
    assert score.pieces == ["bank"] and score.word == "bank" and score.word_index == 1
    rank = [g["token"] for g in full].index("bank") + 1
    assert score.rank == rank
    assert score.prob == pytest.approx(full[rank - 1]["prob"], abs=1e-6)
    assert score.top[0] == full[:5]


def test_mask_word_masks_every_piece_of_a_split_word(saved):
    model, tok, _ = saved
    text = "the bankers lend money"
    enc = tok.encode(text)
    word = enc.words.index("bankers")
    pieces = enc.word_pieces(word)
    assert len(pieces) >= 2, enc.tokens  # the small vocabulary splits it
    score = mask_word(model, tok, text, "Bankers")  # matched case-insensitively for an uncased model
    ids = torch.tensor([enc.ids])
    ids[0, pieces] = tok.mask_id
    with torch.no_grad():
        probs = model(ids).prediction_logits[0].softmax(-1)
    expected = [probs[p, enc.ids[p]].item() for p in pieces]
    assert score.piece_probs == pytest.approx(expected, abs=1e-6)
    assert score.prob == pytest.approx(math.prod(expected), rel=1e-5)
    ranks = [int((probs[p] > probs[p, enc.ids[p]]).sum()) + 1 for p in pieces]
    assert score.piece_ranks == ranks and score.rank == max(ranks)
    assert mask_word(model, tok, text.split(), 1).pieces == score.pieces  # pre-split words, by index


# -- blanks as written, whole words (issue 15) ----------------------------------------------------------------------


@pytest.mark.parametrize("written", ["[mask]", "[Mask]", "[MASK]", "<mask>", "<MASK>"])
def test_mask_spellings_are_read_as_mask(saved, written):
    model, tok, _ = saved
    assert normalize_masks(f"the {written} of the river") == "the [MASK] of the river"
    assert fill_mask(model, tok, f"the {written} of the {written}", top_k=3) == fill_mask(
        model, tok, "the [MASK] of the [MASK]", top_k=3)
    assert mask_word(model, tok, f"the {written} of the river", "river").to_dict() == mask_word(
        model, tok, "the [MASK] of the river", "river").to_dict()
    assert normalize_masks("[ mask ] <masked> [masks] mask") == "[ mask ] <masked> [masks] mask"  # only blanks


def test_is_whole_word():
    assert all(is_whole_word(t) for t in ["bank", "a", "42", "über", "don't"])
    assert not any(is_whole_word(t) for t in ["##s", "##ing", ".", ",", "'", "--", "[MASK]", "[CLS]", "[SEP]",
                                              "[PAD]", "[UNK]", "[unused3]", ""])


def test_whole_words_are_the_best_words_with_their_own_probabilities(saved):
    model, tok, _ = saved
    text = "the [MASK] of the [MASK] ."
    every = fill_mask(model, tok, text, top_k=tok.vocab_size)
    assert any(not is_whole_word(g["token"]) for g in every[0][:10]), "the small vocabulary should offer pieces"
    for k in (1, 5, 12):
        words = fill_mask(model, tok, text, top_k=k, whole_words=True)
        for mine, full in zip(words, every):
            assert len(mine) == k  # more candidates than k are looked at, so k remain
            assert mine == [g for g in full if is_whole_word(g["token"])][:k]  # the model's own probabilities
            assert all(tok.token_to_id(g["token"]) not in (tok.mask_id, tok.unk_id) for g in mine)


def test_whole_words_for_a_hidden_word_split_into_pieces(saved):
    model, tok, _ = saved
    text = "the bankers lend money"
    plain_score = mask_word(model, tok, text, "bankers", top_k=6)
    score = mask_word(model, tok, text, "bankers", top_k=6, whole_words=True)
    assert len(score.pieces) >= 2 and score.pieces[1].startswith("##")
    # the word's own probability and rank do not depend on what is shown
    assert (score.prob, score.rank, score.piece_ranks) == (plain_score.prob, plain_score.rank, plain_score.piece_ranks)
    assert all(is_whole_word(g["token"]) for g in score.top[0])  # the first slot takes a word
    for later in score.top[1:]:  # a continuation slot takes a piece: the pieces with a letter, no punctuation
        assert later and all(g["token"].startswith("##") and g["token"][2:].isalnum() for g in later)


def test_clear_errors(saved):
    model, tok, _ = saved
    with pytest.raises(ValueError, match=r"no \[MASK\]"):
        fill_mask(model, tok, "the bank of the river")
    with pytest.raises(ValueError, match="top_k"):
        fill_mask(model, tok, "the [MASK]", top_k=0)
    with pytest.raises(ValueError, match="'sea' occurs not at all"):
        mask_word(model, tok, "the bank of the river", "sea")
    with pytest.raises(ValueError, match="occurrence 2"):
        mask_word(model, tok, "the bank of the river", "the", occurrence=2)
    no_head = BertForPreTraining(model.config, mlm_head=False, nsp_head=False)
    with pytest.raises(ValueError, match="no masked-LM head"):
        fill_mask(no_head, tok, "the [MASK]")
    broken = BertForPreTraining(model.config).eval()
    with torch.no_grad():
        broken.cls.predictions.bias[3] = float("nan")
    with pytest.raises(ValueError, match="computed NaN or infinite scores"):  # never 'prob': nan
        fill_mask(broken, tok, "the [MASK]")


def test_cli_json_and_text_output(saved, capsys):
    model, tok, directory = saved
    assert cli_main(["fill-mask", "--model", str(directory), "--top-k", "3", "--json",
                     "the [MASK] of the [MASK]"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == json.loads(json.dumps(fill_mask(model, tok, "the [MASK] of the [MASK]", top_k=3)))
    assert len(out) == 2 and all(len(g) == 3 and set(g[0]) == {"token", "prob"} for g in out)
    assert cli_main(["fill-mask", "--model", str(directory), "the", "[MASK]", "of", "the", "river"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("[MASK]:") and len(text.strip().splitlines()) == 6
    assert cli_main(["fill-mask", "--model", str(directory), "--word", "bank", "the bank of the river"]) == 0
    assert "rank" in capsys.readouterr().out
    assert cli_main(["fill-mask", "--model", str(directory), "--top-k", "4", "--whole-words", "--json",
                     "the <mask> of the river"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == json.loads(json.dumps(fill_mask(model, tok, "the [MASK] of the river", top_k=4, whole_words=True)))


def test_cli_reports_problems_without_a_traceback(saved, capsys, tmp_path):
    _, _, directory = saved
    assert cli_main(["fill-mask", "--model", str(directory), "no mask here"]) == 2
    assert "no [MASK]" in capsys.readouterr().err
    assert cli_main(["fill-mask", "--model", str(tmp_path / "missing"), "the [MASK]"]) == 2
    assert "cannot find a model" in capsys.readouterr().err  # the same message as every --model


# -- which words an answer rests on ------------------------------------------------------------------------------


def _one_at_a_time(model, tok, text: str, position: int, word: int) -> torch.Tensor:
    """The probabilities at ``position`` with every piece of word ``word`` masked: one direct run of the model."""
    enc = tok.encode(text)
    ids = torch.tensor([enc.ids])
    ids[0, enc.word_pieces(word)] = tok.mask_id
    with torch.no_grad():
        return model(ids).prediction_logits[0, position].softmax(-1)


def test_a_guess_rests_on_what_hiding_each_word_does_to_it(saved):
    model, tok, _ = saved
    text = "the [MASK] of the river was steep"
    first = fill_mask(model, tok, text, top_k=1, whole_words=True)[0][0]
    effects = guess_effects(model, tok, text)
    assert effects.answer == first["token"] and effects.prob == pytest.approx(first["prob"], abs=1e-6)
    assert effects.words == text.split() and effects.hidden_probs[1] is None and effects.top_when_hidden[1] is None
    answer = tok.token_to_id(effects.answer)
    for i in (0, 2, 3, 4, 5, 6):  # "of", "river", "was", "steep" are several pieces in this small vocabulary
        probs = _one_at_a_time(model, tok, text, 2, i)  # the blank is piece 2, after [CLS] and "the"
        assert effects.hidden_probs[i] == pytest.approx(float(probs[answer]), abs=1e-6)
        best_word = next(t for t in (tok.id_to_token(j) for j in probs.argsort(descending=True).tolist())
                         if is_whole_word(t))
        assert effects.top_when_hidden[i] == best_word
        assert effects.changes[i] == pytest.approx(effects.hidden_probs[i] - effects.prob)
    assert len(tok.encode(text).word_pieces(6)) > 1  # so hiding a word masks all its pieces, as checked above
    assert guess_effects(model, tok, text).to_dict() == effects.to_dict()  # deterministic (dropout is off)


def test_a_named_guess_a_second_blank_and_pieces(saved):
    model, tok, _ = saved
    text = "the [MASK] of the [MASK]"
    guesses = fill_mask(model, tok, text, top_k=8)
    fourth = guesses[1][3]["token"]
    effects = guess_effects(model, tok, text, blank=1, guess=fourth, whole_words=False)
    assert effects.answer == fourth and effects.prob == pytest.approx(guesses[1][3]["prob"], abs=1e-6)
    assert effects.hidden_probs[1] is None and effects.hidden_probs[4] is None  # both blanks stay blanks
    # a vocabulary word far from the first guesses is found in the vocabulary
    rare = fill_mask(model, tok, text, top_k=tok.vocab_size)[1][-1]["token"]
    assert guess_effects(model, tok, text, blank=1, guess=rare, whole_words=False, search=3).answer == rare
    assert guess_effects(model, tok, text, whole_words=False).answer == guesses[0][0]["token"]


def test_a_hidden_word_rests_on_the_other_words(saved):
    model, tok, _ = saved
    text = "the bankers lend money to the river"
    score = mask_word(model, tok, text, "bankers")
    effects = word_effects(model, tok, text, "bankers")
    assert len(score.pieces) >= 2 and effects.answer == "bankers"
    assert effects.prob == pytest.approx(score.prob, rel=1e-5)  # the product of its pieces, as mask_word scores it
    assert effects.hidden_probs[1] is None
    enc = tok.encode(text)
    pieces = enc.word_pieces(1)
    for i in (0, 3, 6):  # hide word i too (all its pieces), then score the word's pieces as mask_word does
        ids = torch.tensor([enc.ids])
        ids[0, pieces + enc.word_pieces(i)] = tok.mask_id
        with torch.no_grad():
            probs = model(ids).prediction_logits[0].softmax(-1)
        expected = math.prod(float(probs[p, enc.ids[p]]) for p in pieces)
        assert effects.hidden_probs[i] == pytest.approx(expected, rel=1e-4)
    # a blank written in the text stays one
    with_blank = word_effects(model, tok, "the bankers [MASK] money", "money")
    assert with_blank.hidden_probs[2] is None and with_blank.hidden_probs[3] is None


def test_rests_on_clear_errors(saved, monkeypatch):
    model, tok, _ = saved
    with pytest.raises(ValueError, match=r"no \[MASK\]"):
        guess_effects(model, tok, "the bank of the river")
    with pytest.raises(ValueError, match="blank 3 does not exist: the text has 2"):
        guess_effects(model, tok, "the [MASK] of the [MASK]", blank=2)
    with pytest.raises(ValueError, match="not one piece of this model's vocabulary"):
        guess_effects(model, tok, "the [MASK] of the river", guess="zebrafish")
    with pytest.raises(ValueError, match="'sea' occurs not at all"):
        word_effects(model, tok, "the bank of the river", "sea")
    monkeypatch.setattr(blanks, "MAX_WORDS_TO_HIDE", 4)
    with pytest.raises(ValueError, match="5 words to hide .* up to 4 words: shorten it"):
        guess_effects(model, tok, "the [MASK] of the river was")
    assert len(guess_effects(model, tok, "the [MASK] of the river").words) == 5  # 4 to hide: shown


def test_cli_rests_on(saved, capsys):
    model, tok, directory = saved
    assert cli_main(["fill-mask", "--model", str(directory), "--rests-on", "--json", "the [MASK] of the river"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["guesses"] == json.loads(json.dumps(fill_mask(model, tok, "the [MASK] of the river")))
    assert out["rests_on"][0]["hidden_probs"] == pytest.approx(
        guess_effects(model, tok, "the [MASK] of the river", whole_words=False).hidden_probs)
    assert cli_main(["fill-mask", "--model", str(directory), "--rests-on", "--word", "river",
                     "the bank of the river"]) == 0
    text = capsys.readouterr().out
    assert "what 'river' rests on" in text and text.count("first guess then") == 4
    assert cli_main(["fill-mask", "--model", str(directory), "--guess", "bank", "the [MASK] of the river"]) == 2
    assert "add --rests-on" in capsys.readouterr().err


def test_compare_blanks_ranks_what_gains_and_loses_from_one_sentence_to_the_other(saved):
    import ctxmodels

    model = ctxmodels.load(str(saved[2]))
    a, b = "the [MASK] of the river", "the [MASK] of the money"
    change = compare_blanks(model, a, b, top_k=3, whole_words=True)
    full_a = {g["token"]: g["prob"] for g in fill_mask(model, None, a, top_k=1000, whole_words=True)[0]}
    full_b = {g["token"]: g["prob"] for g in fill_mask(model, None, b, top_k=1000, whole_words=True)[0]}
    assert len(change.words) == 6 and len(set(change.words)) == 6 and set(change.words) <= set(full_a)
    assert change.prob_a == pytest.approx([full_a[w] for w in change.words], rel=1e-5)
    assert change.prob_b == pytest.approx([full_b[w] for w in change.words], rel=1e-5)
    ratios = [pb / pa for pa, pb in zip(change.prob_a, change.prob_b)]
    assert ratios == sorted(ratios, reverse=True)
    # the vocabulary is smaller than the pool: the extremes are those of every whole word
    every = sorted(full_b[w] / full_a[w] for w in full_a)
    assert ratios[0] == pytest.approx(every[-1]) and ratios[-1] == pytest.approx(every[0])
    assert (change.text_a, change.text_b) == (a, b)


def test_compare_blanks_needs_one_blank_in_each_sentence(saved):
    import ctxmodels

    model = ctxmodels.load(str(saved[2]))
    with pytest.raises(ValueError, match="sentence A has 2 blanks"):
        compare_blanks(model, "the [MASK] and the [MASK]", "the [MASK] bank")
    with pytest.raises(ValueError, match="sentence B has 0 blanks"):
        compare_blanks(model, "the [MASK] bank", "the river bank")
    with pytest.raises(ValueError, match="top_k"):
        compare_blanks(model, "the [MASK] bank", "a [MASK] bank", top_k=0)


def test_rank_agreement_of_the_two_methods():
    effects = {"words": list("abcde"), "answer": "x", "prob": 0.5,
               "hidden_probs": [0.05, 0.25, 0.5, 1.0, None], "top_when_hidden": ["x"] * 4 + [None]}
    same_order = {"scores": [3.0, 1.0, 0.0, -2.0, None]}  # the more hiding costs, the larger the share
    assert blanks.rank_agreement(effects, same_order) == pytest.approx(1.0)
    assert blanks.rank_agreement(effects, {"scores": [-3.0, -1.0, 0.0, 2.0, None]}) == pytest.approx(-1.0)
    assert blanks.rank_agreement(effects, {"scores": [None, None, 1.0, 2.0, 3.0]}) is None  # two words in common
    assert blanks.rank_agreement(effects, {"scores": [1.0, 1.0, 1.0, 1.0, None]}) is None  # no order to compare


# -- a left-to-right model (a GPT) -----------------------------------------------------------------------------------


def test_cli_guesses_a_gpts_first_blank_from_the_words_before_it(tiny_gpt, capsys):
    import ctxmodels
    from ctxmodels.analysis import next_word

    gpt, text = ctxmodels.load(tiny_gpt), "The boat drifted towards the far [MASK] of the [MASK] river."
    assert cli_main(["fill-mask", "--model", str(tiny_gpt), "--top-k", "4", "--json", text]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out) == json.loads(json.dumps(next_word.blank_guesses(gpt, text, top_k=4)))
    note = out.err.strip().splitlines()
    assert len(note) == 1 and "first blank" in note[0] and "words before it" in note[0]
    assert "the later blank is not guessed" in note[0]
    assert cli_main(["fill-mask", "--model", str(tiny_gpt), "--top-k", "3", text]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "reads left to right" in lines[0] and lines[1] == "[MASK]:" and len(lines) == 5  # the masked LMs' format
    assert lines[2].split()[0] == next_word.blank_guesses(gpt, text, top_k=3)[0][0]["token"]


def test_cli_gives_a_gpts_next_word_when_the_text_has_no_blank(tiny_gpt, capsys):
    import ctxmodels
    from ctxmodels.analysis import next_word

    gpt, text = ctxmodels.load(tiny_gpt), "The boat drifted towards the far"
    assert cli_main(["fill-mask", "--model", str(tiny_gpt), "--top-k", "4", "--whole-words", "--json", text]) == 0
    out = capsys.readouterr()
    expected = next_word.next_guesses(gpt, text, top_k=4, whole_words=True)
    assert json.loads(out.out) == json.loads(json.dumps([expected])) and "no [MASK]" in out.err
    assert cli_main(["fill-mask", "--model", str(tiny_gpt), "--by-layer", text]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "no [MASK]" in lines[0] and lines[1] == "next word:" and "layer by layer" in lines[7]
    assert len(lines) == 8 + len(gpt.layer_names)


def test_cli_rates_a_word_with_a_gpt_and_refuses_rests_on(tiny_gpt, capsys):
    import ctxmodels
    from ctxmodels.analysis import next_word

    gpt, text = ctxmodels.load(tiny_gpt), "The far bank of the river."
    assert cli_main(["fill-mask", "--model", str(tiny_gpt), "--json", "--word", "bank", text]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out) == json.loads(json.dumps(next_word.word_score(gpt, text, "bank").to_dict()))
    assert "rates the word from the words before it" in out.err
    assert cli_main(["fill-mask", "--model", str(tiny_gpt), "--rests-on", "The [MASK] of the river."]) == 2
    err = capsys.readouterr().err
    assert "--rests-on" in err and "left-to-right" in err and "Traceback" not in err
