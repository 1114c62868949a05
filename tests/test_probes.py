"""Layer-weight probes: synthetic layers where the answer is known, caching, and real tiny models on SemCor."""

from __future__ import annotations

import json
import random
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch

from ctxmodels.analysis import probes
from ctxmodels.analysis.probes import ProbeSettings, fit_probes, run_probe
from ctxmodels.loading import LoadedModel
from ctxmodels.semcor import SemCor, load_semcor

# ---------------------------------------------------------------------------------------------------------
# fit_probe on synthetic features


def synthetic(seed: int = 0, n: int = 600, n_layers: int = 3, dim: int = 8, n_classes: int = 3):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n_classes, n)
    feats = rng.normal(size=(n, n_layers, dim)).astype(np.float32)
    feats[:, 1, :n_classes] += 3.0 * np.eye(n_classes)[labels]      # only layer 1 knows the label
    return feats, labels, np.zeros(n, int), np.zeros(n_classes, int), np.arange(n) < n * 3 // 4


def test_the_mix_goes_to_the_layer_that_carries_the_label():
    feats, labels, groups, class_groups, train = synthetic()
    fit = fit_probes(feats, labels, groups, class_groups, train, ProbeSettings())
    assert int(np.argmax(fit.weights)) == 1 and fit.weights[1] > 0.6
    assert sum(fit.weights) == pytest.approx(1.0)
    assert fit.mix_accuracy > 0.9
    assert fit.layer_accuracies[1] > 0.9
    assert fit.layer_accuracies[0] < 0.6 and fit.layer_accuracies[2] < 0.6   # chance is 1/3
    assert fit.layer_train_accuracies[1] > 0.9


def test_single_layer_probes_train_as_if_alone():
    feats, labels, groups, class_groups, train = synthetic(seed=3)
    together = fit_probes(feats, labels, groups, class_groups, train, ProbeSettings())
    for j in range(3):
        alone = fit_probes(feats[:, j: j + 1], labels, groups, class_groups, train, ProbeSettings())
        assert alone.layer_accuracies[0] == pytest.approx(together.layer_accuracies[j], abs=1 / 150)


def test_grouped_classes_only_compete_within_their_group():
    # two "lemmas" with two senses each; the features tell the sense but not the lemma
    rng = np.random.default_rng(1)
    n = 400
    groups = rng.integers(0, 2, n)
    sense = rng.integers(0, 2, n)
    labels = 2 * groups + sense
    feats = rng.normal(size=(n, 2, 4)).astype(np.float32)
    feats[:, 0, 0] += np.where(sense == 1, 3.0, -3.0)
    train = np.arange(n) < 300
    fit = fit_probes(feats, labels, groups, np.array([0, 0, 1, 1]), train, ProbeSettings())
    assert fit.mix_accuracy > 0.95   # without the group mask it could not tell class 0 from class 2
    assert fit.layer_accuracies[0] > 0.95
    assert probes.baseline_accuracy(labels, groups, train) < 0.7


# ---------------------------------------------------------------------------------------------------------
# run_probe on a made-up SemCor and a model whose layers are known

NOUNS, VERBS, ADJS = ["dog", "cat", "house", "tree", "car"], ["runs", "eats", "sees", "takes"], ["big", "red", "old"]
POS = {**{w: "NN" for w in NOUNS}, **{w: "VB" for w in VERBS}, **{w: "JJ" for w in ADJS}}


def make_semcor(root: Path, n_sentences: int = 160) -> Path:
    """Sentences of tagged words; each has one "bank" whose sense shows in a context word (money / river)."""
    rng = random.Random(0)
    sent_lines, tag_lines = ["sent_uid\ttokens"], ["sent_uid\ttok_idx\tword\tlemma\tpos\tsense_keys\tsynsets"]
    for i in range(n_sentences):
        uid = f"d/br-z{i // 20:02d}.s{i}"
        words = [rng.choice(list(POS)) for _ in range(5)]
        money = i % 2 == 0
        tokens = words[:2] + ["the", "bank", "of", "money" if money else "river"] + words[2:]
        sent_lines.append(f"{uid}\t{' '.join(tokens)}")
        for t, w in enumerate(tokens):
            if w in POS:
                tag_lines.append(f"{uid}\t{t}\t{w}\t{w}\t{POS[w]}\t{w}%{1 if POS[w] == 'NN' else 2}:01:00::\t")
        sense = "bank%1:14:00::" if money else "bank%1:17:01::"
        tag_lines.append(f"{uid}\t3\tbank\tbank\tNN\t{sense}\t")
    (root / "sentences.tsv").write_text("\n".join(sent_lines) + "\n", encoding="utf-8")
    (root / "tags.tsv").write_text("\n".join(tag_lines) + "\n", encoding="utf-8")
    return root


