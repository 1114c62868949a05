"""ELMo model: character ids, config, shapes, padding, causality, context, bad input, LM head."""

from __future__ import annotations

import pytest
import torch

from ctxmodels.char_ids import (
    BOS_CHAR,
    BOW_CHAR,
    EOS_CHAR,
    EOW_CHAR,
    MAX_CHARS,
    PAD_CHAR,
    batch_to_char_ids,
    word_to_char_ids,
)
from ctxmodels.elmo import PRESETS, ElmoBiLM, ElmoConfig, ElmoLanguageModel
from ctxmodels.formats.allennlp import config_from_options, config_to_options, load_config, save_config


@pytest.fixture(scope="module")
def bilm() -> ElmoBiLM:
    torch.manual_seed(0)
    model = ElmoBiLM(ElmoConfig.preset("tiny"))
    return model.eval()


def _run(model: ElmoBiLM, sentences: list[list[str]], **kw):
    char_ids, mask = batch_to_char_ids(sentences, **kw)
    with torch.no_grad():
        return model(char_ids, mask)


# ----------------------------------------------------------------------------------------------------------
# character ids


def test_word_char_ids_follow_the_published_layout():
    ids = word_to_char_ids("ab")
    assert len(ids) == MAX_CHARS
    assert ids[:4] == [BOW_CHAR + 1, ord("a") + 1, ord("b") + 1, EOW_CHAR + 1]
    assert ids[4:] == [PAD_CHAR + 1] * (MAX_CHARS - 4)
    assert word_to_char_ids("<S>")[:3] == [BOW_CHAR + 1, BOS_CHAR + 1, EOW_CHAR + 1]
    assert word_to_char_ids("</S>")[:3] == [BOW_CHAR + 1, EOS_CHAR + 1, EOW_CHAR + 1]
    assert 0 not in ids  # 0 is reserved for padded positions of a batch


@pytest.mark.parametrize("word", ["x" * 100, "café", "naïve", "😀", "👩‍🔬", "日本語", "Ünïcödé" * 20, "\ud800"])
def test_any_unicode_word_gets_valid_ids(word):
    ids = word_to_char_ids(word)
    assert len(ids) == MAX_CHARS and all(1 <= i <= PAD_CHAR + 1 for i in ids)
    encoded = word.encode("utf-8", "ignore")[: MAX_CHARS - 2]
    assert ids[1 : len(encoded) + 1] == [b + 1 for b in encoded]
    assert ids[len(encoded) + 1] == EOW_CHAR + 1


def test_long_words_are_cut_to_48_bytes():
    ids = word_to_char_ids("y" * 100)
    assert ids[1:49] == [ord("y") + 1] * 48 and ids[49] == EOW_CHAR + 1
    assert word_to_char_ids("y" * 48) == ids  # everything after byte 48 is ignored


def test_batch_char_ids_pad_at_the_end_and_keep_boundaries():
    char_ids, mask = batch_to_char_ids([["a", "b", "c"], [], ["d"]])
    assert char_ids.shape == (3, 5, MAX_CHARS) and mask.shape == (3, 5)
    assert mask.tolist() == [[True] * 5, [True, True, False, False, False], [True, True, True, False, False]]
    assert char_ids[1, 0].tolist() == word_to_char_ids("<S>") and char_ids[1, 1].tolist() == word_to_char_ids("</S>")
    assert torch.all(char_ids[~mask] == 0)
    no_bounds, mask2 = batch_to_char_ids([["a"], []], add_boundaries=False)
    assert no_bounds.shape == (2, 1, MAX_CHARS) and mask2.tolist() == [[True], [False]]
    empty, mask3 = batch_to_char_ids([])
    assert empty.shape == (0, 0, MAX_CHARS) and mask3.shape == (0, 0)


@pytest.mark.parametrize("bad", ["a plain string", [["ok"], "not split"], [[1, 2]]])
def test_batch_char_ids_reject_untokenised_input(bad):
    with pytest.raises(ValueError, match="word|sentence"):
        batch_to_char_ids(bad)


