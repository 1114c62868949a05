"""Hostile inputs edited by hand (issue 46): a run's run.json, an encoder's config.json, corpus searches in any
Unicode form. Each is read, or refused in one line naming the file and the field: never a traceback, a hang or
a silent wrong answer. The command runner and the one-line check are the command-line fuzz module's."""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ctxmodels.commands.finetune import add_arguments as finetune_arguments
from ctxmodels.training.finetune_task import FinetuneSettings
from tests.helpers import write_corpus
from tests.test_fuzz_cli import FEW, refused, run

HOSTILE_VALUES = st.one_of(
    st.sampled_from([1.5, "fast", -3, 0, None, True, [], {}, [1], "", 2**64, 1e309]),
    st.integers(-(2**65), 2**65), st.floats(), st.text(max_size=5), st.lists(st.integers(), max_size=2))

# ----------------------------------------------------------------------------------------------------------
# a run's run.json edited by hand


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A tiny static-vectors run and a tiny fine-tuning run of a tiny BERT, each two steps long."""
    from ctxmodels.bert import BertConfig, BertForPreTraining
    from ctxmodels.formats.huggingface import save_pretrained
    from ctxmodels.tokenization import WordPieceTokenizer
    from tests.test_finetune import _sentences, sentence_task

    root = tmp_path_factory.mktemp("runs")
    corpus = write_corpus(root / "gen.txt", n_docs=4, paragraphs=12)
    o = run(["train", "static", "--out", root / "static", "--corpus", corpus, "--dim", "8", "--min-count", "1",
             "--steps", "2", "--no-progress", "--threads", "1"], "setup")
    assert o.rc == 0, o
    data = sentence_task(40)
    tsv = root / "animals.tsv"
    tsv.write_text("".join(f"{' '.join(e.words)}\t{e.label}\n" for e in data.train + data.dev + data.test))
    tok = WordPieceTokenizer.train([" ".join(s) for s in _sentences(200, 5)], vocab_size=80, min_frequency=1)
    bert = root / "bert"
    save_pretrained(BertForPreTraining(BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2,
                                                  num_attention_heads=4, intermediate_size=64,
                                                  max_position_embeddings=64)), tok, bert)
    o = run(["finetune", "--model", bert, "--task", tsv, "--out", root / "finetune", "--steps", "2",
             "--batch-size", "8", "--no-progress", "--threads", "1"], "setup")
    assert o.rc == 0, o
    return {"static": root / "static", "finetune": root / "finetune"}


def _resume(runs, kind: str, edit) -> tuple:
    """Resume a copy of the ``kind`` run to step 4 after ``edit(stored run.json)``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        shutil.copytree(runs[kind], out)
        stored = json.loads((out / "run.json").read_text())
        stored = edit(stored) or stored
        (out / "run.json").write_text(json.dumps(stored))
        argv = ["train", "static"] if kind == "static" else ["finetune"]
        o = run([*argv, "--out", out, "--resume", "--steps", "4", "--no-progress", "--threads", "1"],
                f"{kind} resume")
        used = json.loads((out / "run.json").read_text()) if o.rc == 0 else None
    return o, used


@pytest.mark.parametrize("key, value, words", [
    ("seed", 1.5, "seed must be a whole number between 0 and 4294967295, got 1.5"),
    ("lr", "fast", "lr must be above 0 and at most 1, got 'fast'"),
    ("steps", -3, "steps must be a whole number between 1 and 10000000, got -3"),
    ("epochs", [1], "epochs must be a whole number between 1 and 1000, got [1]"),
    ("batch_size", None, "batch_size must be set, got null"),
    ("mode", 7, "mode must be a str, got 7"),
    ("model_path", "", "model_path and task must be set"),
])
def test_a_hand_edited_finetune_run_json_is_one_line_naming_the_file_and_field(runs, key, value, words):
    def edit(stored):
        stored["settings"][key] = value

    o, _ = _resume(runs, "finetune", edit)
    line = refused(o)
    assert "run.json: damaged run settings: " in line and words in line, line


