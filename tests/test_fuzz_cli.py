"""Fuzzing the command line: every command, fed generated hostile option values and hostile files.

Each case runs ``ctxmodels.cli.main([...])`` in this process and must end in one of two ways:

* exit 0 with a correct result (the value given is the value used: stored in run.json, in the trainer's settings,
  in the probe's settings; the output holds what was asked for), or
* exit 2 with exactly one error line, the last one: ``ctxmodels: error: ...`` or argparse's
  ``ctxmodels CMD: error: argument --OPTION: ...`` naming the option.

An uncaught exception fails the case (a traceback is a bug), and so does exit 0 having done nothing. Values:
NaN, infinities, negative, zero, huge and fractional numbers, words, empty strings, emoji, control characters,
numbers in other scripts, and draws from inside each option's declared range. Files: empty, binary, not UTF-8, NUL
bytes, huge lines, only blank lines, folders, named pipes, missing, under a file, damaged checkpoints, caches and
run.json.

Every case runs with the current folder set to a scratch folder (a relative or empty path can only ever reach
that), and nothing is written outside the test's temporary folders; ``/dev/zero`` is only ever read.

Training is stubbed where the option under test only has to reach the trainer (``Trainer.train`` records what it
was given); the file cases, the resumes and a few whole runs train for real. ``CTXMODELS_FUZZ_SCALE=10`` draws ten
times as many examples. The number of cases run is printed at the end of the module (``fuzz cases run: N``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import io
import json
import math
import os
import re
import shutil
import tempfile
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ctxmodels import cli
from ctxmodels.commands import COMMANDS
from ctxmodels.training import trainer as trainer_module
from tests.helpers import show_past_capture, synthetic_corpus, write_corpus

CASES: Counter[str] = Counter()
OUTCOMES: Counter[str] = Counter()
SCALE = float(os.environ.get("CTXMODELS_FUZZ_SCALE", "1"))


def _examples(n: int) -> settings:
    return settings(max_examples=max(1, int(n * SCALE)), deadline=None, suppress_health_check=[HealthCheck.too_slow])


FUZZ, FEW, MANY = _examples(25), _examples(12), _examples(150)

# ----------------------------------------------------------------------------------------------------------
# running a command


@dataclass
class Outcome:
    argv: list[str]
    rc: int
    out: str
    err: str


def run(argv: list, kind: str = "") -> Outcome:
    """``ctxmodels ARGV`` in this process; an exception escaping it fails the test, as a traceback would."""
    CASES[kind or str(argv[0])] += 1
    out, err = io.StringIO(), io.StringIO()
    threads = torch.get_num_threads()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rc = cli.main([str(a) for a in argv])
    finally:
        torch.set_num_threads(threads)
    # (under pytest warnings are recorded, not printed: put them where the terminal would show them, first)
    shown = "".join(f"ctxmodels: warning: {w.message}\n" for w in caught)
    outcome = Outcome([str(a) for a in argv], rc, out.getvalue(), shown + err.getvalue())
    OUTCOMES[f"exit {rc}"] += 1
    assert "Traceback" not in outcome.err, outcome
    assert rc in (0, 2), outcome
    return outcome


ERROR_LINE = re.compile(r"^ctxmodels(?: [\w-]+)*: error: \S")


def refused(o: Outcome, option: str | None = None) -> str:
    """The one error line of a refused command (argparse's usage lines may come before it)."""
    assert o.rc == 2, o
    lines = [line for line in o.err.splitlines() if line.strip()]
    errors = [line for line in lines if ERROR_LINE.match(line)]
    assert len(errors) == 1 and errors[0] == lines[-1], o
    if option is not None:
        assert f"argument {option}:" in errors[0], o
    return errors[0]


# ----------------------------------------------------------------------------------------------------------
# hostile values

WORDS = ["", " ", "nan", "NaN", "-nan", "inf", "-inf", "+inf", "Infinity", "1e309", "-1e309", "1e-320", "0x10", "0o7",
         "1_000", "١٢", "３", "1e3", "2.5", "-0", "-0.0", "+3", "🙂", "\t7\n", "1/2", "None", "true", "7 7", "--1",
         "9" * 5000, "0" * 400 + "5", "\x00", "\x1b[31m5", "**5**", "<b>5</b>", "![x](http://x/t.png)"]
NASTY_NUMBERS = st.one_of(
    st.sampled_from(WORDS),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=6),
)
NASTY_TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", " ", "🙂🙂🙂", "\x00", "\x1b[2J", "**bold** <script>alert(1)</script>", "![x](http://x/t.png)",
                     "a" * 5000, "[MASK] " * 300, "\u202eevil", "\ufeff", "line\nbreak", "tab\there"]),
)


def number_for(bound, option: str = "") -> st.SearchStrategy[str]:
    """Hostile text, or a number drawn inside the option's declared range (so accepted values are tried too).
    Thread counts are drawn small: a thousand threads on this machine's two cores is allowed, but slow."""
    hi = min(bound.hi, 4) if option == "--threads" else bound.hi
    inside = (st.integers(int(bound.lo), int(hi)) if bound.integer
              else st.floats(bound.lo, bound.hi, allow_nan=False, exclude_min=bound.lo_open,
                             exclude_max=bound.hi_open)).map(str)
    edges = st.sampled_from([str(bound.lo), str(hi), str(bound.lo - 1), str(bound.hi + 1)])
    return st.one_of(NASTY_NUMBERS, inside, edges)


