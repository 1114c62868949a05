"""The guesses the masked-LM head reads from every layer at a blank (exBERT's guesses per layer, the logit lens):
our BERT against its head applied by hand, every encoder family transformers reads against its own head on each
hidden state, ELMo against its softmax on each layer's states; the last layer's are always the model's guesses."""

from __future__ import annotations

import json

import pytest
import torch

import ctxmodels
from ctxmodels.analysis import fill_in
from ctxmodels.analysis.blanks import layer_guesses
from ctxmodels.char_ids import batch_to_char_ids
from tests.helpers import save_tiny_mlm_bert
from tests.test_elmo_blanks import direct, elmo  # noqa: F401 - the tiny ELMo fixture and its written-out blank

TEXT = "the [MASK] of the river"


def same(a: list[dict], b: list[dict], rel: float = 1e-5) -> bool:
    """Two lists of guesses: the same tokens in the same order, with the same probabilities."""
    return [g["token"] for g in a] == [g["token"] for g in b] and \
        [g["prob"] for g in a] == pytest.approx([g["prob"] for g in b], rel=rel)


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return save_tiny_mlm_bert(tmp_path_factory.mktemp("bert"))


def test_the_head_on_every_hidden_state_of_our_bert(bert):
    model, tok = bert
    result = fill_in.guesses_by_layer(model, tok, TEXT, top_k=3, whole_words=False)
    assert result.layer_names == ["embeddings", "layer 1", "layer 2"]
    enc = tok.encode(TEXT)
    position = enc.ids.index(tok.mask_id)
    with torch.no_grad():
        hidden = model.bert(torch.tensor([enc.ids]), output_hidden_states=True).hidden_states
        probs = [model.cls.predictions(h[0, position]).softmax(-1) for h in hidden]
    for row, p in zip(result.top, probs):
        best = p.topk(3)
        assert [g["token"] for g in row] == [tok.id_to_token(i) for i in best.indices.tolist()]
        assert [g["prob"] for g in row] == pytest.approx(best.values.tolist(), rel=1e-5)
    # the last layer's guesses are the model's own, and its answer ranks first there
    own = fill_in.fill_mask(model, tok, TEXT, top_k=3)[0]
    assert same(result.top[-1], own) and result.answer == own[0]["token"]
    assert result.answer_ranks[-1] == 1 and result.answer_probs[-1] == pytest.approx(own[0]["prob"])
    answer = tok.token_to_id(result.answer)
    assert result.answer_ranks == [int((p > p[answer]).sum()) + 1 for p in probs]


def test_another_blank_and_a_blank_that_is_not_there(bert):
    model, tok = bert
    two = "the [MASK] of the [MASK]"
    second = fill_in.guesses_by_layer(model, tok, two, blank=1, top_k=2)
    assert same(second.top[-1], fill_in.fill_mask(model, tok, two, top_k=2, whole_words=True)[1])
    with pytest.raises(ValueError, match="blank 3 does not exist: the text has 2 blank"):
        fill_in.guesses_by_layer(model, tok, two, blank=2)
    with pytest.raises(ValueError, match="has no \\[MASK\\]"):
        fill_in.guesses_by_layer(model, tok, "the bank of the river")


def test_ranks_count_only_the_guesses_that_may_be_shown():
    probs = torch.tensor([[0.5, 0.3, 0.2], [0.1, 0.2, 0.7]])
    allowed = torch.tensor([False, True, True])
    result = layer_guesses(["a", "b"], probs, ["##x", "y", "z"].__getitem__, allowed, top_k=5)
    assert result.answer == "z" and result.answer_ranks == [2, 1]  # "##x" is not counted above "z" in layer a
    assert [[g["token"] for g in row] for row in result.top] == [["y", "z"], ["z", "y"]]  # only two may be shown
    with pytest.raises(ValueError, match="top_k"):
        layer_guesses(["a"], probs[:1], str, allowed, top_k=0)


@pytest.mark.parametrize("family", ["bert", "roberta", "distilbert", "albert", "electra-generator", "deberta-v2"])
def test_every_encoder_family_transformers_reads(tmp_path, family):
    from tests.hf_tiny import build

    model = ctxmodels.load(build(family, tmp_path / family))
    text = "The bank by the [MASK] was steep."
    result = fill_in.guesses_by_layer(model, None, text, top_k=2)
    assert len(result.layer_names) == len(result.top) == model.n_layers
    assert same(result.top[-1], fill_in.fill_mask(model, None, text, top_k=2, whole_words=True)[0], rel=1e-4)
    assert result.answer_ranks[-1] == 1
    if family == "bert":  # a middle layer, by the family's own head applied by hand
        raw = fill_in.guesses_by_layer(model, None, text, top_k=1, whole_words=False)
        enc = model.tokenizer.encode(fill_in.normalize_masks(text))
        position = enc.ids.index(model.tokenizer.mask_id)
        with torch.no_grad():
            out = model.model(**model.tokenizer.collate([enc]), output_hidden_states=True)
            middle = model.model.cls.predictions(out.hidden_states[1])[0, position].softmax(-1)
        assert raw.top[1][0]["prob"] == pytest.approx(float(middle.max()), rel=1e-4)
        assert raw.top[1][0]["token"] == model.tokenizer.id_to_token(int(middle.argmax()))


