"""Attention maps: word-piece merging, hiding specials, rollout and head summaries on hand-made maps, plus one
real forward pass through a tiny random BERT."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from ctxmodels.analysis.attention import (
    AttentionMaps,
    attention_maps,
    attention_rollout,
    compute_attention,
    has_next_sentence_head,
    head_summaries,
    hide_special,
    map_table,
    mean_over_heads,
    merge_word_pieces,
    next_sentence_probability,
    query_keys,
    rank_heads,
)
from ctxmodels.bert import BertConfig, BertForPreTraining
from ctxmodels.tokenization import WordPieceTokenizer

# [CLS] ba ##nk ok [SEP]: "bank" is two pieces. Rows = from, columns = to; every row sums to 1.
PIECES = ["[CLS]", "ba", "##nk", "ok", "[SEP]"]
WORD_IDS = [None, 0, 0, 1, None]
HAND = np.array(
    [
        [0.1, 0.2, 0.3, 0.4, 0.0],
        [0.0, 0.5, 0.5, 0.0, 0.0],
        [0.2, 0.2, 0.2, 0.2, 0.2],
        [0.0, 0.0, 0.0, 0.0, 1.0],
        [0.25, 0.25, 0.25, 0.25, 0.0],
    ]
)


def hand_maps() -> AttentionMaps:
    return attention_maps(HAND[None, None], PIECES, word_ids=WORD_IDS, words=["bank", "ok"])


def test_merge_word_pieces_sums_columns_and_averages_rows():
    merged = merge_word_pieces(hand_maps())
    assert merged.tokens == ["[CLS]", "bank", "ok", "[SEP]"]
    assert merged.word_ids == [None, 0, 1, None] and merged.level == "word"
    expected = np.array(
        [
            [0.1, 0.5, 0.4, 0.0],  # TO bank = 0.2 + 0.3
            [0.1, 0.7, 0.1, 0.1],  # FROM bank = mean of the rows of "ba" and "##nk"
            [0.0, 0.0, 0.0, 1.0],
            [0.25, 0.5, 0.25, 0.0],
        ]
    )
    assert np.allclose(merged.attentions[0, 0], expected)
    assert np.allclose(merged.attentions.sum(-1), 1.0)


def test_merge_handles_pieces_that_are_not_adjacent():
    # word 0 at positions 1 and 3: the same sums, against a one-hot matrix product as the oracle
    maps = attention_maps(HAND[None, None], ["[CLS]", "x", "y", "z", "[SEP]"], word_ids=[None, 0, 1, 0, None])
    M = np.zeros((5, 4))
    M[[0, 1, 2, 3, 4], [0, 1, 2, 1, 3]] = 1
    expected = M.T @ HAND @ M / M.sum(axis=0)[:, None]
    merged = merge_word_pieces(maps)
    assert merged.tokens == ["[CLS]", "xz", "y", "[SEP]"]
    assert np.allclose(merged.attentions[0, 0], expected)


def test_merge_without_word_list_joins_pieces():
    maps = attention_maps(HAND[None, None], PIECES, word_ids=WORD_IDS)
    assert merge_word_pieces(maps).tokens == ["[CLS]", "bank", "ok", "[SEP]"]


def test_hide_special_renormalises_rows_and_keeps_the_hidden_share():
    hidden = hide_special(merge_word_pieces(hand_maps()))
    assert hidden.tokens == ["bank", "ok"]
    # bank's row (0.1 [CLS], 0.7, 0.1, 0.1 [SEP]) keeps 0.8 -> (0.875, 0.125); "ok" gave everything to [SEP]
    assert np.allclose(hidden.attentions[0, 0], [[0.875, 0.125], [0.0, 0.0]])
    assert np.allclose(hidden.hidden_share[0, 0], [0.2, 1.0])
    # only [SEP] hidden: [CLS] stays, rows renormalised over the rest
    only_sep = hide_special(merge_word_pieces(hand_maps()), which=["[SEP]"])
    assert only_sep.tokens == ["[CLS]", "bank", "ok"]
    assert np.allclose(only_sep.attentions[0, 0, 1], np.array([0.1, 0.7, 0.1]) / 0.9)
    with pytest.raises(ValueError, match="every position"):
        hide_special(attention_maps(np.full((1, 1, 2, 2), 0.5), ["[CLS]", "[SEP]"]))


def test_rollout_identity_and_uniform_two_layers():
    T = 4
    U = np.full((T, T), 1 / T)
    I = np.eye(T)
    tokens = ["[CLS]", "a", "b", "[SEP]"]
    ident = attention_rollout(attention_maps(np.stack([I, I])[:, None], tokens))
    assert ident.attentions.shape == (2, 1, T, T) and np.allclose(ident.attentions, I)

    uniform = attention_rollout(attention_maps(np.stack([U, U])[:, None], tokens))
    # layer 1: 0.5 U + 0.5 I; layer 2: (0.5 U + 0.5 I)^2 = 0.75 U + 0.25 I (U @ U = U)
    assert np.allclose(uniform.attentions[0, 0], 0.5 * U + 0.5 * I)
    assert np.allclose(uniform.attentions[1, 0], 0.75 * U + 0.25 * I)
    assert uniform.attentions[1, 0, 0, 0] == pytest.approx(0.4375)
    no_residual = attention_rollout(attention_maps(np.stack([U, U])[:, None], tokens), residual=False)
    assert np.allclose(no_residual.attentions[1, 0], U)


def test_rollout_multiplies_in_layer_order_and_averages_heads():
    to_b = np.array([[0.0, 1.0], [0.0, 1.0]])  # layer 1: everyone reads token b
    to_a = np.array([[1.0, 0.0], [1.0, 0.0]])  # layer 2: everyone reads position a, which holds b's input
    r = attention_rollout(attention_maps(np.stack([to_b, to_a])[:, None], ["a", "b"]), residual=False)
    assert np.allclose(r.attentions[1, 0], to_b)  # R2 = A2 @ A1
    # two heads: the mean over heads is what is rolled out
    two_heads = np.stack([to_b, to_a])[None]  # one layer, heads (to_b, to_a): mean = uniform
    r = attention_rollout(attention_maps(two_heads, ["a", "b"]), residual=False)
    assert np.allclose(r.attentions[0, 0], 0.5)
    with pytest.raises(ValueError, match="roll out the maps first"):
        attention_rollout(hide_special(hand_maps()))


def test_mean_over_heads():
    maps = attention_maps(np.stack([HAND, np.eye(5)])[None], PIECES, word_ids=WORD_IDS)
    m = mean_over_heads(maps)
    assert m.attentions.shape == (1, 1, 5, 5) and m.head_names == ["mean"]
    assert np.allclose(m.attentions[0, 0], (HAND + np.eye(5)) / 2)


def summary_maps() -> AttentionMaps:
    tokens = ["[CLS]", "a", "b", "[SEP]"]
    prev = np.zeros((4, 4))
    prev[0, 0] = 1.0  # [CLS] has no previous token: it attends to itself
    for i in range(1, 4):
        prev[i, i - 1] = 1.0
    uniform = np.full((4, 4), 0.25)
    to_sep = np.zeros((4, 4))
    to_sep[:, 3] = 1.0
    return attention_maps(np.stack([np.stack([prev, uniform]), np.stack([to_sep, uniform])]), tokens)


def test_head_summaries_on_hand_made_heads():
    s = head_summaries(summary_maps())
    assert list(zip(s["layer"], s["head"])) == [(1, 1), (1, 2), (2, 1), (2, 2)]
    prev = s.iloc[0]
    assert prev["to_prev"] == 1.0 and prev["to_next"] == 0.0 and prev["entropy"] == 0.0
    assert prev["to_self"] == pytest.approx(0.25)  # only [CLS]'s row (1 of 4) is on itself
    assert prev["to_cls"] == pytest.approx(0.5) and prev["to_sep"] == 0.0  # rows 0 and 1 look at [CLS]
    uni = s.iloc[1]
    assert uni["entropy"] == pytest.approx(math.log(4))
    for col in ("to_cls", "to_sep", "to_self", "to_prev", "to_next"):
        assert uni[col] == pytest.approx(0.25)
    sep = s.iloc[2]
    assert sep["to_sep"] == 1.0 and sep["entropy"] == 0.0 and sep["to_next"] == pytest.approx(1 / 3)


def test_head_summaries_after_hiding_have_no_cls_column():
    s = head_summaries(hide_special(summary_maps()))
    assert s["to_cls"].isna().all() and s["to_sep"].isna().all()
    # layer 2 head 1 gave everything to [SEP]: its rows are empty after hiding and leave the means
    assert s.iloc[2][["entropy", "to_self"]].isna().all()


def test_rank_heads():
    s = head_summaries(summary_maps())
    top = rank_heads(s, by="to_prev", top=1)
    assert (top.iloc[0]["layer"], top.iloc[0]["head"]) == (1, 1)
    ranked = rank_heads(s, by="entropy", ascending=True)
    assert list(ranked["entropy"]) == sorted(s["entropy"])
    with pytest.raises(ValueError, match="cannot rank heads by 'wobble'"):
        rank_heads(s, by="wobble")
    with pytest.raises(ValueError, match="positive"):
        rank_heads(s, top=0)


def test_attention_maps_bad_input():
    with pytest.raises(ValueError, match="5 positions but 4 tokens"):
        attention_maps(HAND[None, None], PIECES[:4])
    with pytest.raises(ValueError, match="batch of 2"):
        attention_maps((torch.rand(2, 1, 5, 5),), PIECES)
    with pytest.raises(ValueError, match="output_attentions"):
        attention_maps((), PIECES)
    with pytest.raises(ValueError, match=r"\[layers, heads, T, T\]"):
        attention_maps(np.ones((5, 5)), PIECES)
    with pytest.raises(ValueError, match="negative or non-finite"):
        attention_maps(-HAND[None, None], PIECES)


@pytest.fixture(scope="module")
def tiny_bert():
    torch.manual_seed(0)
    texts = ["the bank raised its interest rates", "we sat on the river bank", "an unremarkable banking day"] * 30
    tokenizer = WordPieceTokenizer.train(texts, vocab_size=80, min_frequency=1)
    model = BertForPreTraining(BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size))
    return model, tokenizer


def test_compute_attention_matches_the_model(tiny_bert):
    model, tokenizer = tiny_bert
    model.train()
    maps = compute_attention(model, tokenizer, "the unremarkable bank", pair="a river")
    assert model.training  # restored
    cfg = model.config
    T = maps.n_tokens
    assert maps.attentions.shape == (cfg.num_hidden_layers, cfg.num_attention_heads, T, T)
    assert maps.tokens[0] == "[CLS]" and maps.tokens.count("[SEP]") == 2
    assert set(maps.sequence_ids) == {None, 0, 1}
    assert np.allclose(maps.attentions.sum(-1), 1.0, atol=1e-5)

    enc = tokenizer.encode("the unremarkable bank", pair="a river")
    model.eval()
    with torch.no_grad():
        out = model(torch.tensor([enc.ids]), token_type_ids=torch.tensor([enc.type_ids]), output_attentions=True)
    assert np.allclose(maps.attentions, torch.stack(out.attentions)[:, 0].numpy(), atol=1e-6)

    words = merge_word_pieces(maps)
    assert words.tokens == ["[CLS]", "the", "unremarkable", "bank", "[SEP]", "a", "river", "[SEP]"]
    assert np.allclose(words.attentions.sum(-1), 1.0, atol=1e-5)
    assert len(head_summaries(maps)) == cfg.num_hidden_layers * cfg.num_attention_heads


def test_compute_attention_truncates_to_max_length(tiny_bert):
    model, tokenizer = tiny_bert
    with pytest.warns(UserWarning, match="truncated"):
        maps = compute_attention(model, tokenizer, "the bank " * 20, max_length=10)
    assert maps.n_tokens == 10 and maps.tokens[-1] == "[SEP]"


def test_compute_attention_bad_input(tiny_bert):
    model, tokenizer = tiny_bert

    class NoAttention:  # the shape of a loaded static / ELMo model
        name, kind, has_attention = "static-test", "static", False

    with pytest.raises(ValueError, match="no attention maps"):
        compute_attention(NoAttention(), None, "a text")
    with pytest.raises(ValueError, match="needs the model's tokenizer"):
        compute_attention(model, None, "a text")
    with pytest.raises(ValueError, match="empty text"):
        compute_attention(model, tokenizer, "  ")


def direct_is_next(model, tokenizer, a: str, b: str) -> float:
    """P(IsNext) from a forward pass of the whole model: softmax of its NSP logits, index 0 (IsNext)."""
    enc = tokenizer.encode(a, pair=b)
    model.eval()
    with torch.no_grad():
        out = model(torch.tensor([enc.ids]), token_type_ids=torch.tensor([enc.type_ids]))
    return float(out.seq_relationship_logits.softmax(-1)[0, 0])


def test_next_sentence_probability_is_the_nsp_head_of_a_forward_pass(tiny_bert):
    model, tokenizer = tiny_bert
    model.train()
    p = next_sentence_probability(model, tokenizer, "the bank raised its rates", "we sat on the river bank")
    assert model.training  # restored
    assert 0.0 <= p <= 1.0
    assert p == pytest.approx(direct_is_next(model, tokenizer, "the bank raised its rates", "we sat on the river bank"),
                              abs=1e-6)
    # The attention of a pair carries the same probability, from its own forward pass; a single text has none.
    maps = compute_attention(model, tokenizer, "the bank raised its rates", pair="we sat on the river bank")
    assert maps.next_sentence == pytest.approx(p, abs=1e-6)
    assert merge_word_pieces(maps).next_sentence == maps.next_sentence  # kept through the views
    assert compute_attention(model, tokenizer, "the bank raised its rates").next_sentence is None


def test_next_sentence_probability_of_random_models_and_a_loaded_one(tmp_path):
    import ctxmodels
    from ctxmodels.formats.huggingface import save_pretrained

    texts = ["the bank raised its interest rates", "we sat on the river bank"] * 20
    tokenizer = WordPieceTokenizer.train(texts, vocab_size=60, min_frequency=1)
    for seed in range(3):
        torch.manual_seed(seed)
        model = BertForPreTraining(BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size))
        p = next_sentence_probability(model, tokenizer, "the bank", "the river")
        assert 0.0 <= p <= 1.0 and math.isfinite(p)
    save_pretrained(model.eval(), tokenizer, tmp_path / "bert")
    loaded = ctxmodels.load(str(tmp_path / "bert"))
    assert has_next_sentence_head(loaded) and has_next_sentence_head(model)
    assert next_sentence_probability(loaded, None, "the bank", "the river") == pytest.approx(
        direct_is_next(loaded.model, loaded.tokenizer, "the bank", "the river"), abs=1e-6)


def test_next_sentence_probability_without_a_head_or_a_pair(tiny_bert):
    model, tokenizer = tiny_bert
    encoder_only = BertForPreTraining(model.config, mlm_head=False, nsp_head=False)
    assert not has_next_sentence_head(encoder_only)
    with pytest.raises(ValueError, match="no next-sentence"):
        next_sentence_probability(encoder_only, tokenizer, "the bank", "a river")
    assert compute_attention(encoder_only, tokenizer, "the bank", pair="a river").next_sentence is None
    with pytest.raises(ValueError, match="second sentence"):
        next_sentence_probability(model, tokenizer, "the bank", "  ")


def test_map_table_keeps_every_token_apart():
    """Issue 14: a sentence with "from" (the table's first column) crashed the Attention page."""
    tokens = ["[CLS]", "he", "came", "from", "the", "from", "index", "[SEP]"]
    m = np.random.default_rng(0).random((8, 8))
    table = map_table(m, tokens)
    assert table.shape == (8, 9) and table.columns.is_unique
    assert list(table.columns[:5]) == ["from", "0:[CLS]", "1:he", "2:came", "3:from"]
    assert table["from"].tolist()[3] == "3:from" and np.allclose(table.iloc[:, 1:].to_numpy(float), m)
    with pytest.raises(ValueError, match="does not fit"):
        map_table(m, tokens[:-1])


# -- how a head computes its weights: queries and keys -----------------------------------------------------------


def softmax(scores: np.ndarray) -> np.ndarray:
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_query_keys_rebuild_every_heads_weights(tiny_bert):
    model, tokenizer = tiny_bert
    model.train()
    qk = query_keys(model, tokenizer, "the unremarkable bank", pair="a river")
    assert model.training  # restored
    maps = compute_attention(model, tokenizer, "the unremarkable bank", pair="a river")
    cfg = model.config
    L, H, T = cfg.num_hidden_layers, cfg.num_attention_heads, maps.n_tokens
    assert qk.queries.shape == qk.keys.shape == (L, H, T, cfg.head_dim)
    assert qk.tokens == maps.tokens and qk.word_ids == maps.word_ids and qk.sequence_ids == maps.sequence_ids
    assert np.allclose(qk.attentions, maps.attentions, atol=1e-6)
    # The queries are the layer's input through the query projection of that head: layer 1's input is the
    # embeddings' output.
    enc = tokenizer.encode("the unremarkable bank", pair="a river")
    model.eval()
    with torch.no_grad():
        x = model.bert.embeddings(torch.tensor([enc.ids]), torch.tensor([enc.type_ids]))
        q = model.bert.encoder.layer[0].attention.self.query(x)[0].view(T, H, -1)
    assert np.allclose(qk.queries[0, 1], q[:, 1].numpy(), atol=1e-5)
    for layer in range(L):
        for head in range(H):
            scores = qk.scores(layer, head)
            assert np.allclose(softmax(scores), maps.attentions[layer, head], atol=1e-5)
            for row in (0, T - 1):
                # a row of products sums to that key's score: which dimensions make it
                assert np.allclose(qk.products(layer, head, row).sum(-1), scores[row], atol=1e-4)
    assert math.isclose(qk.scale, 1 / math.sqrt(cfg.head_dim))


@pytest.mark.parametrize("family", ["bert", "roberta", "distilbert", "albert", "electra-discriminator"])
def test_query_keys_of_every_bert_family_encoder(tmp_path, family):
    import ctxmodels
    from tests.hf_tiny import build

    model = ctxmodels.load(build(family, tmp_path / family))
    qk = query_keys(model, None, "The bank by the river.")
    maps = compute_attention(model, None, "The bank by the river.")
    L, H, T, _ = maps.attentions.shape
    assert qk.queries.shape[:3] == (L, H, T) and qk.tokens == maps.tokens
    # ALBERT runs one layer's projections in every layer: the queries still differ from layer to layer
    assert not np.allclose(qk.queries[0], qk.queries[1])
    for layer in range(L):
        for head in range(H):
            assert np.allclose(softmax(qk.scores(layer, head)), maps.attentions[layer, head], atol=1e-5)


def test_query_keys_refuse_what_query_times_key_does_not_explain(tmp_path, tiny_bert):
    import ctxmodels
    from ctxmodels.analysis.attention import _check_softmax_of_scores
    from tests.hf_tiny import build

    deberta = ctxmodels.load(build("deberta-v2", tmp_path / "deberta"))
    with pytest.raises(ValueError, match="relative positions"):
        query_keys(deberta, None, "The bank by the river.")
    # weights that are not the softmax of q · k / √d (as a model that adds to its scores would give)
    model, tokenizer = tiny_bert
    qk = query_keys(model, tokenizer, "the bank")
    _check_softmax_of_scores(qk, "tiny")  # its own weights pass
    skewed = qk.attentions.copy()
    skewed[..., 0] += 0.05
    skewed /= skewed.sum(-1, keepdims=True)
    with pytest.raises(ValueError, match="not the softmax of query · key"):
        _check_softmax_of_scores(type(qk)(qk.queries, qk.keys, skewed, qk.tokens, qk.word_ids, qk.sequence_ids),
                                 "tiny")

    class NoAttention:  # the shape of a loaded static / ELMo model
        name, kind, has_attention, model = "static-test", "static", False, torch.nn.Linear(2, 2)

    with pytest.raises(ValueError, match="no attention maps"):
        query_keys(NoAttention(), None, "a text")
    with pytest.raises(ValueError, match="empty text"):
        query_keys(model, tokenizer, "  ")