def parse_as(bound, text: str):
    """What the option's declared range accepts: the number, or None when it must be refused."""
    try:
        return bound.parse("", text)
    except ValueError:
        return None


def _parsers(name: str) -> list[argparse.ArgumentParser]:
    parser = argparse.ArgumentParser()
    importlib.import_module(f"ctxmodels.commands.{COMMANDS[name][0]}").add_arguments(parser)
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found += list(action.choices.values())
    return found


def numeric_options(command: list[str]) -> dict[str, object]:
    """``--option`` -> its declared Bound, for every numeric option of a command (found through its parser)."""
    parsers = _parsers(command[0])
    if command[0] == "train":
        parser = next(p for p in parsers[1:] if p.prog.endswith(command[1]))
    else:
        parser = parsers[0]
    return {a.option_strings[0]: a.type.bound for a in parser._actions if hasattr(a.type, "bound")}


# ----------------------------------------------------------------------------------------------------------
# fixtures: a scratch current folder, tiny models and corpora, hostile files


@pytest.fixture(scope="module", autouse=True)
def _scratch_cwd(tmp_path_factory):
    """Every case runs in a scratch folder: an empty or relative path given to a command can reach nothing else
    (an empty ship target once meant the current folder, and it was the checkout)."""
    with pytest.MonkeyPatch.context() as m:
        m.chdir(tmp_path_factory.mktemp("cwd"))
        yield


@pytest.fixture(scope="module", autouse=True)
def _short_pipe_wait():
    """A named pipe nobody writes to is given up after a fraction of a second here, not a minute."""
    from ctxmodels import text

    with pytest.MonkeyPatch.context() as m:
        m.setattr(text, "PIPE_WAIT_S", 0.2)
        yield


@pytest.fixture(scope="module", autouse=True)
def _report_cases(request):
    yield
    shown = ", ".join(f"{k} {v}" for k, v in sorted(CASES.items()))
    line = (f"fuzz cases run: {sum(CASES.values())} ({shown}); "
            f"{OUTCOMES['exit 0']} ended in exit 0, {OUTCOMES['exit 2']} in a one-line error")
    show_past_capture(request.config, line)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Corpora, three tiny trained models, a tiny WSD set and a gallery of hostile files."""
    root = tmp_path_factory.mktemp("fuzz")
    syn = root / "syn.txt"
    syn.write_text(synthetic_corpus(n_docs=6, paragraphs=8), encoding="utf-8")
    gen = write_corpus(root / "gen.txt", n_docs=4, paragraphs=12)
    models = {}
    tiny = {"bert": ["--corpus", syn, "--preset", "tiny", "--max-seq-len", "32", "--batch-size", "8",
                     "--eval-sequences", "8", "--vocab-size", "150"],
            "elmo": ["--corpus", gen, "--preset", "tiny", "--batch-size", "4", "--vocab-size", "100",
                     "--eval-tokens", "100"],
            "static": ["--corpus", gen, "--dim", "8", "--min-count", "1"]}
    for kind, args in tiny.items():
        models[kind] = root / kind
        o = run(["train", kind, "--out", models[kind], "--steps", "2", "--no-progress", "--threads", "1", *args],
                "setup")
        assert o.rc == 0, o
    files = hostile_files(root / "files")
    wsd = root / "wsd" / "bank"
    wsd.mkdir(parents=True)
    for split, rows in (("train", [("0", "bank river", "0"), ("0", "bank box", "1")]),
                        ("test", [("0", "bank river", "0"), ("1", "the bank box", "1")])):
        (wsd / f"{split}.data.txt").write_text("".join(f"{i}\t{s}\n" for i, s, _ in rows), encoding="utf-8")
        (wsd / f"{split}.gold.txt").write_text("".join(f"{g}\n" for *_, g in rows), encoding="utf-8")
    (wsd / "classes_map.txt").write_text(json.dumps({"0": "bank_(river)", "1": "bank_(box)"}), encoding="utf-8")
    return {"root": root, "syn": syn, "gen": gen, "models": models, "tiny": tiny, "files": files,
            "wsd": wsd.parent}


def hostile_files(d: Path) -> dict[str, Path]:
    d.mkdir(parents=True)
    rng = np.random.default_rng(0)
    text = {
        "empty": b"",
        "blank lines": b"\n\n  \n\t\n",
        "binary": rng.integers(0, 256, 4000, dtype=np.uint8).tobytes(),
        "latin-1": "café au lait, déjà vu\n\nun été\n".encode("latin-1"),
        "utf-16": "the bank\n\nthe river\n".encode("utf-16"),
        "nul bytes": b"the bank\x00of the river\n\nmore\x00\n",
        "zeros": b"\0" * 3000,
        "huge line": (" ".join(["bank"] * 60_000) + "\n\n" + " ".join(["river"] * 60_000) + "\n").encode(),
        "emoji": "🙂 🏦 🌊 the bank 🙂\n\n💰 money 🙂 box\n".encode(),
        "control chars": "the\x1b[31m bank\x07 of\x0b the river\r\n\r\nthe\x0c box\u202e bank\n".encode(),
        "markup": b"**the** <b>bank</b> ![x](http://x/t.png)\n\n<script>alert(1)</script> river [MASK]\n",
        "one word": b"bank\n",
        "bom crlf": "\ufeffThe bank of the river.\r\n\r\nThe money in the bank.\r\n".encode(),
        "long word": ("x" * 100_000 + " bank\n\nriver box\n").encode(),
    }
    paths = {}
    for name, data in text.items():
        paths[name] = d / (name.replace(" ", "_") + ".txt")
        paths[name].write_bytes(data)
    paths["folder"] = d / "folder"
    paths["folder"].mkdir()
    paths["missing"] = d / "missing.txt"
    paths["fifo"] = d / "fifo"
    os.mkfifo(paths["fifo"])
    paths["under a file"] = paths["one word"] / "x.txt"
    paths["device"] = Path("/dev/zero")  # only ever read, never written
    paths["emoji name"] = d / "🙂 the\tbank\n.txt"
    paths["emoji name"].write_text("the bank 🙂 of the river.\n\nthe box.\n", encoding="utf-8")
    return paths


@contextlib.contextmanager
def stub_trainer():
    """``Trainer.train`` records the trainer's settings and the task instead of training."""
    seen: dict[str, object] = {}

    def train(self, resume=False):
        seen.update(cfg=self.cfg, task=self.task, resume=resume)
        return {}

    with pytest.MonkeyPatch.context() as m:
        m.setattr(trainer_module.Trainer, "train", train)
        yield seen