# ----------------------------------------------------------------------------------------------------------
# config


def test_options_round_trip_and_presets():
    for name in PRESETS:
        config = ElmoConfig.preset(name)
        assert config_from_options(config_to_options(config)) == config
    small = ElmoConfig.preset("published-small")
    assert small.char_cnn.embedding_dim == 16 and small.char_cnn.n_highway == 1
    assert small.char_cnn.filters == [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]
    assert (small.lstm.dim, small.lstm.projection_dim) == (1024, 128)
    assert ElmoConfig.preset("tiny", n_tokens_vocab=7).n_tokens_vocab == 7
    # presets are copied, never handed out
    ElmoConfig.preset("tiny").char_cnn.filters.append([9, 9])
    assert [9, 9] not in PRESETS["tiny"].char_cnn.filters


def test_config_save_load(tmp_path):
    config = ElmoConfig.preset("mini", n_tokens_vocab=100, dropout=0.2)
    save_config(config, tmp_path)
    assert load_config(tmp_path) == config


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda o: o.pop("lstm"), "lstm"),
        (lambda o: o["char_cnn"].pop("filters"), "filters"),
        (lambda o: o["char_cnn"].update(filters=[[1]]), "filters"),
        (lambda o: o["char_cnn"].update(activation="gelu"), "activation"),
        (lambda o: o["lstm"].update(projection_dim="16"), "projection_dim"),
        (lambda o: o["lstm"].update(dim=0), "dim"),
        (lambda o: o["char_cnn"]["embedding"].update(dim=True), "embedding"),
        (lambda o: o["char_cnn"].update(n_characters=300), "n_characters"),
        (lambda o: o.update(model_type="bert"), "model_type"),
    ],
)
def test_bad_options_give_clear_errors(change, message):
    options = config_to_options(ElmoConfig.preset("tiny"))
    change(options)
    with pytest.raises(ValueError, match=message):
        config_from_options(options)


def test_unknown_preset():
    with pytest.raises(ValueError, match="tiny"):
        ElmoConfig.preset("huge")


# ----------------------------------------------------------------------------------------------------------
# model outputs


def test_shapes_layers_and_padding_zeros(bilm):
    out = _run(bilm, [["the", "bank", "of", "the", "river"], ["money"]])
    P, L = bilm.config.lstm.projection_dim, bilm.config.lstm.n_layers
    assert out.token_embedding.shape == (2, 7, P)
    assert len(out.forward_layers) == len(out.backward_layers) == L
    layers = out.layers()
    assert layers.shape == (L + 1, 2, 7, 2 * P)
    assert torch.equal(layers[0, ..., :P], layers[0, ..., P:])  # layer 0 duplicated, as published
    assert torch.equal(layers[1], torch.cat([out.forward_layers[0], out.backward_layers[0]], -1))
    assert torch.all(layers[:, 1, 3:] == 0)  # padded positions are zeros
    assert bilm.output_dim == 2 * P and bilm.num_layers == L + 1


def test_padding_never_changes_outputs(bilm):
    short = ["a", "short", "one"]
    alone = _run(bilm, [short]).layers()[:, 0]
    padded = _run(bilm, [["a", "much", "longer", "sentence", "than", "the", "other", "one"], short]).layers()[:, 1]
    torch.testing.assert_close(padded[:, : len(short) + 2], alone, rtol=0, atol=1e-6)


def test_forward_lm_is_causal_and_backward_lm_anticausal(bilm):
    a = "the old man sat by the bank of the river".split()
    t = 4  # position of "by" (index 5 with <S>)
    later = a[: t + 1] + "in a grey and cold winter".split()
    earlier = "a young woman stood".split() + a[t:]
    base, after, before = _run(bilm, [a]), _run(bilm, [later]), _run(bilm, [earlier])
    pos = t + 1  # with <S>
    for k in range(bilm.config.lstm.n_layers):
        # forward states up to t ignore every token after t ...
        torch.testing.assert_close(after.forward_layers[k][0, : pos + 1], base.forward_layers[k][0, : pos + 1])
        # ... while the backward states there see them.
        assert not torch.allclose(after.backward_layers[k][0, pos], base.backward_layers[k][0, pos])
        # backward states from t on ignore every token before t (aligned from the end of the sentence) ...
        n = len(a) - t + 1  # "by" ... </S>
        torch.testing.assert_close(before.backward_layers[k][0, -n:], base.backward_layers[k][0, -n:])
        assert not torch.allclose(before.forward_layers[k][0, -n], base.forward_layers[k][0, -n])


