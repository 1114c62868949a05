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