# ----------------------------------------------------------------------------------------------------------
# every numeric option is declared with its range


def test_every_numeric_option_of_every_command_has_a_declared_range():
    unbounded = [f"{name} {a.option_strings}" for name in COMMANDS for p in _parsers(name) for a in p._actions
                 if a.type in (int, float)]
    assert unbounded == []


def test_every_numeric_run_setting_has_a_declared_range():
    from ctxmodels.commands.train import settings_class

    for kind in ("bert", "elmo", "static"):
        cls = settings_class(kind)
        numeric = [f.name for f in dataclasses.fields(cls) if re.search(r"\b(int|float)\b", str(f.type))]
        assert sorted(set(numeric) - set(cls.bounds())) == [], kind


# ----------------------------------------------------------------------------------------------------------
# train: every numeric option of every kind


def _train_option_case(world, kind: str, option: str, value: str) -> None:
    bound = numeric_options(["train", kind])[option]
    expected = parse_as(bound, value)
    with tempfile.TemporaryDirectory() as tmp, stub_trainer() as seen:
        out = Path(tmp) / "run"
        o = run(["train", kind, "--out", out, "--steps", "2", "--no-progress", *world["tiny"][kind],
                 f"{option}={value}"], f"train {kind}")
        if expected is None:
            refused(o, option)
            return
        if o.rc == 2:  # a value in range that this corpus or these sizes cannot take: said in one line
            line = refused(o)
            assert "argument --" not in line, o
            return
        assert seen, "exit 0 without training"
        name = option[2:].replace("-", "_")
        if option == "--threads":
            return
        if option == "--time-limit":
            assert seen["cfg"].time_limit_s == pytest.approx(60 * expected)
            return
        if option == "--stop-at":  # where this session stops, not a setting of the run
            assert seen["cfg"].stop_at == expected
            return
        if option == "--data-workers":  # how batches are built, not a setting of the run: run.json leaves it out
            assert seen["cfg"].data_workers == expected
            return
        stored = json.loads((out / "run.json").read_text())["settings"][name]
        assert stored == expected and type(stored) is type(expected), (option, value, stored)


@pytest.mark.parametrize("kind", ["bert", "elmo", "static"])
@FUZZ
@given(data=st.data())
def test_train_options(world, kind, data):
    options = numeric_options(["train", kind])
    option = data.draw(st.sampled_from(sorted(options)), label="option")
    value = data.draw(number_for(options[option], option), label="value")
    _train_option_case(world, kind, option, value)


@pytest.mark.parametrize("kind", ["bert", "elmo", "static"])
def test_train_options_at_their_edges(world, kind):
    """Every option of every kind at zero, -1, NaN, inf, a word, empty, and its range's two ends and beyond."""
    for option, bound in numeric_options(["train", kind]).items():
        top = "2" if option == "--threads" else str(bound.hi)
        for value in ("0", "-1", "nan", "inf", "-inf", "x", "", " 3 ", str(bound.lo), top, str(bound.hi + 1)):
            _train_option_case(world, kind, option, value)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["bert", "elmo", "static"])
@MANY
@given(data=st.data())
def test_train_options_many(world, kind, data):
    options = numeric_options(["train", kind])
    option = data.draw(st.sampled_from(sorted(options)), label="option")
    _train_option_case(world, kind, option, data.draw(number_for(options[option], option), label="value"))


# ----------------------------------------------------------------------------------------------------------
# train: hostile files and folders

READABLE = {"emoji", "control chars", "markup", "bom crlf", "long word", "huge line", "emoji name"}


@pytest.mark.parametrize("kind", ["bert", "elmo", "static"])
def test_train_on_hostile_corpora(world, kind):
    for name, path in world["files"].items():
        with tempfile.TemporaryDirectory() as tmp, stub_trainer() as seen:
            args = [a if a not in (world["syn"], world["gen"]) else path for a in world["tiny"][kind]]
            o = run(["train", kind, "--out", Path(tmp) / "run", "--steps", "2", "--no-progress",
                     "--heldout-docs", "1", *args], f"train {kind} files")
            if o.rc == 0:
                assert seen and name in READABLE, (name, o)
                stored = json.loads((Path(tmp) / "run" / "run.json").read_text())["settings"]["corpus"]
                assert stored == str(path.resolve())
            else:
                refused(o)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["bert", "elmo", "static"])
