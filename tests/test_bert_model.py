"""The BERT model itself: config, shapes, both attention paths, mlm_positions, parity with transformers."""

from __future__ import annotations

import pytest
import torch
import transformers

from ctxmodels.bert import BertConfig, BertForPreTraining, BertModel, Dropout

SMALL = dict(vocab_size=101, hidden_size=32, num_hidden_layers=3, num_attention_heads=4, intermediate_size=48,
             max_position_embeddings=40, type_vocab_size=2)


def _model(seed: int = 0, **kw) -> BertForPreTraining:
    torch.manual_seed(seed)
    model = BertForPreTraining(BertConfig(**{**SMALL, **kw})).eval()
    # Random non-trivial LayerNorm and bias values, so parity tests exercise every parameter.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" in name or name.endswith("bias"):
                p.add_(0.1 * torch.randn_like(p))
    return model


def _batch(B: int = 3, T: int = 12, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, SMALL["vocab_size"], (B, T), generator=g)
    types = torch.zeros_like(ids)
    types[:, T // 2:] = 1
    mask = torch.ones_like(ids)
    mask[1, T - 4:] = 0  # one padded row
    ids[1, T - 4:] = 0
    return ids, types, mask


# -- config ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,layers,hidden", [("tiny", 2, 128), ("mini", 4, 256), ("small", 4, 512),
                                                 ("base", 12, 768)])
def test_presets_follow_the_bert_recipe(name, layers, hidden):
    c = BertConfig.preset(name, vocab_size=1000)
    assert (c.num_hidden_layers, c.hidden_size) == (layers, hidden)
    assert c.num_attention_heads == hidden // 64 and c.intermediate_size == 4 * hidden
    assert c.vocab_size == 1000


def test_unknown_preset_and_bad_sizes_are_clear_errors():
    with pytest.raises(ValueError, match="unknown BERT preset"):
        BertConfig.preset("huge")
    with pytest.raises(ValueError, match="multiple of num_attention_heads"):
        BertConfig(hidden_size=30, num_attention_heads=4)
    with pytest.raises(ValueError, match="hidden_act"):
        BertConfig(hidden_act="mish")


def test_config_round_trip_uses_hf_names(tmp_path):
    c = BertConfig(**SMALL)
    d = c.to_dict()
    assert d["model_type"] == "bert" and d["architectures"] == ["BertForPreTraining"]
    assert BertConfig.from_dict({**d, "some_new_hf_key": 1, "transformers_version": "9"}) == c
    c.save(tmp_path)
    assert BertConfig.load(tmp_path) == c
    with pytest.raises(ValueError, match="not a BERT"):
        BertConfig.from_dict({**d, "model_type": "roberta"})


# -- forward ----------------------------------------------------------------------------------------------------


def test_output_shapes_and_layer_zero_is_the_embedding_output():
    model = _model()
    ids, types, mask = _batch()
    out = model(ids, types, mask, output_hidden_states=True, output_attentions=True)
    B, T = ids.shape
    assert out.prediction_logits.shape == (B, T, SMALL["vocab_size"])
    assert out.seq_relationship_logits.shape == (B, 2)
    assert len(out.hidden_states) == SMALL["num_hidden_layers"] + 1
    assert len(out.attentions) == SMALL["num_hidden_layers"]
    assert out.attentions[0].shape == (B, SMALL["num_attention_heads"], T, T)
    torch.testing.assert_close(out.hidden_states[0], model.bert.embeddings(ids, types))
    torch.testing.assert_close(out.hidden_states[-1], out.last_hidden_state)
    # attention rows are distributions and padded keys get no weight
    torch.testing.assert_close(out.attentions[1].sum(-1), torch.ones(B, SMALL["num_attention_heads"], T))
    assert out.attentions[1][1, :, :, -4:].abs().max() == 0


def test_sdpa_and_explicit_attention_paths_agree():
    model = _model()
    ids, types, mask = _batch()
    fused = model(ids, types, mask, output_hidden_states=True)
    explicit = model(ids, types, mask, output_hidden_states=True, output_attentions=True)
    assert fused.attentions is None
    for a, b in zip(fused.hidden_states, explicit.hidden_states):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    torch.testing.assert_close(fused.prediction_logits, explicit.prediction_logits, atol=1e-5, rtol=0)


def test_both_attention_paths_give_the_same_gradients():
    model = _model(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0).train()
    ids, types, mask = _batch()
    grads = []
    for attn in (False, True):
        model.zero_grad()
        out = model(ids, types, mask, output_attentions=attn)
        (out.prediction_logits.logsumexp(-1).mean() + out.seq_relationship_logits.sum()).backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()})
    for n in grads[0]:
        torch.testing.assert_close(grads[0][n], grads[1][n], atol=1e-5, rtol=1e-4, msg=n)


def test_mlm_positions_project_only_there():
    model = _model()
    ids, types, mask = _batch()
    positions = torch.tensor([[1, 4, 4], [0, 2, 7], [11, 3, 5]])
    full = model(ids, types, mask)
    part = model(ids, types, mask, mlm_positions=positions)
    assert part.prediction_logits.shape == (3, 3, SMALL["vocab_size"])
    index = positions[..., None].expand(-1, -1, full.prediction_logits.shape[-1])
    torch.testing.assert_close(part.prediction_logits, torch.gather(full.prediction_logits, 1, index))
    torch.testing.assert_close(part.seq_relationship_logits, full.seq_relationship_logits)
    # the last block ran only at [CLS] and the chosen positions
    rows = torch.cat([torch.zeros(3, 1, dtype=torch.long), positions], 1)
    assert part.last_hidden_state.shape == (3, 4, SMALL["hidden_size"])
    torch.testing.assert_close(part.last_hidden_state, full.last_hidden_state[torch.arange(3)[:, None], rows])
    # asking for hidden states gives full-length states and the same logits
    with_states = model(ids, types, mask, mlm_positions=positions, output_hidden_states=True)
    assert with_states.last_hidden_state.shape == ids.shape + (SMALL["hidden_size"],)
    torch.testing.assert_close(with_states.prediction_logits, part.prediction_logits)
    with pytest.raises(ValueError, match="mlm_positions"):
        model(ids, types, mask, mlm_positions=positions[0])
    with pytest.raises(ValueError, match="mlm_positions must lie"):
        model(ids, types, mask, mlm_positions=positions + 12)