def test_layer_0_is_context_free_and_lstm_layers_are_not(bilm):
    s1 = "he sat on the bank of the river".split()
    s2 = "she put money in the bank".split()
    layers = _run(bilm, [s1, s2]).layers()
    i1, i2 = s1.index("bank") + 1, s2.index("bank") + 1
    assert torch.equal(layers[0, 0, i1], layers[0, 1, i2])
    for k in range(1, layers.shape[0]):
        assert (layers[k, 0, i1] - layers[k, 1, i2]).abs().max() > 1e-4


def test_embed_sentences_removes_boundaries(bilm):
    sentences = [["bank", "of", "the", "river"], ["money"], []]
    layers, mask = bilm.embed_sentences(sentences)
    full = _run(bilm, sentences).layers()
    assert layers.shape[:3] == (bilm.num_layers, 3, 4) and mask.tolist()[1] == [True, False, False, False]
    torch.testing.assert_close(layers[:, 0], full[:, 0, 1:5])
    torch.testing.assert_close(layers[:, 1, :1], full[:, 1, 1:2])
    assert torch.all(layers[:, 1, 1:] == 0) and torch.all(layers[:, 2] == 0)


def test_state_carries_the_forward_lm_across_batches(bilm):
    words = "one two three four five six".split()
    whole = _run(bilm, [words], add_boundaries=False)
    a_ids, a_mask = batch_to_char_ids([words[:3], words[:1]], add_boundaries=False)
    b_ids, b_mask = batch_to_char_ids([words[3:], []], add_boundaries=False)
    with torch.no_grad():
        first = bilm(a_ids, a_mask, return_state=True)
        second = bilm(b_ids, b_mask, state=first.state, return_state=True)
    for k in range(bilm.config.lstm.n_layers):
        torch.testing.assert_close(second.forward_layers[k][0], whole.forward_layers[k][0, 3:])
    # Row 1 had no tokens in the second batch: its state is the one it came with.
    torch.testing.assert_close(second.state[0][:, :, 1], first.state[0][:, :, 1])
    with pytest.raises(ValueError, match="state"):
        bilm(b_ids[:1], b_mask[:1], state=first.state)


# ----------------------------------------------------------------------------------------------------------
# bad input


def test_empty_sentences(bilm):
    out = _run(bilm, [[], ["word"]])
    assert torch.isfinite(out.layers()).all()
    out = _run(bilm, [[], []], add_boundaries=False)
    assert out.layers().shape[2] == 0
    layers, mask = bilm.embed_sentences([])
    assert layers.shape[1] == 0 and mask.shape == (0, 0)


def test_odd_words_emoji_accents_and_long_words(bilm):
    words = ["x" * 100, "😀", "👩‍🔬", "café", "naïve", "Ørsted", "日本語", "—", "''", "a" * 2000]
    layers, mask = bilm.embed_sentences([words])
    assert layers.shape[2] == len(words) and mask.all() and torch.isfinite(layers).all()
    # Different spellings get different layer-0 vectors (no shared <UNK> on the input side).
    assert len({tuple(v.tolist()) for v in layers[0, 0]}) == len(words)


@pytest.mark.slow
def test_a_2000_word_sentence(bilm):
    sentence = [f"w{i % 97}" for i in range(2000)]
    layers, mask = bilm.embed_sentences([sentence, ["short"]])
    assert layers.shape[2] == 2000 and int(mask.sum()) == 2001
    assert torch.isfinite(layers).all()
    short_alone, _ = bilm.embed_sentences([["short"]])
    torch.testing.assert_close(layers[:, 1, :1], short_alone[:, 0], rtol=0, atol=1e-6)