def test_elmo_follows_a_hidden_word_layer_by_layer(elmo):  # noqa: F811 - the fixture
    text = "She put the money in the bank ."
    result = fill_in.hidden_by_layer(elmo, None, text, "bank", whole_words=False)
    score = fill_in.mask_word(elmo, None, text, "bank")
    assert result.answer == "bank" and result.answer_ranks[-1] == score.rank
    assert result.answer_probs[-1] == pytest.approx(score.prob, rel=1e-5)


def test_elmo_reads_its_softmax_from_every_layer_next_to_the_blank(elmo):  # noqa: F811 - the fixture
    text = "She put the money in the [MASK] ."
    result = fill_in.guesses_by_layer(elmo, None, text, top_k=3, whole_words=False)
    assert result.layer_names == elmo.layer_names and len(result.top) == 3
    words = text.split()
    slot = words.index("[MASK]")
    own = direct(elmo, words, slot)
    best = own.topk(3)
    assert [g["token"] for g in result.top[-1]] == [elmo.model.vocab[i] for i in best.indices.tolist()]
    assert [g["prob"] for g in result.top[-1]] == pytest.approx(best.values.tolist(), rel=1e-4)
    # the character layer: the vectors of the word before and of the word after, through the one softmax
    lm = elmo.model
    char_ids, mask = batch_to_char_ids([words], add_boundaries=True,
                                       max_chars=lm.config.char_cnn.max_characters_per_token)
    with torch.no_grad():
        e = lm(char_ids, mask).token_embedding[0]
        log_p = torch.log_softmax(lm.full_softmax_logits(torch.stack([e[slot], e[slot + 2]])), -1)
    joint = log_p[0] + log_p[1]
    joint[[lm.vocab.index(s) for s in ("<S>", "</S>", "<UNK>")]] = -float("inf")
    char = joint.softmax(-1)
    assert result.top[0][0]["prob"] == pytest.approx(float(char.max()), rel=1e-4)
    assert result.top[0][0]["token"] == lm.vocab[int(char.argmax())]


def test_the_command_line_prints_each_layer_and_the_answers_rank(tmp_path, capsys):
    from ctxmodels.cli import main

    model, tok = save_tiny_mlm_bert(tmp_path / "bert")
    argv = ["fill-mask", "--model", str(tmp_path / "bert"), "--by-layer", "--top-k", "2"]
    assert main([*argv, TEXT]) == 0
    out = capsys.readouterr().out.splitlines()
    expected = fill_in.guesses_by_layer(model, tok, TEXT, top_k=2, whole_words=False)
    assert f"layer by layer (the rank of {expected.answer!r}" in out[3]
    assert [line.split()[0] for line in out[4:]] == ["embeddings", "layer", "layer"]
    assert [int(line.split("#")[1].split()[0].replace(",", "")) for line in out[4:]] == expected.answer_ranks
    assert main([*argv, "--json", TEXT]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["by_layer"][0]["answer_ranks"] == expected.answer_ranks and "rests_on" not in result
    assert main([*argv, "--word", "bank", "--json", "the bank of the river"]) == 0
    hidden = json.loads(capsys.readouterr().out)["by_layer"]
    assert hidden["answer"] == "bank"
    assert hidden["answer_ranks"] == fill_in.hidden_by_layer(model, tok, "the bank of the river", "bank",
                                                             whole_words=False).answer_ranks


def test_a_hidden_word_is_followed_layer_by_layer(bert):
    model, tok = bert
    text = "the bank of the river"
    result = fill_in.hidden_by_layer(model, tok, text, "bank", top_k=3, whole_words=False)
    score = fill_in.mask_word(model, tok, text, "bank", top_k=3)
    assert result.answer == "bank" and result.answer_ranks[-1] == score.rank
    assert result.answer_probs[-1] == pytest.approx(score.prob, rel=1e-5)
    assert same(result.top[-1], score.top[0])
    # a word the tokenizer splits is followed by its first piece, read where the page shows it
    split = "the bankers of the river"
    pieces = fill_in.mask_word(model, tok, split, "bankers")
    assert len(pieces.pieces) > 1
    first = fill_in.hidden_by_layer(model, tok, split, "bankers", whole_words=False)
    assert first.answer == pieces.pieces[0] and first.answer_ranks[-1] == pieces.piece_ranks[0]
    with pytest.raises(ValueError, match="occurs not at all"):
        fill_in.hidden_by_layer(model, tok, text, "boat")  # not in the text