def test_mlm_positions_gives_the_same_gradients_as_the_full_computation():
    model = _model(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0).train()
    ids, types, mask = _batch()
    positions = torch.tensor([[1, 4, 6], [0, 2, 7], [11, 3, 5]])
    grads = []
    for sparse in (True, False):
        model.zero_grad()
        if sparse:
            out = model(ids, types, mask, mlm_positions=positions)
            logits = out.prediction_logits
        else:
            out = model(ids, types, mask)
            logits = torch.gather(out.prediction_logits, 1, positions[..., None].expand(-1, -1, SMALL["vocab_size"]))
        (logits.logsumexp(-1).mean() + out.seq_relationship_logits.sum()).backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()})
    for n in grads[0]:
        torch.testing.assert_close(grads[0][n], grads[1][n], atol=1e-6, rtol=1e-4, msg=n)


def test_dropout_keeps_1_minus_p_and_rescales():
    torch.manual_seed(0)
    drop = Dropout(0.1).train()
    x = torch.ones(200_000, requires_grad=True)
    y = drop(x)
    kept = y != 0
    assert abs(kept.float().mean().item() - 0.9) < 0.005  # 0.005 is > 7 standard deviations here
    torch.testing.assert_close(y[kept], torch.full_like(y[kept], 1 / 0.9))
    y.sum().backward()
    torch.testing.assert_close(x.grad, y.detach())  # gradient flows through kept elements only, rescaled
    assert torch.equal(drop.eval()(x), x)


def test_decoder_is_tied_to_word_embeddings():
    model = _model()
    assert model.decoder_is_tied
    assert model.cls.predictions.decoder.weight.data_ptr() == model.bert.embeddings.word_embeddings.weight.data_ptr()
    n_unique = len({p.data_ptr() for p in model.parameters()})
    assert n_unique == len(list(model.parameters()))  # parameters() already counts the shared one once


def test_too_long_input_and_foreign_ids_are_clear_errors():
    model = _model()
    with pytest.raises(ValueError, match="max_position_embeddings"):
        model(torch.ones(1, SMALL["max_position_embeddings"] + 1, dtype=torch.long))
    model(torch.ones(1, SMALL["max_position_embeddings"], dtype=torch.long))  # exactly the limit is fine
    with pytest.raises(ValueError, match="outside the vocabulary"):
        model(torch.tensor([[2, SMALL["vocab_size"], 3]]))
    with pytest.raises(ValueError, match="token_type_ids"):
        model(torch.tensor([[2, 7, 3]]), token_type_ids=torch.tensor([[0, 2, 0]]))


def test_model_without_heads_still_encodes():
    torch.manual_seed(0)
    model = BertForPreTraining(BertConfig(**SMALL), mlm_head=False, nsp_head=False).eval()
    out = model(_batch()[0], output_attentions=True)
    assert not model.has_mlm_head and not model.has_nsp_head
    assert out.prediction_logits is None and out.seq_relationship_logits is None
    assert len(out.attentions) == SMALL["num_hidden_layers"]
    assert isinstance(model.bert, BertModel)


def test_a_few_steps_fit_a_batch():
    torch.manual_seed(0)
    model = BertForPreTraining(BertConfig(**SMALL)).train()
    ids, types, mask = _batch()
    positions = torch.tensor([[1, 2], [3, 4], [5, 6]])
    labels = torch.gather(ids, 1, positions)
    masked = ids.scatter(1, positions, 4)
    nsp = torch.tensor([0, 1, 0])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(30):
        out = model(masked, types, mask, mlm_positions=positions)
        loss = torch.nn.functional.cross_entropy(out.prediction_logits.flatten(0, 1), labels.flatten())
        loss = loss + torch.nn.functional.cross_entropy(out.seq_relationship_logits, nsp)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


# -- parity with transformers (in memory; save/load parity is in test_hf_checkpoints.py) -----------------------


def test_matches_transformers_on_random_weights():
    model = _model()
    hf_config = transformers.BertConfig(**{k: v for k, v in model.config.to_dict().items() if k != "architectures"})
    hf = transformers.BertForPreTraining(hf_config).eval()
    hf.set_attn_implementation("eager")
    result = hf.load_state_dict(model.state_dict(), strict=False)
    assert not result.unexpected_keys
    assert set(result.missing_keys) <= {"cls.predictions.decoder.bias"}  # tied to cls.predictions.bias in HF
    hf.tie_weights()
    ids, types, mask = _batch()
    with torch.no_grad():
        ours = model(ids, types, mask, output_hidden_states=True, output_attentions=True)
        ref = hf(input_ids=ids, token_type_ids=types, attention_mask=mask, output_hidden_states=True,
                 output_attentions=True)
    for a, b in zip(ours.hidden_states, ref.hidden_states, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    for a, b in zip(ours.attentions, ref.attentions, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    torch.testing.assert_close(ours.prediction_logits, ref.prediction_logits, atol=1e-5, rtol=0)
    torch.testing.assert_close(ours.seq_relationship_logits, ref.seq_relationship_logits, atol=1e-5, rtol=0)