def test_whole_runs_on_odd_but_valid_corpora(world, kind):
    """Real training (a few steps) on text with emoji, control characters, markup and a huge line."""
    for name in ("emoji name", "control chars", "markup", "huge line"):
        text = world["files"][name].read_text(encoding="utf-8")
        with tempfile.TemporaryDirectory() as tmp:
            corpus = Path(tmp) / "c.txt"
            corpus.write_text(text + "\n\n" + (world["syn"] if kind == "bert" else world["gen"]).read_text(),
                              encoding="utf-8")
            args = [corpus if a in (world["syn"], world["gen"]) else a for a in world["tiny"][kind]]
            o = run(["train", kind, "--out", Path(tmp) / "run", "--steps", "3", "--no-progress", "--threads", "1",
                     *args], f"train {kind} real")
            assert o.rc == 0, o
            assert "done: 3 steps" in o.out


@pytest.mark.parametrize("kind", ["static", "bert"])
def test_train_into_hostile_out_folders(world, kind):
    files = world["files"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "theirs").mkdir()
        (tmp / "theirs" / "notes.txt").write_text("mine")
        cases = {"a file": files["one word"], "a folder of other files": tmp / "theirs",
                 "under a file": files["one word"] / "run", "a pipe": files["fifo"], "empty": "",
                 "too long a name": tmp / ("x" * 300), "a folder": tmp / "fine 🙂\n"}
        for what, out in cases.items():
            with stub_trainer() as seen:
                o = run(["train", kind, "--out", out, "--steps", "2", "--no-progress", *world["tiny"][kind]],
                        f"train {kind} out")
            if what == "a folder":
                assert o.rc == 0 and seen, o
                continue
            refused(o)
        assert (tmp / "theirs" / "notes.txt").read_text() == "mine"
        assert sorted(p.name for p in (tmp / "theirs").iterdir()) == ["notes.txt"]


DAMAGEABLE = {
    "static": ["checkpoint/trainer_state.pt", "run.json", "checkpoint/model.safetensors", "static-data.npz",
               "metrics.jsonl", "checkpoint/config.json"],
    "bert": ["checkpoint/trainer_state.pt", "run.json", "data/meta.json", "data/train.npz", "checkpoint/vocab.txt",
             "data/tokenizer/tokenizer.json"],
    "elmo": ["checkpoint/trainer_state.pt", "data_cache/key.json", "data_cache/train.npy", "data_cache/types.json",
             "checkpoint/vocab.txt", "checkpoint/config.json"],
}


@pytest.mark.parametrize("kind", ["static", "bert", "elmo"])
@FEW
@given(data=st.data(), cut=st.floats(0, 1), flip=st.booleans())
def test_resume_from_a_damaged_run(world, kind, data, cut, flip):
    """A run with a file of its checkpoint, settings, cache or log cut short or with a byte changed: it resumes
    (a cache is rebuilt, the log's broken line dropped) or says what is wrong in one line."""
    which = data.draw(st.sampled_from(DAMAGEABLE[kind]), label="which")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        shutil.copytree(world["models"][kind], out)
        path = out / which
        raw = bytearray(path.read_bytes())
        at = min(int(cut * len(raw)), len(raw) - 1)
        if flip:
            raw[at] ^= 0xFF
        else:
            del raw[at:]
        path.write_bytes(bytes(raw))
        o = run(["train", kind, "--out", out, "--resume", "--steps", "4", "--no-progress", "--threads", "1"],
                f"train {kind} resume")
        if o.rc == 0:
            assert "done: 4 steps" in o.out, o
        else:
            refused(o)


@FEW
@given(key=st.sampled_from(["steps", "dim", "lr", "seed", "corpus", "cased", "window", "subsample", "batch_size"]),
       value=st.one_of(st.none(), st.booleans(), st.integers(-(2**65), 2**65), st.floats(), st.text(max_size=5),
                       st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers())))
def test_resume_from_an_edited_run_json(world, key, value):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        shutil.copytree(world["models"]["static"], out)
        stored = json.loads((out / "run.json").read_text())
        original = stored["settings"].get(key)
        stored["settings"][key] = value
        (out / "run.json").write_text(json.dumps(stored))
        o = run(["train", "static", "--out", out, "--resume", "--steps", "4", "--no-progress", "--threads", "1"],
                "train resume")
        if o.rc == 0:  # an edit the run can take: it trains with the edited value, not another one
            assert "done: 4 steps" in o.out, o
            used = json.loads((out / "run.json").read_text())["settings"][key]
            assert used == (4 if key == "steps" else original if value is None else value), (key, value, used)
        else:
            refused(o)


# ----------------------------------------------------------------------------------------------------------
# the other commands


@FUZZ
@given(k=st.one_of(number_for(numeric_options(["fill-mask"])["--top-k"]), st.just("5")), text=NASTY_TEXT,
       masks=st.integers(0, 3), as_json=st.booleans())
@example(k="1000", text="the", masks=1, as_json=True)
@example(k="5", text="", masks=0, as_json=False)
def test_fill_mask(world, k, text, masks, as_json):
    words = text.split(" ")
    for i in range(masks):
        words.insert((i * 7) % (len(words) + 1), "[MASK]")
    sentence = " ".join(words)
    o = run(["fill-mask", "--model", world["models"]["bert"], f"--top-k={k}", *(["--json"] if as_json else []),
             "--", sentence])
    expected = parse_as(numeric_options(["fill-mask"])["--top-k"], k)
    if expected is None:
        refused(o, "--top-k")
        return
    if o.rc == 2:
        refused(o)
        return
    assert masks or "[MASK]" in sentence
    if as_json:
        results = json.loads(o.out)
        vocab = len((world["models"]["bert"] / "vocab.txt").read_text(encoding="utf-8").splitlines())
        assert len(results) >= 1 and all(len(r) == min(expected, vocab) for r in results), o
    else:
        assert o.out.strip()