@pytest.mark.parametrize("kind", ["static", "finetune"])
def test_run_json_of_the_wrong_shape_or_with_an_unknown_setting(runs, kind):
    o, _ = _resume(runs, kind, lambda stored: {**stored, "settings": [stored["settings"]]})
    assert "run.json: not the settings of a" in refused(o)
    o, _ = _resume(runs, kind, lambda stored: [stored])
    assert "run.json: expected a JSON object, found list" in refused(o)
    # a typo is not silently dropped: the run resumes with its own value and says which name it ignored
    o, used = _resume(runs, kind, lambda stored: stored["settings"].update(lerning_rate=0.5))
    assert o.rc == 0 and "done: 4 steps" in o.out, o
    assert "run.json: ignoring 'lerning_rate': not a setting of this run" in o.err, o
    assert "lerning_rate" not in used["settings"]


@pytest.mark.parametrize("kind", ["static", "finetune"])
@FEW
@given(data=st.data(), value=HOSTILE_VALUES, drop=st.booleans())
@example(data=None, value="fast", drop=False)
def test_resume_from_any_hand_edited_setting(runs, kind, data, value, drop):
    """Any setting of run.json set to any JSON value, or removed: the run resumes with exactly the stored value
    (or the default, for a removed one) or is refused in one line naming run.json and the setting."""
    names = sorted(json.loads((runs[kind] / "run.json").read_text())["settings"])
    key = data.draw(st.sampled_from(names), label="key") if data is not None else "lr"

    def edit(stored):
        if drop:
            del stored["settings"][key]
        else:
            stored["settings"][key] = value

    o, used = _resume(runs, kind, edit)
    if o.rc != 0:
        line = refused(o)
        if "damaged run settings" in line:
            assert key in line, (key, line)
    elif not drop and key not in ("steps", "corpus", "corpus_sha256", "model", "model_path"):
        assert used["settings"][key] == value, (key, value, used["settings"][key])


def test_finetune_settings_bound_each_number_as_the_command_line_does():
    import argparse

    parser = argparse.ArgumentParser()
    finetune_arguments(parser)
    options = {a.dest: a.type for a in parser._actions if a.dest in FinetuneSettings.BOUNDS}
    assert options
    for name, parse in options.items():
        bound = FinetuneSettings.BOUNDS[name]
        assert parse(str(bound.lo if not bound.lo_open else bound.hi)) is not None
        with pytest.raises((ValueError, argparse.ArgumentTypeError)):
            parse(str(bound.hi * 10 + 1))
    numeric = [f.name for f in dataclasses.fields(FinetuneSettings) if "int" in str(f.type) or "float" in str(f.type)]
    assert sorted(set(numeric) - set(FinetuneSettings.BOUNDS)) == []


# ----------------------------------------------------------------------------------------------------------
# an encoder's config.json with hostile sizes: refused before anything is built


@pytest.fixture(scope="module")
def encoders(tmp_path_factory) -> dict[str, Path]:
    import warnings

    from tests.hf_tiny import build

    root = tmp_path_factory.mktemp("encoders")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {f: build(f, root / f) for f in ("albert", "roberta", "distilbert", "electra-generator",
                                                "deberta-v2")}


HUGE_SIZES = [
    ("albert", "inner_group_num", 10**6), ("albert", "inner_group_num", 2.5), ("albert", "num_hidden_groups", 10**6),
    ("albert", "num_hidden_layers", 10**6), ("albert", "num_hidden_layers", "12"),
    ("albert", "intermediate_size", 10**9), ("albert", "hidden_size", 10**7), ("albert", "num_attention_heads", 10**6),
    ("albert", "max_position_embeddings", 10**9), ("albert", "vocab_size", 10**10), ("albert", "embedding_size", 10**7),
    ("albert", "embedding_size", True), ("roberta", "hidden_size", 32.0), ("roberta", "num_attention_heads", 0),
    ("roberta", "num_attention_heads", 3), ("roberta", "type_vocab_size", 10**9), ("distilbert", "dim", 10**7),
    ("distilbert", "hidden_dim", 10**9), ("distilbert", "n_layers", 10**6), ("distilbert", "n_heads", 10**6),
    ("distilbert", "n_heads", 5), ("electra-generator", "embedding_size", 10**7),
    ("electra-generator", "num_hidden_layers", None), ("deberta-v2", "position_buckets", 10**8),
    ("deberta-v2", "max_relative_positions", 10**8), ("deberta-v2", "attention_head_size", 10**6),
]


