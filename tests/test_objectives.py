"""How the models learn, computed (``ctxmodels.analysis.objectives``, ``training_curves``): the corruption draw is
training's own (counts, the 80/10/10 split, the seed, whole words), the model's loss where it struck, the causal mask
of a left-to-right model, each word's guess from the left or from both sides, and the training curves per part."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from ctxmodels import masking
from ctxmodels.analysis import objectives, training_curves
from ctxmodels.text import tokenize
from ctxmodels.training import bert_data, lm_data
from tests.app_fixtures import example_texts


@pytest.fixture(scope="module")
def tokenizer():
    from ctxmodels.tokenization import WordPieceTokenizer

    return WordPieceTokenizer.train(example_texts(), vocab_size=300, min_frequency=1)


@pytest.fixture(scope="module")
def bert(tiny_assets):
    import ctxmodels

    return ctxmodels.load(tiny_assets / "bert-eltec")


def long_encoding(tokenizer, n_words: int = 12_000):
    words = tokenize(" ".join(example_texts()))
    words = (words * (n_words // len(words) + 1))[:n_words]
    enc, cut = tokenizer.encode_words(words, 10 * n_words)
    assert not cut
    return enc


def test_the_page_draws_with_trainings_own_masking_function():
    assert bert_data.mask_tokens is masking.mask_tokens and lm_data.mask_tokens is masking.mask_tokens
    assert bert_data.VocabInfo is masking.VocabInfo and bert_data.MLM_PROBABILITY == masking.MLM_PROBABILITY == 0.15
    assert objectives.mask_tokens is masking.mask_tokens


def test_a_long_input_gets_15_percent_chosen_and_80_10_10_among_them(tokenizer):
    enc = long_encoding(tokenizer)
    d = objectives.draw(tokenizer, enc, seed=7)
    counts = d.counts()
    maskable = len(enc.ids) - counts["special"]
    assert counts["special"] == 2  # [CLS] and [SEP], never chosen
    chosen = len(d.positions)
    assert chosen == int(maskable * 0.15 + 0.5)  # no cap: the page shows 15% of any sentence
    assert counts["[MASK]"] + counts["random word"] + counts["kept"] == chosen
    assert 0.77 < counts["[MASK]"] / chosen < 0.83
    assert 0.08 < counts["random word"] / chosen < 0.12
    assert 0.08 < counts["kept"] / chosen < 0.12
    for p in d.positions:
        assert (d.reads[p] == tokenizer.mask_id) == (d.fates[p] == "[MASK]")
        assert (d.reads[p] == d.ids[p]) == (d.fates[p] == "kept")
    untouched = [i for i, f in enumerate(d.fates) if f in ("not chosen", "special")]
    assert all(d.reads[i] == d.ids[i] for i in untouched)


def test_the_seed_fixes_the_draw_and_another_seed_draws_again(tokenizer):
    enc = long_encoding(tokenizer, 400)
    a, b = objectives.draw(tokenizer, enc, seed=3), objectives.draw(tokenizer, enc, seed=3)
    assert a.positions == b.positions and a.reads == b.reads and a.fates == b.fates
    c = objectives.draw(tokenizer, enc, seed=4)
    assert c.positions != a.positions
    # the same draw as training's function called with the same generator
    vocab = objectives.vocab_info(tokenizer)
    ids = np.asarray(enc.ids)
    maskable = np.array([s is not None for s in enc.sequence_ids])
    out, positions, _ = masking.mask_tokens(ids, maskable, np.random.default_rng(3), vocab, int(maskable.sum()))
    assert positions.tolist() == a.positions and out.tolist() == a.reads


def _runs(enc) -> list[list[int]]:
    """The pieces as training groups them for whole-word masking: a piece and the ``##`` pieces after it."""
    runs: list[list[int]] = []
    for i, (t, s) in enumerate(zip(enc.tokens, enc.sequence_ids)):
        if s is None:
            continue
        if t.startswith("##") and runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


def test_whole_word_masking_chooses_every_piece_of_a_word_together(tokenizer):
    enc = long_encoding(tokenizer, 2_000)
    split = [r for r in _runs(enc) if len(r) > 1]
    assert split, "the test needs words in several pieces"
    d = objectives.draw(tokenizer, enc, seed=1, whole_words=True)
    chosen = set(d.positions)
    for run in _runs(enc):
        assert len(set(run) & chosen) in (0, len(run)), [enc.tokens[i] for i in run]
    assert any(set(r) <= chosen for r in split)  # and words in pieces were among them
    # one piece at a time, a split word is sometimes only partly chosen
    partial = 0
    for seed in range(5):
        one = set(objectives.draw(tokenizer, enc, seed=seed).positions)
        partial += sum(0 < len(set(r) & one) < len(r) for r in split)
    assert partial > 0


