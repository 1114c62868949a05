"""Search by vector: SemCor's tagged words embedded once, searched layer by layer, counted by part of speech, kept
on disk. A model with hand-made vectors makes the expected neighbours exact; one real tiny model checks the rest."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest

from ctxmodels.analysis import token_search as ts
from ctxmodels.semcor import SemCor

# sentence, then (word index, lemma, Penn tag) of its tagged words
SENTENCES = [
    ("They run the shop .", [(1, "run", "VBP"), (3, "shop", "NN")]),
    ("He went for a run .", [(1, "go", "VBD"), (4, "run", "NN")]),
    ("We run every morning .", [(1, "run", "VBP"), (3, "morning", "NN")]),
    ("The bank was closed .", [(1, "bank", "NN"), (3, "close", "VBN")]),
    ("She walked quickly home .", [(1, "walk", "VBD"), (2, "quickly", "RB")]),
    ("A tall tree stood by the river_bank .", [(1, "tall", "JJ"), (2, "tree", "NN"), (6, "river_bank", "NN")]),
]


def write_semcor(root: Path) -> Path:
    folder = root / "semcor"
    folder.mkdir(parents=True)
    sentences, tags = ["sent_uid\ttokens"], ["sent_uid\ttok_idx\tword\tlemma\tpos\tsense_keys\tsynsets"]
    for i, (text, tagged) in enumerate(SENTENCES):
        uid = f"brown1/br-a01.s{i + 1}"
        sentences.append(f"{uid}\t{text}")
        tokens = text.split()
        tags += [f"{uid}\t{t}\t{tokens[t]}\t{lemma}\t{pos}\t{lemma}%1:00:00::\t" for t, lemma, pos in tagged]
    (folder / "sentences.tsv").write_text("\n".join(sentences) + "\n", encoding="utf-8")
    (folder / "tags.tsv").write_text("\n".join(tags) + "\n", encoding="utf-8")
    return folder


class WordModel:
    """Layer "form": one fixed vector per lower-cased word (what a context-free layer gives); layer "next": the
    vector of the word after it (a stand-in for context)."""

    layer_names = ["form", "next"]
    calls = 0

    @staticmethod
    def vector(word: str) -> np.ndarray:
        return np.random.default_rng(zlib.crc32(word.lower().encode())).normal(size=8)

    def embed(self, sentences, batch_size: int = 32):
        WordModel.calls += 1
        out = []
        for words in sentences:
            form = np.stack([self.vector(w) for w in words])
            following = np.stack([self.vector(words[i + 1]) if i + 1 < len(words) else np.zeros(8)
                                  for i in range(len(words))])
            out.append(np.stack([form, following]).astype(np.float32))
        return out


@pytest.fixture()
def semcor(tmp_path) -> SemCor:
    return SemCor.load(write_semcor(tmp_path))


def test_the_index_holds_every_tagged_one_word_token(semcor):
    sentences = ts.reference_sentences(semcor, n=100)
    assert len(sentences) == len(SENTENCES)
    steps = []
    index = ts.build_index(WordModel(), sentences, progress=lambda done, total: steps.append((done, total)), chunk=4)
    assert steps == [(4, 6), (6, 6)]
    # river_bank is a multi-word expression: no one word stands for it
    assert len(index) == sum(len(t) for _, t in SENTENCES) - 1 and "river_bank" not in index.lemmas
    assert index.vectors.dtype == np.float16 and index.vectors.shape == (len(index), 2, 8)
    assert np.allclose(np.linalg.norm(index.vectors.astype(np.float32), axis=-1), 1, atol=1e-3)
    i = index.words.index("quickly")
    assert index.pos[i] == "ADV" and index.sentences[index.sentence[i]][index.position[i]] == "quickly"
    assert set(index.pos) == {"NOUN", "VERB", "ADJ", "ADV"}


def test_nearest_finds_the_same_form_first_and_leaves_a_sentence_out(semcor):
    index = ts.build_index(WordModel(), ts.reference_sentences(semcor))
    query = np.stack([WordModel.vector("run"), WordModel.vector("the")])  # "run" followed by "the"
    form, following = ts.nearest(index, query, k=5)
    assert [n.word for n in form[:3]] == ["run"] * 3 and form[0].cosine == pytest.approx(1.0, abs=1e-3)
    assert {n.pos for n in form[:3]} == {"VERB", "NOUN"}
    assert [n.cosine for n in form] == sorted((n.cosine for n in form), reverse=True)
    # layer "next": the words followed by "the" ("run the shop"), not those followed by anything else
    assert (following[0].word, following[0].sentence) == ("run", "They run the shop .")
    assert following[0].in_context(width=1) == "They [run] the …"
    left_out = ts.nearest(index, query, k=5, exclude="They run the shop .")
    assert all(n.sentence != "They run the shop ." for layer in left_out for n in layer)
    # a layer without a vector (a word beyond the model's length) has no neighbours
    assert ts.nearest(index, np.stack([query[0], np.full(8, np.nan)]), k=3)[1] == []
    with pytest.raises(ValueError, match="another model"):
        ts.nearest(index, np.zeros((2, 5)))
    with pytest.raises(ValueError, match="k must be"):
        ts.nearest(index, query, k=0)
    assert all(len(layer) == len(index) for layer in ts.nearest(index, query, k=10_000))  # all there are


def test_neighbour_kinds_count_the_word_itself_and_the_parts_of_speech(semcor):
    index = ts.build_index(WordModel(), ts.reference_sentences(semcor))
    layers = ts.nearest(index, np.stack([WordModel.vector("run")] * 2), k=len(index))
    kinds = ts.neighbour_kinds(layers, index.layer_names, {"Run", "runs"})
    assert list(kinds.columns) == ["layer", "pos", "same", "other"]
    assert len(kinds) == 2 * len(ts.PARTS_OF_SPEECH)
    form = kinds[kinds.layer == "form"].set_index("pos")
    assert form.loc["VERB", "same"] == 2 and form.loc["NOUN", "same"] == 1  # run: 2 verbs, 1 noun
    assert form.loc["NOUN", "other"] == sum(p == "NOUN" for p in index.pos) - 1
    assert form[["same", "other"]].to_numpy().sum() == len(index)


def test_the_index_is_kept_on_disk_per_model_and_semcor(tmp_path, semcor, monkeypatch):
    from ctxmodels.analysis import probes

    folder = write_semcor(tmp_path / "data")
    model = WordModel()
    monkeypatch.setattr(probes, "model_fingerprint", lambda m: "f" * 64)
    WordModel.calls = 0
    first = ts.cached_index(model, folder, n=100, cache=tmp_path / "cache")
    built = WordModel.calls
    again = ts.cached_index(model, folder, n=100, cache=tmp_path / "cache")
    assert WordModel.calls == built  # read back, not embedded again
    assert again.words == first.words and np.array_equal(again.vectors, first.vectors)
    assert again.sentences == first.sentences and np.array_equal(again.position, first.position)
    # another model's files: another index
    monkeypatch.setattr(probes, "model_fingerprint", lambda m: "e" * 64)
    ts.cached_index(model, folder, n=100, cache=tmp_path / "cache")
    assert WordModel.calls > built and len(list((tmp_path / "cache").glob("*.npz"))) == 2
    # a damaged file is built again, not trusted
    for f in (tmp_path / "cache").glob("*.npz"):
        f.write_bytes(b"not an npz")
        assert ts.load_index(f) is None
    assert ts.cached_index(model, folder, n=100, cache=tmp_path / "cache").words == first.words


def test_a_real_model_searches_its_own_layers(tmp_path, semcor):
    import ctxmodels
    from tests.app_fixtures import build_tiny_assets

    assets = build_tiny_assets(tmp_path / "assets")
    for name in ("bert-eltec", "elmo-eltec"):
        model = ctxmodels.load(str(assets / name))
        index = ts.build_index(model, ts.reference_sentences(semcor))
        assert index.layer_names == model.layer_names
        query = model.embed([["They", "run", "the", "shop", "."]])[0][:, 1]
        layers = ts.nearest(index, query, k=3)
        assert len(layers) == model.n_layers and all(len(found) == 3 for found in layers)
        # the sentence itself is in the index: its "run" is nearest wherever the same input gives the same vector
        assert layers[-1][0].sentence == "They run the shop ." and layers[-1][0].position == 1