def _edited(encoders, tmp: Path, family: str, changes: dict) -> Path:
    folder = tmp / family
    shutil.copytree(encoders[family], folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **changes}))
    return folder


@pytest.mark.parametrize("family, field, value", HUGE_SIZES)
def test_a_hostile_encoder_size_is_refused_before_the_model_is_built(encoders, tmp_path, family, field, value):
    """Checked alone (check_sizes runs before transformers builds anything): without the check some of these
    build a million layers or allocate gigabytes."""
    from ctxmodels.checkpoint import CheckpointError
    from ctxmodels.formats.transformers_models import check_sizes

    folder = _edited(encoders, tmp_path, family, {field: value})
    with pytest.raises(CheckpointError) as e:
        check_sizes(folder, json.loads((folder / "config.json").read_text()))
    message = str(e.value)
    assert message.startswith(f"{folder / 'config.json'}: {field} ") and "\n" not in message, message


ENCODER_FIELDS = {
    "albert": ["inner_group_num", "num_hidden_groups", "num_hidden_layers", "intermediate_size", "hidden_size",
               "num_attention_heads", "max_position_embeddings", "vocab_size", "embedding_size", "type_vocab_size"],
    "roberta": ["num_hidden_layers", "intermediate_size", "hidden_size", "num_attention_heads",
                "max_position_embeddings", "vocab_size", "type_vocab_size", "position_embedding_type"],
    "distilbert": ["dim", "hidden_dim", "n_layers", "n_heads", "max_position_embeddings", "vocab_size",
                   "hidden_size"],
    "electra-generator": ["embedding_size", "hidden_size", "num_hidden_layers", "intermediate_size",
                          "num_attention_heads", "vocab_size"],
    "deberta-v2": ["position_buckets", "max_relative_positions", "attention_head_size", "num_attention_heads",
                   "hidden_size", "num_hidden_layers", "relative_attention", "max_position_embeddings"],
}
SIZE_VALUES = st.one_of(st.sampled_from([0, -1, 1, 2, 3, 16, 32, 256, 10**6, 10**9, 2**63, 1.5, 32.0, "32", None,
                                         True, [], "relative_key", float("nan")]),
                        st.integers(-(2**64), 2**64))


@pytest.mark.parametrize("family", sorted(ENCODER_FIELDS))
@FEW
@given(data=st.data())
def test_a_generated_encoder_config_loads_or_is_one_line(encoders, family, data):
    """Up to three size fields of a tiny encoder's config.json set to generated values: the model loads (the
    sizes fit its weights) or ctxmodels.load says what is wrong in one line; never a hang or a huge allocation."""
    import time

    import ctxmodels
    from ctxmodels.checkpoint import CheckpointError
    from ctxmodels.loading import clear_cache

    changes = data.draw(st.dictionaries(st.sampled_from(ENCODER_FIELDS[family]), SIZE_VALUES, min_size=1,
                                        max_size=3), label="changes")
    with tempfile.TemporaryDirectory() as tmp:
        folder = _edited(encoders, Path(tmp), family, changes)
        started = time.monotonic()
        try:
            ctxmodels.load(folder, reload=True)
        except (CheckpointError, ValueError) as e:
            assert "\n" not in str(e).strip() and str(folder) in str(e), e
        finally:
            clear_cache()
        assert time.monotonic() - started < 30, changes


# ----------------------------------------------------------------------------------------------------------
# corpus search: a word in any Unicode normal form, and words too long for the index

NFD_CAFE, NFC_CAFE = "cafe\u0301", "caf\u00e9"


def _corpus_search(tmp_path: Path, text: str, word: str, monkeypatch) -> tuple:
    from ctxmodels.corpus_index import CorpusIndex

    monkeypatch.setenv("CTXMODELS_CACHE", str(tmp_path / "cache"))
    corpus = tmp_path / "c.txt"
    corpus.write_text(text, encoding="utf-8")
    with CorpusIndex.open(corpus) as index:
        return index.count(word), index.lookup(word, limit=None)