@FUZZ
@given(k=number_for(numeric_options(["neighbours"])["--k"]),
       words=st.lists(st.one_of(NASTY_TEXT, st.sampled_from(["box", "bank", "RIVER", "anna"])), min_size=1,
                      max_size=3))
def test_neighbours(world, k, words):
    o = run(["neighbours", "--model", world["models"]["static"], f"--k={k}", "--json", "--", *words])
    expected = parse_as(numeric_options(["neighbours"])["--k"], k)
    if expected is None:
        refused(o, "--k")
        return
    if o.rc == 2:
        assert "not in the vocabulary" in refused(o), o
        return
    result = json.loads(o.out)
    vocab = len((world["models"]["static"] / "vocab.txt").read_text(encoding="utf-8").splitlines())
    assert set(result) == set(words) and all(len(v) == min(expected, vocab - 1) for v in result.values()), o


@pytest.fixture(scope="module")
def tiny_semcor(tmp_path_factory):
    from tests.app_fixtures import write_semcor

    return write_semcor(tmp_path_factory.mktemp("semcor-data")) / "semcor"


@FEW
@given(kind=st.sampled_from(["static", "bert", "elmo"]), option=st.sampled_from(["--k", "--show"]),
       value=st.data(), word=st.one_of(NASTY_TEXT, st.sampled_from(["bank", "BANK", "river"])),
       sentence=st.one_of(NASTY_TEXT, st.just("We walked along the bank of the river.")), as_json=st.booleans())
def test_nearest_words(world, tiny_semcor, tmp_path_factory, kind, option, value, word, sentence, as_json):
    """Any option value, word and sentence: the nearest SemCor words per layer, or one line saying why not."""
    bound = numeric_options(["nearest-words"])[option]
    number = value.draw(number_for(bound, option), label="value")
    with pytest.MonkeyPatch.context() as m:
        m.setenv("CTXMODELS_CACHE", str(tmp_path_factory.getbasetemp() / "nearest-cache"))
        o = run(["nearest-words", "--model", world["models"][kind], "--word", word, "--semcor", tiny_semcor,
                 "--sentences", "100", f"{option}={number}", *(["--json"] if as_json else []), "--", sentence])
    expected = parse_as(bound, number)
    if expected is None:
        refused(o, option)
        return
    if o.rc == 2:
        refused(o)  # the word is not in the sentence, an empty sentence …
        return
    assert word.strip().lower() in sentence.lower(), o
    if as_json:
        result = json.loads(o.out)
        k = expected if option == "--k" else 50
        assert all(len(layer["nearest"]) == min(k, result["searched"]) for layer in result["layers"]), o
    else:
        assert "nearest of" in o.out.splitlines()[0], o


@FEW
@given(kind=st.sampled_from(["static", "bert", "elmo"]), word=st.one_of(NASTY_TEXT, st.sampled_from(["bank", "Banks"])),
       sentence=st.one_of(NASTY_TEXT, st.just("We walked along the banks of the river.")),
       lemma=st.one_of(st.none(), NASTY_TEXT, st.just("bank")), as_json=st.booleans())
def test_which_sense(world, tiny_semcor, kind, word, sentence, lemma, as_json):
    """Any word, sentence and lemma: the nearest sense per layer, or one line saying why not."""
    o = run(["which-sense", "--model", world["models"][kind], "--word", word, "--semcor", tiny_semcor,
             *(["--lemma", lemma] if lemma is not None else []), *(["--json"] if as_json else []), "--", sentence])
    if o.rc == 2:
        refused(o)  # the word is not in the sentence, not tagged in SemCor, an empty lemma …
        return
    assert o.rc == 0, o
    if as_json:
        result = json.loads(o.out)
        assert result["lemma"] == "bank" and len(result["senses"]) == 2
        assert all(len(layer["cosines"]) == 2 for layer in result["layers"]), o
    else:
        assert "SemCor occurrences of 'bank' in 2 senses" in o.out.splitlines()[0], o


@FUZZ
@given(kind=st.sampled_from(["static", "bert", "elmo"]), batch=number_for(numeric_options(["embed"])["--batch-size"]),
       source=st.sampled_from(["good", "empty", "blank lines", "binary", "latin-1", "utf-16", "nul bytes", "folder",
                               "missing", "fifo", "device", "under a file", "emoji", "control chars", "markup",
                               "emoji name", "long word"]),
       target=st.sampled_from(["new", "folder", "fifo", "under a file", "emoji", "empty"]))