class KnownLayers(LoadedModel):
    """Layer 0: noise. Layer 1: the word itself (tells the part of speech). Layer 2: the other words of the
    sentence (tells the sense of "bank", not the part of speech)."""

    kind = "fake"

    def __init__(self, path: Path):
        super().__init__("known-layers", path, None, {}, ["noise", "word", "context"], 16)
        self.calls = 0

    def _vector(self, word: str) -> np.ndarray:
        return np.random.default_rng(zlib.crc32(word.encode())).normal(size=16)

    def _embed(self, sentences, pooling, batch_size):
        self.calls += 1
        out = []
        for s in sentences:
            rng = np.random.default_rng(zlib.crc32(" ".join(s).encode()))
            v = np.zeros((3, len(s), 16), np.float32)
            v[0] = rng.normal(size=(len(s), 16))
            words = np.stack([self._vector(w) for w in s])
            v[1] = words + 0.1 * rng.normal(size=words.shape)
            v[2] = (words.sum(0, keepdims=True) - words) / max(1, len(s) - 1)
            out.append(v)
        return out


@pytest.fixture()
def known(tmp_path: Path, monkeypatch) -> tuple[KnownLayers, SemCor]:
    monkeypatch.setenv("CTXMODELS_CACHE", str(tmp_path / "user-cache"))
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "weights.bin").write_bytes(b"weights v1")
    (tmp_path / "semcor").mkdir()
    return KnownLayers(model_dir), SemCor.load(make_semcor(tmp_path / "semcor"))


FAST = dict(n_sentences=120, min_per_sense=5)


def test_pos_probe_prefers_the_word_layer(known):
    model, semcor = known
    seen = []
    result = run_probe(model, "pos", ProbeSettings(**FAST), semcor=semcor, progress=lambda f, m: seen.append(f))
    assert result.labels == ["ADJ", "NOUN", "VERB"] and result.layer_names == ["noise", "word", "context"]
    assert result.best_layer == 1 and result.layer_accuracies[1] > 0.95
    assert result.layer_accuracies[0] < 0.8
    assert int(np.argmax(result.mix_weights)) == 1 and result.mix_accuracy > 0.9
    assert result.n_train + result.n_test == 120 * 6 and result.n_sentences == 120
    assert seen == sorted(seen) and seen[-1] == pytest.approx(1.0)
    assert "best single layer: word" in result.format_table()


def test_wsd_probe_prefers_the_context_layer(known):
    model, semcor = known
    result = run_probe(model, "wsd", ProbeSettings(**FAST, lemmas=("bank",), max_per_sense=60), semcor=semcor)
    assert result.lemmas == ["bank"] and sorted(result.labels) == ["bank%1:14:00::", "bank%1:17:01::"]
    assert result.n_train + result.n_test == 120     # every "bank", one per sentence
    # the word layer is the same for every "bank" (plus noise): about the most-frequent-sense baseline
    assert result.layer_accuracies[2] > 0.85 and result.best_layer == 2
    assert int(np.argmax(result.mix_weights)) == 2
    with pytest.raises(ValueError, match="not enough tagged examples in SemCor for cat"):
        run_probe(model, "wsd", ProbeSettings(**FAST, lemmas=("cat",)), semcor=semcor)


def test_results_are_cached_beside_the_model(known, tmp_path: Path):
    model, semcor = known
    settings = ProbeSettings(**FAST)
    assert probes.cached_result(model, "pos", settings, semcor=semcor) is None
    first = run_probe(model, "pos", settings, semcor=semcor)
    assert probes.cached_result(model, "pos", settings, semcor=semcor).to_dict() == first.to_dict()
    calls = model.calls
    assert not first.cached and (model.path / "probes" / "pos.json").is_file()
    again = run_probe(model, "pos", ProbeSettings(**FAST), semcor=semcor)
    assert again.cached and model.calls == calls            # nothing embedded or trained
    assert again.to_dict() == first.to_dict()
    assert run_probe(model, "pos", ProbeSettings(**FAST, threads=None), semcor=semcor).cached   # speed only
    # another setting, or changed model files: computed anew
    other = run_probe(model, "pos", ProbeSettings(**{**FAST, "epochs": 5}), semcor=semcor)
    assert not other.cached and model.calls > calls
    (model.path / "weights.bin").write_bytes(b"weights v2")
    assert not run_probe(model, "pos", settings, semcor=semcor).cached
    # both settings are now in the one file, under different keys
    entries = json.loads((model.path / "probes" / "pos.json").read_text())["entries"]
    assert len(entries) == 3
    assert not run_probe(model, "pos", settings, semcor=semcor, cache=False).cached
    # another SemCor is another key
    (tmp_path / "semcor2").mkdir()
    other_semcor = SemCor.load(make_semcor(tmp_path / "semcor2", n_sentences=150))
    assert not run_probe(model, "pos", settings, semcor=other_semcor).cached