def test_the_models_loss_is_minus_ln_of_its_probability_of_the_original(bert):
    c = objectives.corruption(bert, "The boat drifted slowly towards the far bank of the river.", seed=2)
    assert c.positions and len(c.prob) == len(c.loss) == len(c.plain_prob) == len(c.guesses) == len(c.positions)
    for p, loss in zip(c.prob, c.loss):
        assert 0 < p <= 1 and loss == pytest.approx(-math.log(p))
    assert c.mean_loss == pytest.approx(np.mean(c.loss))
    again = objectives.corruption(bert, "The boat drifted slowly towards the far bank of the river.", seed=2)
    assert again.to_dict() == c.to_dict()
    assert all(c.reads[p] == "[MASK]" for p in c.positions if c.fates[p] == "[MASK]")


def test_a_model_without_a_masked_lm_head_says_so(tiny_assets):
    import ctxmodels

    with pytest.raises(ValueError, match="masked-LM head"):
        objectives.corruption(ctxmodels.load(tiny_assets / "bert-no-mlm"), "The bank.", seed=0)


def test_the_causal_mask_is_a_triangle_and_bert_sees_everything(bert):
    m = objectives.causal_mask(5)
    assert m.shape == (5, 5) and m.dtype == bool
    assert m.sum() == 15 and all(m[i, j] == (j <= i) for i in range(5) for j in range(5))
    full = objectives.reading_mask(bert, "The bank of the river.")
    assert not full["left_to_right"] and full["allowed"].all()
    assert full["allowed"].shape == (len(full["pieces"]),) * 2 and full["pieces"][0] == "[CLS]"


def test_bert_guesses_every_word_with_it_hidden(bert):
    g = objectives.word_guesses(bert, "The bank of the river.")
    assert g.words == ["The", "bank", "of", "the", "river", "."] and not g.left_to_right
    assert all(p is not None and 0 < p <= 1 for p in g.prob) and all(g.guess)


def test_a_sentence_with_no_words_is_refused(bert):
    with pytest.raises(ValueError, match="no words"):
        objectives.word_guesses(bert, "   ")


def test_training_curves_keep_each_part_apart_and_the_later_record_of_a_resumed_step(tmp_path):
    records = [{"event": "start", "command": "ctxmodels train bert"}]
    records += [{"step": s, "loss": 5.0 - s / 100, "mlm_loss": 4.0 - s / 100, "nsp_loss": 1.0, "lr": 0.1}
                for s in range(1, 201)]
    records += [{"event": "interrupted", "step": 150}]
    records += [{"step": s, "loss": 1.0, "mlm_loss": 0.5, "nsp_loss": 0.5} for s in range(101, 301)]  # resumed
    records += [{"step": 100, "eval": {"mlm_loss": 3.5, "mlm_accuracy": 0.2}}, {"step": 300, "eval": {"mlm_loss": 2.0}}]
    path = tmp_path / "metrics.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n{cut mid-li", encoding="utf-8")
    c = training_curves.loss_curves(training_curves.read_records(path))
    assert list(c["train"]) == ["loss", "mlm_loss", "nsp_loss"] and list(c["eval"]) == ["mlm_loss"]
    assert c["train"]["nsp_loss"]["label"] == "next sentence (NSP)" and c["train"]["mlm_loss"]["label"] == "masked LM"
    assert c["eval"]["mlm_loss"] == {"label": "masked LM (held out)", "steps": [100, 300], "values": [3.5, 2.0]}
    mlm = c["train"]["mlm_loss"]
    assert mlm["steps"] == sorted(mlm["steps"]) and mlm["steps"][-1] == 300 and len(mlm["steps"]) < 300
    assert mlm["values"][-1] == pytest.approx(0.5)  # the resumed run's values, not the first run's
    assert c["steps"] == 300
    assert training_curves.metrics_file(tmp_path) == path
    assert training_curves.part_label("disc_loss") == "discriminator (replaced or not)"


# -- a left-to-right model ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_gpt(tiny_assets, tmp_path_factory):
    """A GPT as ``ctxmodels train gpt`` writes it, trained for two steps on the tiny corpus (a few seconds)."""
    import torch

    from ctxmodels import cli

    out = tmp_path_factory.mktemp("gpt") / "gpt-tiny"
    threads = torch.get_num_threads()
    try:
        rc = cli.main(["train", "gpt", "--corpus", str(tiny_assets / "corpus.txt"), "--vocab-size", "600", "--out",
                       str(out), "--steps", "2", "--preset", "tiny", "--max-seq-len", "32", "--batch-size", "4",
                       "--eval-sequences", "4", "--no-progress", "--threads", "1", "--eval-every", "0"])
    finally:
        torch.set_num_threads(threads)
    assert rc == 0
    return out


