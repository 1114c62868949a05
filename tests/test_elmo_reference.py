"""Our ELMo against outputs recorded by the original TensorFlow implementation (tests/data/elmo-reference).

Tolerance: 1e-6 absolute, with no relative slack (the issue's and the reference folder's bound). The recorded
values are float32 up to about 4.5 in size, where one float32 step is 4.8e-7, so this allows two rounding steps;
we measure 9.5e-7 at most (printed with -s).
"""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
import torch

from ctxmodels.char_ids import batch_to_char_ids, word_to_char_ids
from ctxmodels.formats.allennlp import export_published, load_published_elmo

ATOL, RTOL = 1e-6, 0.0


@pytest.fixture(scope="module")
def published(elmo_reference):
    return load_published_elmo(elmo_reference)


def _batches(elmo_reference):
    sentences = json.loads((elmo_reference / "sentences.json").read_text(encoding="utf-8"))
    assert len(sentences) == 3 and all(len(s) == 10 for s in sentences)
    recorded = [h5py.File(elmo_reference / f"lm_embeddings_{k}.hdf5", "r") for k in range(3)]
    try:
        for i in range(10):
            batch = [sentences[k][i].split() for k in range(3)]
            yield i, batch, [recorded[k][str(i)][...] for k in range(3)]
    finally:
        for f in recorded:
            f.close()


def _top_layer(out, k: int, n: int) -> np.ndarray:
    """[2, n, P] (forward, backward) of row k with <S> and </S> removed, the recorded layout."""
    return np.stack([out.forward_layers[-1][k, 1 : n + 1].numpy(), out.backward_layers[-1][k, 1 : n + 1].numpy()])


def test_token_encoder_matches_recorded_embeddings(published, elmo_reference):
    words = (elmo_reference / "vocab_test.txt").read_text(encoding="utf-8").strip().split("\n")
    assert len(words) == 458
    # Context-free: each word on its own, no sentence boundaries (<S> and </S> in the file are words too).
    char_ids = torch.tensor([word_to_char_ids(w) for w in words])
    with torch.no_grad():
        ours = published.bilm.token_encoder(char_ids).numpy()
    with h5py.File(elmo_reference / "elmo_token_embeddings.hdf5", "r") as f:
        expected = f["embedding"][...]
    assert ours.shape == expected.shape == (458, 16)
    print(f"token encoder max abs error: {np.abs(ours - expected).max():.3g}")
    np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=ATOL)


def test_token_encoder_through_the_bilm_forward(published, elmo_reference):
    # The same words as one padded batch through the full forward pass give layer 0 unchanged.
    words = (elmo_reference / "vocab_test.txt").read_text(encoding="utf-8").strip().split("\n")[:40]
    char_ids, mask = batch_to_char_ids([words[:25], words[25:]], add_boundaries=False)
    with torch.no_grad():
        out = published.bilm(char_ids, mask)
    with h5py.File(elmo_reference / "elmo_token_embeddings.hdf5", "r") as f:
        expected = f["embedding"][:40]
    np.testing.assert_allclose(out.token_embedding[0, :25].numpy(), expected[:25], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(out.token_embedding[1, :15].numpy(), expected[25:], rtol=RTOL, atol=ATOL)
    assert torch.all(out.token_embedding[1, 15:] == 0)


def test_top_layer_matches_batch_0_from_zero_state(published, elmo_reference):
    i, batch, recorded = next(_batches(elmo_reference))
    assert i == 0 and len({len(s) for s in batch}) > 1  # sentences of different lengths: padding is exercised
    char_ids, mask = batch_to_char_ids(batch)
    with torch.no_grad():
        out = published.bilm(char_ids, mask)
    worst = 0.0
    for k, sentence in enumerate(batch):
        ours = _top_layer(out, k, len(sentence))
        assert ours.shape == recorded[k].shape
        worst = max(worst, float(np.abs(ours - recorded[k]).max()))
        np.testing.assert_allclose(ours, recorded[k], rtol=RTOL, atol=ATOL, err_msg=f"sentence {k}")
    print(f"batch 0 top layer max abs error: {worst:.3g}")


def test_all_ten_batches_match_with_state_carried_row_by_row(published, elmo_reference):
    state, worst = None, 0.0
    for i, batch, recorded in _batches(elmo_reference):
        char_ids, mask = batch_to_char_ids(batch)
        with torch.no_grad():
            out = published.bilm(char_ids, mask, state=state, return_state=True)
        state = out.state
        for k, sentence in enumerate(batch):
            ours = _top_layer(out, k, len(sentence))
            worst = max(worst, float(np.abs(ours - recorded[k]).max()))
            np.testing.assert_allclose(ours, recorded[k], rtol=RTOL, atol=ATOL, err_msg=f"batch {i} sentence {k}")
    print(f"all 10 batches (stateful) top layer max abs error: {worst:.3g}")


def test_later_batches_need_the_carried_state(published, elmo_reference):
    # Guards the test above: without the state, batch 1 must not match (so carrying it is what makes it pass).
    _, batch, recorded = list(_batches(elmo_reference))[1]
    char_ids, mask = batch_to_char_ids(batch)
    with torch.no_grad():
        out = published.bilm(char_ids, mask)
    assert np.abs(_top_layer(out, 0, len(batch[0])) - recorded[0]).max() > 1e-3


def test_exported_reference_reloads_to_the_same_outputs(published, elmo_reference, tmp_path):
    export_published(published, tmp_path / "exported")
    again = load_published_elmo(tmp_path / "exported")
    _, batch, recorded = next(_batches(elmo_reference))
    char_ids, mask = batch_to_char_ids(batch)
    with torch.no_grad():
        out = again.bilm(char_ids, mask)
    for k, sentence in enumerate(batch):
        np.testing.assert_allclose(_top_layer(out, k, len(sentence)), recorded[k], rtol=RTOL, atol=ATOL)
    # The datasets come back bit for bit, except the LSTM biases: the forget-gate bias of 1.0 that TensorFlow
    # adds at run time is kept inside our bias, and adding and removing 1.0 in float32 rounds the low bits.
    with h5py.File(elmo_reference / "lm_weights.hdf5", "r") as a, h5py.File(tmp_path / "exported/weights.hdf5") as b:
        names: list[str] = []
        a.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        assert names
        for n in names:
            if n.endswith("LSTMCell/B"):
                np.testing.assert_allclose(a[n][...], b[n][...], rtol=0, atol=1.2e-7, err_msg=n)
            else:
                np.testing.assert_array_equal(a[n][...], b[n][...], err_msg=n)