def test_embed(world, kind, batch, source, target):
    files = world["files"]
    with tempfile.TemporaryDirectory() as tmp:
        good = Path(tmp) / "sentences.txt"
        good.write_text("the bank of the river\n\nthe box 🙂\n", encoding="utf-8")
        inp = good if source == "good" else files[source]
        out = {"new": Path(tmp) / "v.npz", "folder": files["folder"], "fifo": files["fifo"],
               "under a file": files["one word"] / "v.npz", "emoji": Path(tmp) / "🙂\n.npz", "empty": ""}[target]
        o = run(["embed", "--model", world["models"][kind], "--input", inp, "--out", out, f"--batch-size={batch}"])
        if parse_as(numeric_options(["embed"])["--batch-size"], batch) is None:
            refused(o, "--batch-size")
            return
        if o.rc == 2:
            refused(o)
            assert source not in ("good", "emoji", "control chars", "markup", "emoji name", "long word") or \
                target not in ("new", "emoji"), o
            return
        assert target in ("new", "emoji"), o
        lines = inp.read_text(encoding="utf-8").splitlines()
        with np.load(out) as z:
            arrays = [z[f"s{i}"] for i in range(len(lines))]
            assert len(z.files) == len(lines) + 1
        assert [a.shape[1] for a in arrays] == [len(line.split()) for line in lines]
        # static vectors have no row for an unknown word: NaN, and a warning that says so
        assert all(np.isfinite(a).all() for a in arrays) or (kind == "static" and "have no vector" in o.err), o


@FEW
@given(batch=number_for(numeric_options(["eval"])["--batch-size"]),
       data=st.sampled_from(["wsd", "folder", "missing", "one word", "fifo", "device"]),
       words=st.one_of(st.none(), st.sampled_from(["bank", "", "nope", ",,", "bank,bank"])))
def test_eval(world, batch, data, words):
    path = world["wsd"] if data == "wsd" else world["files"][data]
    o = run(["eval", "wsd", "--data", path, "--model", world["models"]["static"], f"--batch-size={batch}",
             *(["--words", words] if words is not None else [])])
    if parse_as(numeric_options(["eval"])["--batch-size"], batch) is None:
        refused(o, "--batch-size")
    elif o.rc == 0:
        assert data == "wsd" and words in (None, "bank", "bank,bank") and "bank" in o.out, o
    else:
        refused(o)


def _damage_index(db: Path, data) -> None:
    """One generated damage to a corpus index file: bytes overwritten or cut, a table dropped or emptied, a meta
    value or a documents row changed."""
    import sqlite3

    how = data.draw(st.sampled_from(["bytes", "cut", "drop", "empty", "meta", "documents"]), label="how")
    if how in ("bytes", "cut"):
        raw = bytearray(db.read_bytes())
        at = data.draw(st.integers(0, len(raw) - 1), label="at")
        if how == "cut":
            del raw[at:]
        else:
            raw[at:at + data.draw(st.integers(1, 8192))] = data.draw(st.binary(min_size=1, max_size=64)) * 128
        db.write_bytes(bytes(raw[:len(raw)]))
        return
    tables = ["meta", "documents", "sentences", "words", "words_data", "words_idx", "words_config"]
    statement = {
        "drop": f"DROP TABLE {data.draw(st.sampled_from(tables), label='table')}",
        "empty": data.draw(st.sampled_from(["DELETE FROM sentences", "DELETE FROM documents", "DELETE FROM meta",
                                            "INSERT INTO words(words) VALUES ('delete-all')",
                                            "DELETE FROM sentences WHERE id % 2 = 0"]), label="empty"),
        "meta": "UPDATE meta SET value = ? WHERE key = ?",
        "documents": "UPDATE documents SET first_sentence = ?",
    }[how]
    params: tuple = ()
    if how == "meta":
        params = (data.draw(st.one_of(st.integers(-(2**70), 2**70).map(str), st.sampled_from(WORDS)), label="value"),
                  data.draw(st.sampled_from(["n_documents", "n_sentences", "n_words", "n_tokens", "sha256", "size",
                                             "format"]), label="key"))
    elif how == "documents":
        params = (data.draw(st.integers(-5, 10**6), label="first"),)
    conn = sqlite3.connect(db)
    try:
        conn.execute(statement, params)
        conn.commit()
    except sqlite3.DatabaseError:
        pass  # the bytes already damaged it
    finally:
        conn.close()


@FUZZ
@given(data=st.data(), word=st.sampled_from(["bank", "river", "the", "nope"]), as_count=st.booleans())
def test_occurrences_with_a_damaged_index(world, tmp_path_factory, data, word, as_count):
    """The corpus index damaged in generated ways: the count and the listing are those of a sound index (the
    index rebuilt, with a warning) or one error line; never a traceback or a silently wrong count."""
    from ctxmodels.corpus_index import CorpusIndex

    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as m:
        m.setenv("CTXMODELS_CACHE", tmp)
        index = CorpusIndex.open(world["gen"])
        expected = index.count(word)
        index.close()
        _damage_index(index.db_path, data)
        o = run(["occurrences", "--corpus", world["gen"], "--word", word, *(["--count"] if as_count else [])],
                "occurrences damaged index")
        if o.rc == 2:
            assert "corpus index is damaged" in refused(o), o
            return
        summary = o.out.splitlines()[-1]
        assert summary == str(expected) if as_count else (f"{expected} occurrence(s)" in summary or
                                                          expected == 0 and "no occurrence" in summary), o


SIDE_FILES = ["empty", "blank lines", "binary", "latin-1", "utf-16", "nul bytes", "zeros", "emoji", "control chars",
              "folder", "missing", "fifo", "under a file", "device", "emoji name"]