PAIR = ("She walked down to the bank to fish in the quiet river.", "She walked down to the bank to pay in her wages.")


def test_a_gpt_reads_left_to_right(tiny_gpt, bert):
    import ctxmodels
    from ctxmodels.analysis.word_senses import same_word

    gpt = ctxmodels.load(tiny_gpt)
    m = objectives.reading_mask(gpt, "The bank of the river.")
    assert m["left_to_right"] and np.array_equal(m["allowed"], objectives.causal_mask(len(m["pieces"])))
    g = objectives.word_guesses(gpt, "The bank of the river.")
    assert g.left_to_right and g.words == ["The", "bank", "of", "the", "river", "."]
    assert all(p is not None and 0 < p < 1 for p in g.prob)  # every word has [CLS] or words before it
    # the words before "bank" are the same in both sentences: so are the GPT's vectors of it, in every layer
    gpt_pair = same_word(gpt, *PAIR, "bank").cosine
    assert np.allclose(gpt_pair, 1.0, atol=1e-6)
    # BERT reads the words after it too (random weights: its vectors differ a little, but they differ)
    assert max(same_word(bert, *PAIR, "bank").cosine[1:]) < min(gpt_pair) - 5e-6
    curves = training_curves.loss_curves(training_curves.read_records(training_curves.metrics_file(gpt)))
    assert "lm_loss" in curves["train"] and curves["train"]["lm_loss"]["label"] == "next word"


def test_electra_replaces_the_chosen_pieces_and_scores_every_piece(tmp_path):
    import ctxmodels
    from ctxmodels.analysis import replaced_tokens
    from tests import hf_tiny

    root = tmp_path / "electra"
    hf_tiny.build("electra-discriminator", root)
    assert replaced_tokens.generator_folder(ctxmodels.load(root)) is None  # no generator beside it yet
    hf_tiny.build("electra-generator", root / "generator")
    d, g = ctxmodels.load(root), ctxmodels.load(root / "generator")
    assert replaced_tokens.is_discriminator(d) and not replaced_tokens.is_discriminator(g)
    r = replaced_tokens.replacements(d, g, "The old bank by the river was steep and muddy.", seed=1)
    n = len(r.pieces)
    assert len(r.reads) == len(r.replaced) == len(r.p_replaced) == len(r.chosen) == n
    assert all(0 <= p <= 1 for p in r.p_replaced) and len(r.sample_prob) == sum(r.chosen)
    # only chosen pieces can differ, and a replaced piece is one that differs from the original
    assert all(c for c, rep in zip(r.chosen, r.replaced) if rep)
    assert r.replaced == [a != b for a, b in zip(r.reads, r.pieces)]
    assert not any(r.chosen[i] for i in range(n) if r.special[i])
    assert math.isfinite(r.loss) and r.loss > 0
    again = replaced_tokens.replacements(d, g, "The old bank by the river was steep and muddy.", seed=1)
    assert again.to_dict() == r.to_dict()


# -- next sentence or sentence order -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_albert(tmp_path_factory):
    """An ALBERT saved with its pre-training heads (masked LM and sentence order), random tiny weights."""
    import transformers

    from tests import hf_tiny

    folder = hf_tiny.build("albert", tmp_path_factory.mktemp("albert") / "albert-tiny")
    config = transformers.AlbertConfig.from_pretrained(folder)
    config.architectures = ["AlbertForPreTraining"]
    transformers.AlbertForPreTraining(config).eval().save_pretrained(folder)
    return folder


def with_run_settings(folder, corpus, heldout_docs: int = 1):
    (folder / "train_args.json").write_text(json.dumps({"kind": "bert", "settings": {
        "corpus": str(corpus), "heldout_docs": heldout_docs, "seed": 0}}), encoding="utf-8")
    return folder


def test_bert_has_nsp_and_albert_sop_and_both_give_a_probability(bert, tiny_albert):
    import ctxmodels
    from ctxmodels.analysis import sentence_pairs as sp

    albert = ctxmodels.load(tiny_albert)
    assert sp.pair_head(bert) == "nsp" and sp.pair_head(albert) == "sop"
    pairs = [("The bank of the river.", "The boat drifted."), ("The boat drifted.", "The bank of the river.")]
    for model in (bert, albert):
        probs = sp.follows(model, pairs * 20)  # more than one batch
        assert len(probs) == 40 and all(0 < p < 1 for p in probs)
        assert probs[:2] == pytest.approx(probs[2:4])  # a pair's answer does not depend on its batch


def test_a_model_without_a_pair_head_says_so(tiny_assets):
    import ctxmodels
    from ctxmodels.analysis import sentence_pairs as sp

    no_head = ctxmodels.load(tiny_assets / "bert-no-mlm")
    assert sp.pair_head(no_head) is None
    with pytest.raises(ValueError, match="no next-sentence or sentence-order head"):
        sp.follows(no_head, [("A b.", "C d.")])