def test_cache_falls_back_to_the_user_cache(known, tmp_path: Path):
    model, semcor = known
    (model.path / "probes").write_text("a file where the cache folder would go")   # cannot be written
    first = run_probe(model, "pos", ProbeSettings(**FAST), semcor=semcor)
    assert list((tmp_path / "user-cache" / "probes").glob("*/pos.json"))
    assert run_probe(model, "pos", ProbeSettings(**FAST), semcor=semcor).to_dict() == first.to_dict()
    # an explicit cache_dir
    run_probe(model, "pos", ProbeSettings(**FAST), semcor=semcor, cache_dir=tmp_path / "mine")
    assert list((tmp_path / "mine").glob("*/pos.json"))


def test_torch_threads_are_restored():
    before = torch.get_num_threads()
    with probes.torch_threads(before + 1):
        assert torch.get_num_threads() == before + 1
    assert torch.get_num_threads() == before
    with probes.torch_threads(None):
        assert torch.get_num_threads() == before


def test_bad_input(known):
    model, semcor = known
    with pytest.raises(ValueError, match="unknown probe task"):
        run_probe(model, "ner", semcor=semcor)
    with pytest.raises(ValueError, match="n_sentences must be at least 2"):
        run_probe(model, "pos", ProbeSettings(n_sentences=1), semcor=semcor)
    with pytest.raises(ValueError, match="tagset"):
        run_probe(model, "pos", ProbeSettings(tagset="ud"), semcor=semcor)
    one_layer = KnownLayers(model.path)
    one_layer.layer_names = ["static"]
    with pytest.raises(ValueError, match="needs a model with several layers"):
        run_probe(one_layer, "pos", semcor=semcor)


# ---------------------------------------------------------------------------------------------------------
# real tiny models on the real SemCor


@pytest.mark.slow
def test_tiny_elmo_and_bert_on_semcor(semcor_data: Path, tmp_path: Path, monkeypatch, capsys):
    from ctxmodels import load
    from ctxmodels.bert import BertConfig, BertForPreTraining
    from ctxmodels.cli import main
    from ctxmodels.elmo import ElmoConfig, ElmoLanguageModel
    from ctxmodels.formats.allennlp import save_elmo
    from ctxmodels.formats.huggingface import save_pretrained
    from ctxmodels.tokenization import WordPieceTokenizer

    monkeypatch.setenv("CTXMODELS_DATA", str(semcor_data))  # the shipped SemCor, where the command finds it
    monkeypatch.setenv("CTXMODELS_CACHE", str(tmp_path / "user-cache"))
    torch.manual_seed(0)
    save_elmo(ElmoLanguageModel(ElmoConfig.preset("tiny")), tmp_path / "elmo")
    semcor = load_semcor(semcor_data / "semcor")
    settings = ProbeSettings(n_sentences=40, epochs=3)
    elmo = load(tmp_path / "elmo")
    for task in ("pos", "wsd"):
        r = run_probe(elmo, task, settings, semcor=semcor)
        assert len(r.mix_weights) == len(r.layer_accuracies) == 3
        assert all(0.0 <= a <= 1.0 for a in [*r.layer_accuracies, r.mix_accuracy, r.baseline_accuracy])
        assert r.n_test > 0 and r.n_sentences <= 40

    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *letters, *(f"##{c}" for c in letters)]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    bert = BertForPreTraining(BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                                         num_attention_heads=2, intermediate_size=64))
    save_pretrained(bert, WordPieceTokenizer.from_vocab(tmp_path / "vocab.txt"), tmp_path / "bert")
    r = run_probe(load(tmp_path / "bert"), "pos", settings, semcor=semcor)
    assert r.layer_names == ["embeddings", "layer 1", "layer 2"] and len(r.layer_accuracies) == 3

    # the command line shows the cached ELMo result at once
    assert main(["probe", "--model", str(tmp_path / "elmo"), "--task", "pos", "--n-sentences", "40",
                 "--epochs", "3"]) == 0
    out = capsys.readouterr().out
    assert "layer 2 (LSTM)" in out and "cached result" in out
