"""A GPT in the analyses behind the pages: its queries and keys split out of GPT-2's one ``c_attn`` projection rebuild
its own attention weights (causal mask included), and its guesses from the words before a blank, after the sentence
and for a word of the sentence (``ctxmodels.analysis.next_word``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tests import test_objectives

tiny_gpt = test_objectives.tiny_gpt  # a GPT trained for two steps by `ctxmodels train gpt` (a fixture)
bert = test_objectives.bert  # the tiny random-weight BERT (a fixture)
SENTENCE = "The boat drifted towards the far bank of the river."


@pytest.fixture(scope="module")
def gpt(tiny_gpt):
    import ctxmodels

    return ctxmodels.load(tiny_gpt)


@pytest.fixture(scope="module")
def sharp_gpt(tiny_gpt):
    """The tiny GPT with its query and key weights scaled up: two training steps leave its attention nearly even
    over the words each position sees, and a check against even weights would prove little."""
    import ctxmodels

    m = ctxmodels.load(tiny_gpt)
    with torch.no_grad():
        for block in m.model.transformer.h:
            width = block.attn.embed_dim
            block.attn.c_attn.weight[:, :2 * width] *= 40.0
    return m


def own_attentions(m, enc) -> np.ndarray:
    """GPT-2's own attention probabilities (transformers' ``output_attentions``): [layers, heads, T, T]."""
    with torch.no_grad():
        out = m.model(input_ids=torch.tensor([enc.ids]), output_attentions=True)
    return torch.stack(out.attentions)[:, 0].numpy()


def test_queries_and_keys_split_from_c_attn_give_gpt2s_own_weights(sharp_gpt):
    from ctxmodels.analysis.attention import query_keys

    qk = query_keys(sharp_gpt, None, SENTENCE)
    enc = sharp_gpt.tokenizer.encode(SENTENCE)
    own = own_attentions(sharp_gpt, enc)
    assert qk.causal and qk.tokens == list(enc.tokens)
    assert qk.queries.shape == (own.shape[0], own.shape[1], len(enc.ids), sharp_gpt.dim // own.shape[1])
    assert own.max() > 0.9  # sharp: the check below has teeth
    # softmax over the positions each row sees, recomputed from our q and k alone, is the model's own
    for layer in range(own.shape[0]):
        for head in range(own.shape[1]):
            scores = qk.scores(layer, head)
            weights = np.exp(np.nan_to_num(scores - np.nanmax(scores, axis=1, keepdims=True), nan=-np.inf))
            weights /= weights.sum(axis=1, keepdims=True)
            np.testing.assert_allclose(weights, own[layer, head], atol=1e-4)
            assert np.isnan(scores[np.triu_indices(len(enc.ids), 1)]).all()  # a later word's key: no score
    # the first layer's queries and keys are c_attn's first two thirds of the first layer norm's output
    block = sharp_gpt.model.transformer.h[0]
    ids = torch.tensor([enc.ids])
    with torch.no_grad():
        x = sharp_gpt.model.transformer.wte(ids) + sharp_gpt.model.transformer.wpe(torch.arange(len(enc.ids)))
        q, k, _ = block.attn.c_attn(block.ln_1(x))[0].split(block.attn.embed_dim, dim=-1)
    heads = own.shape[1]
    np.testing.assert_allclose(qk.queries[0], q.reshape(len(enc.ids), heads, -1).transpose(0, 1).numpy(), atol=1e-5)
    np.testing.assert_allclose(qk.keys[0], k.reshape(len(enc.ids), heads, -1).transpose(0, 1).numpy(), atol=1e-5)


def test_a_later_words_key_is_masked_in_the_products(sharp_gpt):
    from ctxmodels.analysis.attention import query_keys
    from ctxmodels.viz.attention import query_key_view

    qk = query_keys(sharp_gpt, None, SENTENCE)
    row = 3
    products = qk.products(0, 1, row)
    assert np.isnan(products[row + 1:]).all() and np.isfinite(products[:row + 1]).all()
    np.testing.assert_allclose(products[:row + 1].sum(axis=1), qk.scores(0, 1)[row, :row + 1], rtol=1e-4, atol=1e-5)
    fig = query_key_view(qk.tokens, row, qk.queries[0, 1, row], qk.keys[0, 1], products, qk.attentions[0, 1, row])
    bars = fig.data[2].text
    assert all(t == "later: not seen" for t in bars[row + 1:]) and "not seen" not in "".join(bars[:row + 1])


def test_a_swapped_split_would_be_refused(sharp_gpt):
    """The check is what makes the split trustworthy: queries and keys swapped do not give the weights."""
    from ctxmodels.analysis.attention import query_keys
    from ctxmodels.analysis.query_key import QueryKeys, check_softmax_of_scores

    qk = query_keys(sharp_gpt, None, SENTENCE)
    swapped = QueryKeys(qk.keys, qk.queries, qk.attentions, qk.tokens, qk.word_ids, qk.sequence_ids, causal=True)
    with pytest.raises(ValueError, match="not the softmax of query"):
        check_softmax_of_scores(swapped, "gpt")
    with pytest.raises(ValueError, match="not the softmax of query"):  # nor without the causal mask
        check_softmax_of_scores(QueryKeys(qk.queries, qk.keys, qk.attentions, qk.tokens, qk.word_ids,
                                          qk.sequence_ids), "gpt")


def test_a_blank_is_guessed_from_the_words_before_it_only(gpt):
    from ctxmodels.analysis import fill_in, next_word

    a = next_word.blank_guesses(gpt, "The boat drifted towards the far [MASK] of the river.", top_k=5)
    b = next_word.blank_guesses(gpt, "The boat drifted towards the far [MASK] in town, [MASK] said.", top_k=5)
    assert len(a) == 1 and len(a[0]) == 5 and a == b  # the words after the blank change nothing
    assert next_word.next_guesses(gpt, "The boat drifted towards the far", top_k=5) == a[0]
    whole = next_word.blank_guesses(gpt, "The boat drifted towards the [MASK].", top_k=8, whole_words=True)[0]
    assert all(not g["token"].startswith("##") and any(c.isalnum() for c in g["token"]) for g in whole)
    with pytest.raises(ValueError, match="no \\[MASK\\]"):
        next_word.blank_guesses(gpt, "No blank here.")
    with pytest.raises(ValueError, match="cannot fill in blanks"):  # the masked-LM path still refuses it
        fill_in.fill_mask(gpt, None, "The [MASK] of the river.")


def test_a_word_is_rated_from_the_words_before_it_by_the_chain_rule(gpt):
    from ctxmodels.analysis import next_word, objectives

    every = objectives.word_guesses(gpt, SENTENCE)
    for i, word in enumerate(every.words):
        s = next_word.word_score(gpt, SENTENCE, i, top_k=3)
        assert s.word == word and math.isclose(s.prob, every.prob[i], rel_tol=1e-4)
        assert math.isclose(s.prob, math.prod(s.piece_probs), rel_tol=1e-6) and s.rank == max(s.piece_ranks)
        assert len(s.top) == len(s.pieces)
    with pytest.raises(ValueError, match="a blank comes before 'bank'"):
        next_word.word_score(gpt, "The [MASK] bank of the river.", "bank")
    # the words after it change nothing
    assert next_word.word_score(gpt, "The far bank of the river.", "bank").prob == pytest.approx(
        next_word.word_score(gpt, "The far bank was closed.", "bank").prob, rel=1e-5)


def test_a_model_that_reads_both_ways_is_not_taken_for_one(gpt, bert):
    from ctxmodels.analysis import next_word

    assert next_word.reads_left_to_right(gpt) and not next_word.reads_left_to_right(bert)
    with pytest.raises(ValueError, match="not a left-to-right"):
        next_word.next_guesses(bert, "The far bank")


def test_the_guesses_layer_by_layer_read_the_head_after_the_final_norm(gpt):
    from ctxmodels.analysis import next_word

    text = "The boat drifted towards the far [MASK] of the river."
    lens = next_word.blank_by_layer(gpt, text, top_k=5, whole_words=False)
    assert lens.layer_names == gpt.layer_names and len(lens.top) == len(gpt.layer_names)
    own = next_word.blank_guesses(gpt, text, top_k=5)[0]
    assert [g["token"] for g in lens.top[-1]] == [g["token"] for g in own]  # the last layer: its own guesses
    assert np.allclose([g["prob"] for g in lens.top[-1]], [g["prob"] for g in own], atol=1e-6)
    # the embeddings' row, from the weights alone: the final norm and the head on word + position of "far"
    enc = gpt.tokenizer.encode_words(["The", "boat", "drifted", "towards", "the", "far"], gpt.max_length)[0]
    p = enc.word_pieces(5)[-1]
    t = gpt.model.transformer
    with torch.no_grad():
        x = t.wte.weight[enc.ids[p]] + t.wpe.weight[p]
        probs = gpt.model.lm_head(t.ln_f(x)).softmax(-1)
    assert lens.top[0][0]["prob"] == pytest.approx(float(probs.max()), rel=1e-4)
    word = next_word.word_by_layer(gpt, "The far bank of the river.", "bank", whole_words=False)
    assert word.answer == "bank" and word.answer_probs[-1] == pytest.approx(
        next_word.word_score(gpt, "The far bank of the river.", "bank").piece_probs[0], rel=1e-4)