def test_held_out_pairs_come_from_the_documents_training_held_out(tiny_assets, tmp_path, bert):
    import shutil

    import ctxmodels
    from ctxmodels.analysis import sentence_pairs as sp
    from ctxmodels.heldout import heldout_indices
    from ctxmodels.text import read_documents

    with pytest.raises(ValueError, match="no record"):
        sp.heldout_text(bert)
    folder = with_run_settings(Path(shutil.copytree(tiny_assets / "bert-eltec", tmp_path / "bert")),
                               tiny_assets / "corpus.txt", heldout_docs=2)
    model = ctxmodels.load(folder)
    held = sp.heldout_text(model)
    docs = read_documents(tiny_assets / "corpus.txt")
    chosen = heldout_indices(len(docs), 2, 0)
    assert len(held.documents) == 2 and f"2 of the {len(docs)} documents" in held.source
    for sentences, i in zip(held.documents, chosen):
        text = " ".join(docs[i])
        assert sentences and all(s in text for s in sentences)
    pairs = sp.draw_pairs(held.documents, 10, seed=3)
    assert set(pairs) == set(sp.GROUPS) and all(len(v) == 10 for v in pairs.values())
    for (a, b), (b2, a2), (a3, c) in zip(pairs["consecutive"], pairs["swapped"], pairs["random"]):
        assert (a, b) == (a2, b2) and a3 == a
        d = next(k for k, s in enumerate(held.documents) if a in s)
        assert held.documents[d].index(b) == held.documents[d].index(a) + 1
        assert c not in held.documents[d]  # from the other document
    assert sp.draw_pairs(held.documents, 10, seed=3) == pairs
    result = sp.pair_test(model, pairs)
    assert {g: r["n"] for g, r in result.items()} == {"consecutive": 10, "swapped": 10, "random": 10}
    assert all(0 < r["mean"] < 1 and r["sem"] >= 0 for r in result.values())


def test_the_views_from_a_model_draw_what_the_page_draws(bert, tiny_gpt):
    import ctxmodels
    from ctxmodels import viz
    from ctxmodels.viz import objectives as drawing

    text = "The boat drifted slowly towards the far bank of the river."
    fig = viz.corruption(bert, text, seed=4)
    page = drawing.corruption_strip(objectives.corruption(bert, text, 4).to_dict(), title=fig.layout.title.text)
    assert fig.to_dict() == page.to_dict()
    assert len(fig.layout.shapes) == len(bert.tokenizer.encode(text).ids)  # a box per piece
    lines = viz.next_word_guesses([ctxmodels.load(tiny_gpt), bert], text)
    assert [t.name.split(":")[0] for t in lines.data] == ["gpt-tiny", "bert-eltec"]


# -- which heads a model has, from its files --------------------------------------------------------------------


def test_the_heads_its_files_name_are_the_heads_it_loads_with(tiny_assets, tiny_gpt, tiny_albert, tmp_path):
    """What a page offers before loading anything (``heads_on_file``) is what the loaded model can do."""
    import ctxmodels
    from ctxmodels.analysis import replaced_tokens, sentence_pairs
    from ctxmodels.loading import LANGUAGE_MODEL, MASKED_LM, supports
    from tests import hf_tiny
    from tests.app_fixtures import finetune_tiny, write_tag_task

    electra = hf_tiny.build("electra-discriminator", tmp_path / "electra")
    hf_tiny.build("electra-generator", electra / "generator")
    roberta = hf_tiny.build("roberta", tmp_path / "roberta")
    tagger = finetune_tiny(tiny_gpt, write_tag_task(tmp_path / "tags.conll"), tmp_path / "gpt-tags", steps=1)
    for folder in (tiny_assets / "bert-eltec", tiny_assets / "bert-no-mlm", tiny_gpt, tiny_albert, electra,
                   electra / "generator", roberta, tagger):
        m = ctxmodels.load(folder)
        loaded = {"masked_lm": supports(m, MASKED_LM) and not objectives.left_to_right(m),
                  "next_sentence": sentence_pairs.pair_head(m) == "nsp",
                  "sentence_order": sentence_pairs.pair_head(m) == "sop",
                  "replaced": replaced_tokens.is_discriminator(m),
                  "next_word": objectives.left_to_right(m) and supports(m, LANGUAGE_MODEL)}
        assert objectives.heads_on_file(folder) == {h for h, yes in loaded.items() if yes}, folder.name
    assert objectives.heads_on_file(tiny_assets / "elmo-eltec") is None  # no architectures: only loading tells
    assert objectives.heads_on_file(tmp_path / "nothing") is None