@pytest.mark.parametrize("role", ["--exclude", "--semcor", "address", "metadata"])
@pytest.mark.parametrize("name", SIDE_FILES)
def test_a_hostile_file_beside_or_given_to_a_text_command(world, tmp_path, role, name):
    """speeches-text's cloze, SemCor and address files, and a corpus's metadata file: each hostile file (a named
    pipe, a device, not UTF-8, binary, ...) gives a result or one line naming it; never a hang or a codec error."""
    hostile = world["files"][name]
    speeches = tmp_path / "speeches"
    speeches.mkdir()
    (speeches / "1990-Bush-1.txt").write_text("The bank lent money to the farmers.\n", encoding="utf-8")
    semcor = tmp_path / "semcor"
    semcor.mkdir()
    (semcor / "sentences.tsv").write_text("br-a01.1\tThe river bank .\n", encoding="utf-8")
    side = {"--exclude": tmp_path / "cloze.tsv", "--semcor": semcor / "sentences.tsv",
            "address": speeches / "1991-Bush-2.txt", "metadata": tmp_path / "novels-metadata.tsv"}[role]
    side.unlink(missing_ok=True)
    side.symlink_to(hostile)
    if role == "metadata":
        shutil.copy(world["gen"], tmp_path / "novels.txt")
        with pytest.MonkeyPatch.context() as m:
            m.setenv("CTXMODELS_CACHE", str(tmp_path / "cache"))
            o = run(["occurrences", "--corpus", tmp_path / "novels.txt", "--word", "the", "--count"], "metadata")
        assert o.rc == 0 and int(o.out) > 0, o
        return
    given = {"--exclude": ["--exclude", side], "--semcor": ["--semcor", semcor]}.get(role, [])
    o = run(["speeches-text", tmp_path / "out.txt", "--speeches", speeches, *given], f"speeches-text {role}")
    if o.rc == 0:
        assert name in ("empty", "blank lines", "emoji", "control chars", "emoji name"), o
        return
    line = refused(o)
    assert "codec" not in line and str(side) in line, o


def _json_places(obj, prefix=()) -> list[tuple]:
    """Every path into a JSON value (keys and list indices), the value itself first."""
    places = [prefix]
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else []
    for key, value in items:
        places += _json_places(value, (*prefix, key))
    return places


HOSTILE_JSON = st.one_of(st.none(), st.booleans(), st.integers(-(2**65), 2**65), st.floats(), st.text(max_size=5),
                         st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers()))


@FUZZ
@given(data=st.data(), remove=st.booleans())
def test_ship_cards_and_fp32_report_with_an_edited_report(world, data, remove):
    """The shipped quality report with one field changed to a hostile value or removed: the cards are written (or
    refused for other weights) and the fp32 report taken, or one line names the file; never a KeyError."""
    report = json.loads((Path(__file__).parents[1] / "assets" / "quality.json").read_text(encoding="utf-8"))
    places = [p for p in _json_places(report) if p][:4000]
    place = data.draw(st.sampled_from(places), label="field")
    parent = report
    for key in place[:-1]:
        parent = parent[key]
    if remove:
        del parent[place[-1]]
    else:
        parent[place[-1]] = data.draw(HOSTILE_JSON, label="value")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "report.json"
        path.write_text(json.dumps(report), encoding="utf-8")
        asset = Path(tmp) / "static-eltec"
        shutil.copytree(world["models"]["static"], asset)
        for argv in (["ship", "--cards", path, asset],
                     ["quality", "--model", Path(tmp) / "missing", "--no-senses", "--fp32-report", path]):
            o = run(argv, f"{argv[0]} edited report")
            if o.rc == 2 and str(path) not in o.err:  # past the report: the missing model, or other weights
                assert "missing" in refused(o) or "other weights" in refused(o), o
            elif o.rc == 2:
                refused(o)
            else:
                assert argv[0] == "ship" and "measured figures written" in o.err, o


class _Reached(Exception):
    """The command got past its checks to the measurement (stubbed), with these settings."""


@FUZZ
@given(data=st.data())
def test_probe_options(world, data):
    from ctxmodels.commands import probe

    options = numeric_options(["probe"])
    option = data.draw(st.sampled_from(sorted(options)), label="option")
    value = data.draw(number_for(options[option], option), label="value")
    reached = {}

    def fake(model, task, settings, **kw):
        reached["settings"] = settings
        raise _Reached

    with pytest.MonkeyPatch.context() as m:
        m.setattr(probe, "run_probe", fake)
        try:
            o = run(["probe", "--model", world["models"]["elmo"], "--task", "pos", f"{option}={value}"])
        except _Reached:
            o = None
    expected = parse_as(options[option], value)
    if expected is None:
        refused(o, option)
    elif o is not None:
        refused(o)  # a combination the probe settings refuse, in one line
    else:
        name = option[2:].replace("-", "_")
        got = getattr(reached["settings"], name)
        assert got == expected or (name == "threads" and expected == 0 and got is None), (option, value, got)


@FEW
@given(data=st.data())
def test_quality_options(world, data):
    from ctxmodels.commands import quality

    options = numeric_options(["quality"])
    option = data.draw(st.sampled_from(sorted(options)), label="option")
    value = data.draw(number_for(options[option], option), label="value")
    seen = {}

    def fake(models, semcor, corpus, bert_sequences, elmo_tokens, **kw):
        seen.update(bert_sequences=bert_sequences, elmo_tokens=elmo_tokens)
        raise _Reached

    with pytest.MonkeyPatch.context() as m:
        m.setattr(quality, "measure", fake)
        try:
            o = run(["quality", "--model", world["models"]["static"], "--no-senses", f"{option}={value}"])
        except _Reached:
            o = None
    expected = parse_as(options[option], value)
    if expected is None:
        refused(o, option)
    else:
        assert o is None, o
        name = option[2:].replace("-", "_")
        assert name == "threads" or seen[name] == expected