def test_malformed_tensors_give_clear_errors(bilm):
    char_ids, mask = batch_to_char_ids([["a", "b"], ["c"]])
    with pytest.raises(ValueError, match="shape"):
        bilm(char_ids[..., :10])
    with pytest.raises(ValueError, match="integer"):
        bilm(char_ids.float())
    with pytest.raises(ValueError, match=r"\[0, 262\)"):
        bilm(char_ids + 300)
    holes = mask.clone()
    holes[0, 1] = False
    with pytest.raises(ValueError, match="padding only at the end"):
        bilm(char_ids, holes)
    with pytest.raises(ValueError, match="mask shape"):
        bilm(char_ids, mask[:, :2])


# ----------------------------------------------------------------------------------------------------------
# language model


def test_lm_head_and_training_step():
    torch.manual_seed(0)
    lm = ElmoLanguageModel(ElmoConfig.preset("tiny", n_tokens_vocab=11))
    assert lm.has_lm_head
    char_ids, mask = batch_to_char_ids([["a", "b", "c"], ["d"]])
    lm.train()
    out = lm(char_ids, mask)
    logits = lm.full_softmax_logits(out.forward_layers[-1])
    assert logits.shape == (2, 5, 11)
    loss = logits.logsumexp(-1).mean() + lm.full_softmax_logits(out.backward_layers[-1]).logsumexp(-1).mean()
    loss.backward()
    no_grad = [n for n, p in lm.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert no_grad == []
    # Dropout acts only in training mode.
    lm.eval()
    with torch.no_grad():
        a, b = lm(char_ids, mask).layers(), lm(char_ids, mask).layers()
    assert torch.equal(a, b)


def test_model_without_head_says_so():
    lm = ElmoLanguageModel(ElmoConfig.preset("tiny"))
    assert not lm.has_lm_head
    with pytest.raises(ValueError, match="no language-model head.*perplexity"):
        lm.full_softmax_logits(torch.zeros(1, lm.config.lstm.projection_dim))


def test_char_cnn_gradients_equal_an_even_split_over_tied_maxima():
    """The encoder max-pools with max(), whose backward gives a tied maximum's gradient to one position, where
    amax() splits it evenly. Short words tie over their windows of padding only, identical windows, so the
    weight gradients must come out the same (float64: only rounding may differ)."""
    torch.manual_seed(0)
    encoder = ElmoBiLM(ElmoConfig.preset("tiny")).token_encoder.double()
    char_ids, mask = batch_to_char_ids([["a", "to", "bank", "riverside", "", "overflowed"]])
    char_ids = char_ids[mask]
    weights = torch.randn(len(char_ids), encoder.projection.out_features, dtype=torch.float64)

    def grads(pool) -> list[torch.Tensor]:
        encoder.zero_grad()
        x = encoder.char_embedding(char_ids).transpose(1, 2)
        h = encoder.activation(torch.cat([pool(conv(x)) for conv in encoder.convs], dim=-1))
        for highway in encoder.highways:
            h = highway(h)
        (encoder.projection(h) * weights).sum().backward()
        return [p.grad.clone() for p in encoder.parameters()]

    with torch.no_grad():  # the case is there: some maxima are tied
        x = encoder.char_embedding(char_ids).transpose(1, 2)
        assert any(((y := conv(x)) == y.amax(dim=-1, keepdim=True)).sum(-1).gt(1).any() for conv in encoder.convs)
    encoder.zero_grad()
    (encoder(char_ids) * weights).sum().backward()
    ours = [p.grad.clone() for p in encoder.parameters()]
    even_split = grads(lambda y: y.amax(dim=-1))
    for a, b in zip(ours, even_split):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    # The check has teeth: the gradients of the first position alone (no max at all) are different ones.
    first = grads(lambda y: y[..., 0])
    assert not all(torch.allclose(a, b) for a, b in zip(ours, first))