@pytest.mark.parametrize("query", [NFC_CAFE, NFD_CAFE, "CAFE\u0301", "Caf\u00c9"])
def test_a_word_is_found_in_either_normal_form_and_shown_as_written(tmp_path, monkeypatch, query):
    text = f"A {NFD_CAFE} by the bank.\n\nThe {NFC_CAFE} was shut. Un CAF\u00c9.\n"
    count, found = _corpus_search(tmp_path, text, query, monkeypatch)
    assert count == found.total == 3
    assert [(h.sentence, h.word) for h in found.hits] == [
        (f"A {NFD_CAFE} by the bank.", NFD_CAFE), (f"The {NFC_CAFE} was shut.", NFC_CAFE),
        ("Un CAF\u00c9.", "CAF\u00c9")]
    o = run(["occurrences", "--corpus", tmp_path / "c.txt", "--word", query, "--count"], "occurrences unicode")
    assert o.rc == 0 and o.out.strip() == "3", o


def test_an_index_of_the_previous_format_is_rebuilt(tmp_path, monkeypatch):
    import sqlite3

    from ctxmodels.corpus_index import CorpusIndex, index_path

    count, _ = _corpus_search(tmp_path, f"A {NFD_CAFE}.\n", NFC_CAFE, monkeypatch)
    assert count == 1
    db = index_path(tmp_path / "c.txt")
    with sqlite3.connect(db) as conn:  # as the previous format stored it: casefolded only, not composed
        conn.execute("UPDATE meta SET value = '2' WHERE key = 'format'")
    with CorpusIndex.open(tmp_path / "c.txt") as index:
        assert index.count(NFC_CAFE) == 1


def test_a_word_too_long_for_the_index_is_refused_in_one_line(tmp_path, monkeypatch):
    from ctxmodels.corpus_index import MAX_WORD_BYTES

    longest, longer = "x" * MAX_WORD_BYTES, "x" * (MAX_WORD_BYTES + 2)
    text = f"{longest} and {longer} and {'x' * 40_000}.\n"
    count, found = _corpus_search(tmp_path, text, longest, monkeypatch)
    assert count == found.total == 1 and found.hits[0].word == longest  # the longer words share its cut form
    for word in (longer, "x" * 40_000, "\u00e9" * (MAX_WORD_BYTES // 2 + 1)):
        o = run(["occurrences", "--corpus", tmp_path / "c.txt", "--word", word], "occurrences long word")
        line = refused(o)
        assert f"the longest word the index can search is {MAX_WORD_BYTES:,} bytes" in line and len(line) < 400, line


PIECES = ["a", "e", "E", "\u0301", "\u0300", "\u0308", "\u00e9", "\u00c9", "\u00eb", "\u1e17", "o", "\u00f6",
          "\u212b", "A\u030a", "\u00c5", "\u0327", "c", "\u00e7", "\ufb01", "\u0130", "i\u0307", "\u1e9e", "ss"]
WORD = st.lists(st.sampled_from(PIECES), min_size=1, max_size=4).map("".join)


@FEW
@given(words=st.lists(WORD, min_size=1, max_size=12), query=WORD,
       forms=st.tuples(st.sampled_from(["NFC", "NFD"]), st.sampled_from(["NFC", "NFD"])))
def test_search_in_any_normal_form_equals_a_plain_scan(words, query, forms):
    """Words of letters and combining marks, the corpus and the query each in NFC or NFD: the index finds what
    a scan comparing each word's fold (casefold, NFC) finds, and shows each as written."""
    import unicodedata

    from ctxmodels.corpus_index import CorpusIndex, fold
    from ctxmodels.text import tokenize_with_offsets

    text = unicodedata.normalize(forms[0], " ".join(words)) + "\n"
    query = unicodedata.normalize(forms[1], query)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "c.txt"
        corpus.write_text(text, encoding="utf-8")
        try:
            with CorpusIndex.open(corpus, cache=tmp) as index:
                found = index.lookup(query, limit=None)
                count = index.count(query)
        except ValueError as e:  # a query the tokenizer reads as more than one word
            assert "is not one word" in str(e), e
            return
    expected = [w for w, _, _ in tokenize_with_offsets(text.strip()) if fold(w) == fold(query.strip())]
    assert count == found.total == len(expected)
    assert [h.word for h in found.hits] == expected