@pytest.mark.parametrize("target", ["new", "a file", "under a file", "fifo", "existing folder", "empty"])
def test_export_elmo(world, target):
    files = world["files"]
    with tempfile.TemporaryDirectory() as tmp:
        out = {"new": Path(tmp) / "e 🙂", "a file": files["one word"], "under a file": files["one word"] / "e",
               "fifo": files["fifo"], "existing folder": Path(tmp), "empty": ""}[target]
        o = run(["export-elmo", "--model", world["models"]["elmo"], "--out", out])
        if o.rc == 0:
            assert target in ("new", "existing folder") and (Path(out) / "options.json").is_file(), o
        else:
            refused(o)


@pytest.mark.parametrize("model", ["folder", "missing", "fifo", "device", "binary", "empty", "emoji name", "nul bytes"])
@pytest.mark.parametrize("command", ["fill-mask", "neighbours", "embed", "export-elmo", "eval", "probe", "quality",
                                     "nearest-words"])
def test_every_command_with_a_hostile_model_path(world, command, model):
    path = world["files"][model]
    with tempfile.TemporaryDirectory() as tmp:
        argv = {"fill-mask": ["fill-mask", "--model", path, "[MASK]"],
                "neighbours": ["neighbours", "--model", path, "box"],
                "embed": ["embed", "--model", path, "--input", world["gen"], "--out", Path(tmp) / "x.npz"],
                "export-elmo": ["export-elmo", "--model", path, "--out", Path(tmp) / "x"],
                "eval": ["eval", "wsd", "--data", world["wsd"], "--model", path],
                "probe": ["probe", "--model", path, "--task", "pos"],
                "quality": ["quality", "--model", path, "--no-senses"],
                "nearest-words": ["nearest-words", "--model", path, "--word", "box", "a box"]}[command]
        refused(run(argv))


@pytest.mark.parametrize("argv", [
    ["x"], ["missing", "new"], ["folder", "new"], ["--cards", "binary", "folder"], ["--cards", "missing", "folder"],
    ["--cards", "fifo", "folder"], ["static", "one word"], ["static", ""], ["--cards", "", "folder"],
    ["static", "."], ["static", ".."], ["static", "static"], ["static", "root"],
])
def test_ship_with_hostile_paths(world, argv):
    """Shipping replaces its target folder: never the current folder, a folder above it, the run, or a folder
    that holds anything but an earlier shipped model (all of these are scratch copies here)."""
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        shutil.copytree(world["models"]["static"], run_dir)
        names = {**world["files"], "static": run_dir, "new": Path(tmp) / "asset", "root": Path(tmp)}
        refused(run(["ship", *[names.get(a, a) for a in argv]]))
        assert (run_dir / "model.safetensors").is_file()


@pytest.mark.parametrize("model", ["folder", "missing", "fifo", "device", "binary", "emoji name", "nul bytes", "bert",
                                   "static", "elmo"])
def test_average_with_hostile_models(world, model):
    """Averaging refuses what is not a model of the same kind as the first (and the first given twice) without
    writing its output folder."""
    with tempfile.TemporaryDirectory() as tmp:
        path = world["models"].get(model) or world["files"][model]
        refused(run(["average", Path(tmp) / "avg", world["models"]["elmo"], path]))
        assert not (Path(tmp) / "avg").exists()


@pytest.mark.parametrize("out", ["a file", "under a file", "fifo", "a folder of files", ".", "root", "a source",
                                 "new"])
def test_average_into_hostile_out_folders(world, out):
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "copy"
        shutil.copytree(world["models"]["elmo"], copy)
        files = world["files"]
        target = {"a file": files["one word"], "under a file": files["one word"] / "avg", "fifo": files["fifo"],
                  "a folder of files": files["folder"].parent, ".": ".", "root": Path(tmp), "a source": copy,
                  "new": Path(tmp) / "avg 🙂"}[out]
        o = run(["average", target, world["models"]["elmo"], copy])
        if out == "new":
            assert o.rc == 0 and (target / "model.safetensors").is_file(), o
        else:
            refused(o)
            assert (copy / "model.safetensors").is_file() and files["one word"].read_bytes() == b"bank\n"


@pytest.mark.parametrize("command", [*COMMANDS, "train bert", "train elmo", "train static"])
def test_help_of_every_command(command):
    o = run([*command.split(), "--help"], "help")
    assert o.rc == 0 and "usage:" in o.out and o.err == ""


@pytest.mark.parametrize("argv", [[], ["nope"], ["train"], ["train", "gpt"], ["fill-mask"], ["--model"],
                                  ["embed", "--model"], ["train", "static", "--out"], ["🙂"], [""], ["\x00"]])
def test_malformed_command_lines(argv):
    refused(run(argv, "malformed"))


def test_an_accepted_value_arrives_unchanged(world):
    """Sanity for the harness itself: an accepted value really reaches the trainer (the float type of --lr)."""
    with tempfile.TemporaryDirectory() as tmp, stub_trainer() as seen:
        o = run(["train", "static", "--out", Path(tmp) / "r", "--steps", "2", "--no-progress",
                 *world["tiny"]["static"], "--lr=0.25"], "train static")
        assert o.rc == 0 and seen["cfg"].lr == 0.25 and math.isfinite(seen["cfg"].lr)
