"""Fuzzing ``ctxmodels.load``: damaged, hostile and mismatched model folders and files of every kind.

Each case copies one of the tiny models built below (BERT as we save it; BERT in the old Hugging Face layout, an
encoder-only ``pytorch_model.bin`` with a ``vocab.txt`` and a config without ``model_type``; BERT in two shards;
BERT in a Hugging Face cache entry; our ELMo with its LM head; a published ELMo, ``options.json`` +
``weights.hdf5``; our static vectors; word2vec text; gzipped GloVe text), damages it with one to three generated
mutations, and calls ``ctxmodels.load``, then, on what loads, ``embed`` (and fill-in on a BERT with its head).
A case must end in one of two ways:

* a working model: ``embed`` gives float32 vectors of the right shape, finite, NaN only for words the model cannot
  represent and then with a warning, never infinity; fill-in gives finite probabilities (or refuses, in one line,
  a text the model computes NaN for); or
* a :class:`~ctxmodels.checkpoint.CheckpointError` (a ``ModelNotFoundError`` when nothing is there) with a
  one-line message.

Any other exception fails the case, and so does a hang (every case runs under a watchdog: a named pipe or a device
given as a file must never be opened) and an absurd allocation (this module sets the machine's memory to 1 GiB, so a
model may take 512 MB; the test process's peak memory may not grow by 1 GiB, and no message may say that memory ran
out: with models this small, that would mean something tried to allocate far too much).

Mutations: bytes cut, changed, appended or replaced; a file emptied or removed, or replaced by a named pipe, a link
to ``/dev/zero``, a dangling link, a link loop, a folder or a socket; a JSON field set to a hostile value (NaN, ±inf,
0, negative, huge, a string, emoji, a boolean, null, a list, an object, a path out of the folder) or removed, a JSON
file replaced by generated JSON or by deep nesting; a tensor given NaN, infinite or huge values, another shape or
dtype, removed or added; a safetensors header announcing absurd shapes; lines of a word list or vector file inserted
(emoji, U+2028, carriage returns, NUL bytes, digits of other scripts, 1e39), removed, duplicated or upper-cased; a
gzip file cut short or made a decompression bomb; hdf5 datasets replaced by text, other shapes, NaN, or links and
external storage in other files (a named pipe among them); a Hugging Face ref made binary or pointing out of the
cache. Besides the generated cases, every problem found by hand or by earlier runs of this harness is a fixed case
(``test_known_case``).

``CTXMODELS_FUZZ_SCALE=10`` draws ten times as many examples. The number of cases run and how they ended is printed at
the end of the module (``fuzz cases run: N``).
"""

from __future__ import annotations

import contextlib
import copy
import gzip
import json
import os
import re
import resource
import shutil
import socket
import tempfile
import threading
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.torch import load_file, save_file

from ctxmodels import model_files
from ctxmodels.analysis.fill_in import fill_mask
from ctxmodels.bert import BertConfig, BertForPreTraining
from ctxmodels.checkpoint import CheckpointError
from ctxmodels.elmo import CharCNNConfig, ElmoConfig, ElmoLanguageModel, LSTMConfig
from ctxmodels.formats.allennlp import config_from_options, export_published, save_elmo
from ctxmodels.formats.huggingface import save_pretrained
from ctxmodels.loading import clear_cache, load
from ctxmodels.static import StaticConfig, StaticVectors
from ctxmodels.tokenization import WordPieceTokenizer
from tests.helpers import show_past_capture

CASES: Counter[str] = Counter()
OUTCOMES: Counter[str] = Counter()
SCALE = float(os.environ.get("CTXMODELS_FUZZ_SCALE", "1"))
WATCHDOG_S = 120.0  # a case that takes this long hangs
MAX_GROWTH = 1 << 30  # how much the process's peak memory may grow while the cases run


def _examples(n: int) -> settings:
    return settings(max_examples=max(1, int(n * SCALE)), deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


SENTENCE = ["The", "bank", "by", "the", "river", "naïve", "🙂", "\x07", "Zyzzyva"]
LETTERS = "abcdefghijklmnopqrstuvwxyz"
VOCAB = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "bank", "by", "river", "money", ".", ","]
         + list(LETTERS) + [f"##{c}" for c in LETTERS])
STATIC_WORDS = ["the", "bank", "by", "river", "money", "naïve"]


# ----------------------------------------------------------------------------------------------------------
# the tiny models every case starts from


def _build(root: Path) -> dict[str, Path]:
    """One folder per kind under ``root``; returns kind -> what to load, inside its folder."""
    torch.manual_seed(0)
    (root / "src").mkdir()
    (root / "src" / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    tok = WordPieceTokenizer.from_vocab(root / "src" / "vocab.txt")
    cfg = BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=32)
    bert = BertForPreTraining(cfg).eval()
    out: dict[str, Path] = {}

    save_pretrained(bert, tok, root / "bert" / "m", card="# a tiny BERT\n")
    out["bert"] = root / "bert" / "m"

    old = root / "bert-old" / "m"  # Google / early Hugging Face: no model_type, encoder weights in a .bin
    old.mkdir(parents=True)
    config = {k: v for k, v in cfg.to_dict().items() if k not in ("model_type", "architectures")}
    (old / "config.json").write_text(json.dumps(config), encoding="utf-8")
    torch.save({k[len("bert."):]: v for k, v in bert.state_dict().items() if k.startswith("bert.")},
               old / "pytorch_model.bin")
    shutil.copy(root / "src" / "vocab.txt", old / "vocab.txt")
    out["bert-old"] = old

    shards = root / "bert-shards" / "m"
    save_pretrained(bert, tok, shards)
    state = load_file(shards / "model.safetensors")
    (shards / "model.safetensors").unlink()
    names = sorted(state)
    parts = {"model-00001-of-00002.safetensors": names[::2], "model-00002-of-00002.safetensors": names[1::2]}
    for fname, keys in parts.items():
        save_file({k: state[k] for k in keys}, shards / fname)
    index = {"metadata": {}, "weight_map": {k: f for f, keys in parts.items() for k in keys}}
    (shards / "model.safetensors.index.json").write_text(json.dumps(index), encoding="utf-8")
    out["bert-shards"] = shards

    entry = root / "hf-cache" / "models--org--tiny"
    rev = "0123456789abcdef0123456789abcdef01234567"
    save_pretrained(bert, tok, entry / "snapshots" / rev)
    (entry / "refs").mkdir()
    (entry / "refs" / "main").write_text(rev, encoding="ascii")
    out["hf-cache"] = entry

    elmo_cfg = ElmoConfig(CharCNNConfig(4, [[1, 4], [2, 8]], n_highway=1), LSTMConfig(dim=12, projection_dim=6),
                          n_tokens_vocab=8)
    elmo = ElmoLanguageModel(elmo_cfg).eval()
    save_elmo(elmo, root / "elmo" / "m", vocab=["<S>", "</S>", "<UNK>", "the", "bank", "river", "by", "a\u2028b"])
    out["elmo"] = root / "elmo" / "m"
    export_published(elmo, root / "elmo-published" / "m")
    out["elmo-published"] = root / "elmo-published" / "m"

    rng = np.random.default_rng(0)
    table = rng.normal(size=(len(STATIC_WORDS), 5)).astype(np.float32)
    StaticVectors.from_vectors(STATIC_WORDS, table, lowercase=True).save(root / "static" / "m")
    out["static"] = root / "static" / "m"
    lines = [f"{w} " + " ".join(f"{x:.5f}" for x in row) for w, row in zip(STATIC_WORDS, table)]
    (root / "text").mkdir()
    (root / "text" / "vectors.txt").write_text(f"{len(lines)} 5\n" + "\n".join(lines) + "\n", encoding="utf-8")
    out["text"] = root / "text" / "vectors.txt"
    (root / "text-gz").mkdir()
    (root / "text-gz" / "glove.txt.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    out["text-gz"] = root / "text-gz" / "glove.txt.gz"
    return out


@pytest.fixture(scope="module")
def bases(tmp_path_factory) -> dict[str, Path]:
    return _build(tmp_path_factory.mktemp("bases"))


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cases")


@pytest.fixture(scope="module", autouse=True)
def _small_machine():
    """This machine's memory is 1 GiB for these tests: a model may take 512 MB, anything larger is refused."""
    patch = pytest.MonkeyPatch()
    patch.setattr(model_files, "memory_bytes", lambda: 1 << 30)
    yield
    patch.undo()


@pytest.fixture(scope="module", autouse=True)
def _report_cases(request):
    # The baseline is taken when this module's first test starts, not at import: pytest imports every test module
    # before running any, and what the earlier modules ran must not count against these cases.
    _START_RSS["peak"] = _peak_rss()
    yield
    shown = ", ".join(f"{k} {v}" for k, v in sorted(CASES.items()))
    line = (f"fuzz cases run: {sum(CASES.values())} ({shown}); {OUTCOMES['loaded']} loaded and worked, "
            f"{OUTCOMES['refused']} refused in one line")
    show_past_capture(request.config, line)


_START_RSS: dict[str, int] = {}


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@contextlib.contextmanager
def copy_of(bases: dict[str, Path], kind: str, scratch: Path):
    """(what to load, its folder) in a fresh copy of the ``kind`` model; removed afterwards."""
    base = bases[kind]
    folder = base.parent if base.is_file() else base
    work = Path(tempfile.mkdtemp(dir=scratch))
    try:
        copy = work / folder.name
        shutil.copytree(folder, copy, symlinks=True)
        yield copy / base.name if base.is_file() else copy, copy
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ----------------------------------------------------------------------------------------------------------
# one case: load, then use what loaded


def attempt(path: str | Path, kind: str) -> tuple[str, str]:
    """Load ``path`` under the watchdog and check the contract: ("loaded", "") or ("refused", the message)."""
    CASES[kind] += 1
    result: dict = {}

    def run() -> None:
        try:
            result["outcome"] = _attempt(path)
        except BaseException as e:  # noqa: BLE001  handed to the test's thread
            result["error"] = e

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(WATCHDOG_S)
    if worker.is_alive():
        pytest.fail(f"loading {path!r} hangs (more than {WATCHDOG_S:.0f} s)")
    if "error" in result:
        raise result["error"]
    growth = _peak_rss() - _START_RSS.get("peak", _peak_rss())
    assert growth < MAX_GROWTH, f"the process's peak memory grew by {growth >> 20} MB"
    OUTCOMES[result["outcome"][0]] += 1
    return result["outcome"]


def _attempt(path: str | Path) -> tuple[str, str]:
    clear_cache()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # loading may warn (ignored weights, repeated words): that is fine
            model = load(path)
    except CheckpointError as e:
        check_message(str(e))
        return "refused", str(e)
    check_working(model)
    return "loaded", ""


def check_message(message: str) -> None:
    assert message.strip(), "an empty error message"
    assert "\n" not in message and "\r" not in message, f"a message of several lines: {message!r}"
    assert len(message) <= 2000, f"a message of {len(message)} characters"
    assert "memory to load" not in message, f"something tried to allocate far too much: {message}"


def check_working(model) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        vectors, empty = model.embed([SENTENCE, []])
    assert vectors.dtype == np.float32 and vectors.shape == (model.n_layers, len(SENTENCE), model.dim)
    assert empty.shape == (model.n_layers, 0, model.dim)
    assert not np.isinf(vectors).any(), "embed gave infinity"
    nan_words = np.isnan(vectors).any(axis=(0, 2))
    assert np.isfinite(vectors[:, ~nan_words]).all(), "a word with NaN in some layers only"
    if nan_words.any():
        said = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
        assert said, f"NaN vectors for {[w for w, n in zip(SENTENCE, nan_words) if n]} without a warning"
    if model.can_fill_mask:
        try:
            guesses = fill_mask(model.model, model.tokenizer, "the [MASK] by the river .", top_k=3)[0]
        except ValueError as e:  # a text the model computes NaN for: refused, in one line
            check_message(str(e))
            assert "NaN" in str(e)
        else:
            probs = [g["prob"] for g in guesses]
            assert all(np.isfinite(p) and 0 <= p <= 1 for p in probs) and sum(probs) <= 1 + 1e-5


# ----------------------------------------------------------------------------------------------------------
# mutations: each takes the file and Hypothesis' data, and damages the file

HOSTILE_STRINGS = ["", " ", "12", "nan", "bert", "elmo", "static", "gelu", "🙂", "a\u2028b", "\x00", "\x1b[31m",
                   "../model.safetensors", "/dev/zero", "/etc/passwd", ".", "..", "sub/x", "x" * 5000, "²"]
HOSTILE = st.one_of(
    st.sampled_from([0, -1, 1, 2, 3, 7, 261, 262, 2**31, 2**63, 10**12, 10**400, -(10**9), float("nan"),
                     float("inf"), float("-inf"), 1e308, 1e-320, 0.5, -0.5, True, False, None, [], [1, 2], [[1, 4]],
                     [[0, 0]], {}, {"a": 1}]),
    st.sampled_from(HOSTILE_STRINGS),
    st.integers(-(10**6), 10**6),
    st.floats(),
    st.text(max_size=12),
)
JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                       max_size=4),
                           max_leaves=12)
SPECIAL_VALUES = [float("nan"), float("inf"), float("-inf"), 1e30, 3e38, 1e16, -1e20, 1e14]
LINES = st.one_of(
    st.sampled_from(["🙂", "a\u2028b", "x\r", "\x00", "²", "٣", "Bank", "BANK 1 2 3 4 5", "", " ", "\t", "a" * 10000,
                     "nan nan", "bank 1e39 0 0 0 0", "bank nan 0 0 0 0", "money 1 2", "2 5", "99999999999 5",
                     "river 0x1p3 0 0 0 0", "by 1_0 0 0 0 0", "the", "the\t1", "the\t-5", "the\tx",
                     "w " + " ".join(["1"] * 50), "\ufeffthe 1 2 3 4 5"]),
    st.text(max_size=30),
)


def _special(f: Path, data) -> None:
    what = data.draw(st.sampled_from(["fifo", "dev/zero", "dev/null", "dangling", "loop", "folder", "socket"]))
    f.unlink()
    if what == "fifo":
        os.mkfifo(f)
    elif what.startswith("dev/"):
        f.symlink_to("/" + what)
    elif what == "dangling":
        f.symlink_to(f.parent / "nothing-here")
    elif what == "loop":
        f.symlink_to(f)
    elif what == "folder":
        f.mkdir()
        (f / "inside").write_bytes(b"x")
    else:
        _socket(f)


def _socket(f: Path) -> None:
    """A socket file at ``f`` (a named pipe where the path is too long for a socket)."""
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(str(f))
    except OSError:  # AF_UNIX path too long
        os.mkfifo(f)


def _truncate(f: Path, data) -> None:
    b = f.read_bytes()
    f.write_bytes(b[: data.draw(st.integers(0, max(len(b) - 1, 0)))])


def _flip(f: Path, data) -> None:
    b = bytearray(f.read_bytes())
    if not b:
        return
    for _ in range(data.draw(st.integers(1, 8))):
        b[data.draw(st.integers(0, len(b) - 1))] = data.draw(st.integers(0, 255))
    f.write_bytes(bytes(b))


def _append(f: Path, data) -> None:
    with open(f, "ab") as out:
        out.write(data.draw(st.binary(max_size=64) | st.sampled_from([b"\n", b"\nextra line\n", b"\x00" * 100])))


def _replace(f: Path, data) -> None:
    f.write_bytes(data.draw(st.binary(max_size=256)))


def _empty(f: Path, data) -> None:
    f.write_bytes(b"")


def _remove(f: Path, data) -> None:
    f.unlink()


def _json_paths(obj, prefix=()) -> list[tuple]:
    """Every key path into nested dicts and lists."""
    found = []
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else []
    for k, v in items:
        found.append((*prefix, k))
        if len(found) < 2000 and len(prefix) < 50:
            found += _json_paths(v, (*prefix, k))
    return found


def _load_json(f: Path):
    try:
        return json.loads(f.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def _json_set(f: Path, data) -> None:
    obj = _load_json(f)
    paths = _json_paths(obj) if obj is not None else []
    if not paths:
        return _replace(f, data)
    path = data.draw(st.sampled_from(paths[:500]))
    node = obj
    for k in path[:-1]:
        node = node[k]
    if data.draw(st.booleans()) or not isinstance(node, dict):
        node[path[-1]] = copy.deepcopy(data.draw(HOSTILE))
    else:
        del node[path[-1]]
    f.write_text(json.dumps(obj), encoding="utf-8")


def _json_replace(f: Path, data) -> None:
    if data.draw(st.booleans()):
        f.write_text(json.dumps(data.draw(JSON_VALUES)), encoding="utf-8")
    else:
        depth = data.draw(st.sampled_from([100, 5000, 100_000]))
        f.write_text("[" * depth + "]" * depth if data.draw(st.booleans()) else '{"a":' * depth + "1" + "}" * depth)


def _tensors(f: Path):
    try:
        return load_file(f)
    except Exception:  # already damaged by an earlier mutation
        return None


def _tensor_values(f: Path, data) -> None:
    state = _tensors(f)
    floats = sorted(k for k, v in (state or {}).items() if v.is_floating_point() and v.numel())
    if not floats:
        return _flip(f, data)
    name = data.draw(st.sampled_from(floats))
    t = state[name].clone().float().flatten()
    for _ in range(data.draw(st.integers(1, 4))):
        t[data.draw(st.integers(0, t.numel() - 1))] = data.draw(st.sampled_from(SPECIAL_VALUES))
    state[name] = t.reshape(state[name].shape)
    save_file(state, f)


def _tensor_shape(f: Path, data) -> None:
    state = _tensors(f)
    if not state:
        return _truncate(f, data)
    name = data.draw(st.sampled_from(sorted(state)))
    shape = list(state[name].shape)
    how = data.draw(st.sampled_from(["grow", "shrink", "zero", "drop dim", "add dim"]))
    if how == "drop dim" and shape:
        shape = shape[1:]
    elif how == "add dim":
        shape = [1, *shape]
    elif shape:
        i = data.draw(st.integers(0, len(shape) - 1))
        shape[i] = {"grow": shape[i] + 1, "shrink": max(shape[i] - 1, 0), "zero": 0}.get(how, shape[i])
    state[name] = torch.zeros(shape, dtype=state[name].dtype)
    save_file(state, f)


def _tensor_dtype(f: Path, data) -> None:
    state = _tensors(f)
    if not state:
        return _flip(f, data)
    name = data.draw(st.sampled_from(sorted(state)))
    dtype = data.draw(st.sampled_from([torch.float16, torch.bfloat16, torch.float64, torch.int8, torch.int64,
                                       torch.bool, torch.uint8]))
    t = state[name] * 1e5 if data.draw(st.booleans()) and state[name].is_floating_point() else state[name]
    state[name] = t.to(dtype)  # float16 of 1e5: infinity
    save_file(state, f)


def _tensor_drop_or_add(f: Path, data) -> None:
    state = _tensors(f)
    if not state:
        return _replace(f, data)
    name = data.draw(st.sampled_from(sorted(state)))
    if data.draw(st.booleans()) and len(state) > 1:
        del state[name]
    else:
        state[name + data.draw(st.sampled_from([".extra", "_x", ""])) or "x"] = torch.ones(3)
        state["cls.predictions.decoder.weight"] = torch.ones(2, 2)
    save_file(state, f)


def _absurd_header(f: Path, data) -> None:
    """A safetensors header announcing a tensor of terabytes, its data nowhere."""
    big = data.draw(st.sampled_from([[2**40, 2**40], [10**6, 10**6], [2**63 - 1], [-1, 4], [3.5], ["x"]]))
    name = "bert.embeddings.word_embeddings.weight"
    state = _tensors(f)
    if state:
        name = data.draw(st.sampled_from(sorted(state)))
    header = json.dumps({name: {"dtype": "F32", "shape": big, "data_offsets": [0, 16]}}).encode()
    f.write_bytes(len(header).to_bytes(8, "little") + header + b"\x00" * 16)


def _lines(f: Path, data) -> None:
    raw = f.read_bytes()
    compressed = raw[:2] == b"\x1f\x8b"
    try:
        text = (gzip.decompress(raw) if compressed else raw).decode("utf-8")
    except Exception:  # noqa: BLE001  damaged by an earlier mutation (zlib.error, EOFError, not UTF-8)
        return _flip(f, data)
    lines = text.split("\n")
    how = data.draw(st.sampled_from(["insert", "insert", "delete", "duplicate", "upper", "swap", "cut", "value"]))
    i = data.draw(st.integers(0, max(len(lines) - 1, 0)))
    if how == "insert":
        lines.insert(i, data.draw(LINES))
    elif how == "delete" and lines:
        del lines[i]
    elif how == "duplicate" and lines:
        lines.insert(i, lines[i])
    elif how == "upper" and lines:
        lines[i] = lines[i].upper()
    elif how == "swap" and len(lines) > 1:
        lines[0], lines[i] = lines[i], lines[0]
    elif how == "cut":
        lines = lines[:i]
    elif how == "value" and lines and " " in lines[i]:
        parts = lines[i].split(" ")
        parts[data.draw(st.integers(1, len(parts) - 1))] = data.draw(
            st.sampled_from(["nan", "inf", "-inf", "1e39", "1e16", "-0", "1e-45", "²", "1,5", "0x10", "", "🙂"]))
        lines[i] = " ".join(parts)
    out = "\n".join(lines).encode("utf-8", "surrogatepass")
    f.write_bytes(gzip.compress(out) if compressed else out)


def _gzip(f: Path, data) -> None:
    how = data.draw(st.sampled_from(["bomb line", "bomb lines", "not gzip", "double", "cut"]))
    if how == "bomb line":  # one line of 8 MB: refused at the line limit without reading on
        f.write_bytes(gzip.compress(b"a" * (8 << 20)))
    elif how == "bomb lines":  # many short lines: bounded by the memory limit
        f.write_bytes(gzip.compress(b"w 1 2 3 4 5\n" * 20_000))
    elif how == "not gzip":
        f.write_bytes(b"\x1f\x8b" + data.draw(st.binary(max_size=64)))
    elif how == "double":
        f.write_bytes(gzip.compress(f.read_bytes()))
    else:
        b = f.read_bytes()
        f.write_bytes(b[: data.draw(st.integers(0, max(len(b) - 1, 0)))])


def _h5(f: Path, data) -> None:
    try:
        _h5_change_one(f, data)
    except Exception:  # noqa: BLE001  a file an earlier mutation damaged: damage its bytes instead
        _flip(f, data)


def _h5_change_one(f: Path, data) -> None:
    with h5py.File(f, "r+") as h5:
        names = _h5_names(h5)  # reached by hard links only: never open what an earlier mutation linked to
        if not names:
            return None
        name = data.draw(st.sampled_from(names))
        node = h5[name]
        if isinstance(node, h5py.Dataset) and (node.external or node.is_virtual):
            del h5[name]  # its data lives elsewhere (perhaps a pipe): never read or write it here
            return None
        how = data.draw(st.sampled_from(["text", "shape", "nan", "delete", "external link", "soft link",
                                         "external storage", "int"]))
        shape = node.shape if isinstance(node, h5py.Dataset) else (3,)
        if how == "external storage":  # the data in a named pipe beside the file
            pipe = f.parent / "data.pipe"
            if not pipe.exists():
                os.mkfifo(pipe)
            del h5[name]
            h5.create_dataset(name, shape=shape or (3,), dtype="f4", external=[(str(pipe), 0, h5py.h5f.UNLIMITED)])
            return None
        if how in ("nan", "int") and isinstance(node, h5py.Dataset) and node.size:
            values = np.array(node[...], dtype=np.float32)
            values.flat[data.draw(st.integers(0, values.size - 1))] = data.draw(st.sampled_from(SPECIAL_VALUES))
            node[...] = values.astype(node.dtype) if how == "nan" else values
            return None
        del h5[name]
        if how == "text":
            h5[name] = np.array([b"not a number"] * 3)
        elif how == "shape":
            h5[name] = np.zeros(tuple(s + 1 for s in shape) or (1,), dtype=np.float32)
        elif how == "external link":
            target = data.draw(st.sampled_from(["/dev/zero", str(f), str(f.parent / "missing.h5"), "fifo"]))
            if target == "fifo":
                target = str(f.parent / "link.pipe")
                if not Path(target).exists():
                    os.mkfifo(target)
            h5[name] = h5py.ExternalLink(target, "/")
        elif how == "soft link":
            h5[name] = h5py.SoftLink("/" + name)
    return None


def _h5_names(group, prefix: str = "") -> list[str]:
    names = []
    for key in sorted(group.keys()):
        if not isinstance(group.get(key, getlink=True), h5py.HardLink):
            continue
        names.append(prefix + key)
        child = group[key]
        if isinstance(child, h5py.Group):
            names += _h5_names(child, prefix + key + "/")
    return names


def _ref(f: Path, data) -> None:
    f.write_bytes(data.draw(st.sampled_from([b"\xff\xfe\x00", b"../../..", b"..", b".", b"/etc", b"snapshots",
                                             b"0" * 40, b"main\nother", b"x" * 5000]) | st.binary(max_size=50)))


GENERIC: list[Callable] = [_truncate, _flip, _append, _replace, _empty, _remove, _special]


def _ops_for(f: Path) -> list[Callable]:
    name = f.name.lower()
    if name.endswith(".json"):
        return [_json_set, _json_set, _json_set, _json_replace, *GENERIC]
    if name.endswith(".safetensors"):
        return [_tensor_values, _tensor_values, _tensor_shape, _tensor_dtype, _tensor_drop_or_add, _absurd_header,
                *GENERIC]
    if name.endswith(".gz"):
        return [_lines, _lines, _gzip, *GENERIC]
    if name.endswith((".txt", ".vec")):
        return [_lines, _lines, _lines, *GENERIC]
    if name.endswith(".hdf5"):
        return [_h5, _h5, _h5, *GENERIC]
    if f.parent.name == "refs":
        return [_ref, *GENERIC]
    return GENERIC


def mutate(folder: Path, data) -> None:
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
    if not files:
        return
    f = data.draw(st.sampled_from(files), label="file")
    op = data.draw(st.sampled_from(_ops_for(f)), label="mutation")
    op(f, data)


# ----------------------------------------------------------------------------------------------------------
# the generated cases


def test_every_base_model_loads_and_works(bases):
    for kind, path in sorted(bases.items()):
        assert attempt(path, kind) == ("loaded", ""), kind


def _damaged_case(bases: dict[str, Path], scratch: Path, data) -> None:
    kind = data.draw(st.sampled_from(sorted(bases)), label="kind")
    with copy_of(bases, kind, scratch) as (path, folder):
        for _ in range(data.draw(st.integers(1, 3), label="mutations")):
            mutate(folder, data)
        attempt(path, kind)


@_examples(220)
@given(data=st.data())
def test_a_damaged_model_loads_and_works_or_is_refused(bases, scratch, data):
    _damaged_case(bases, scratch, data)


@pytest.mark.slow
@_examples(600)
@given(data=st.data())
def test_a_damaged_model_loads_and_works_or_is_refused_longer(bases, scratch, data):
    _damaged_case(bases, scratch, data)


NUMBERS = st.one_of(st.floats(-1e3, 1e3, allow_nan=False).map(lambda x: f"{x:.4g}"),
                    st.sampled_from(["nan", "-inf", "1e39", "1e16", "-0", "1e-45", "²", "١", "0x10", "1_0", "", "e",
                                     "1.5.2", "Infinity", "3e38", "+4"]))
WORDS = st.one_of(st.sampled_from(["bank", "river", "Bank", "the", "🙂", "a\u2028b", "x\r", "\x00", "²", "12",
                                   "two words"]), st.text(min_size=1, max_size=8))


@st.composite
def vector_files(draw) -> bytes:
    dim = draw(st.integers(1, 6))
    lines = []
    for _ in range(draw(st.integers(0, 8))):
        n = dim if draw(st.integers(0, 9)) else draw(st.integers(0, dim + 2))
        numbers = [draw(NUMBERS) if draw(st.integers(0, 6)) == 0 else f"{draw(st.floats(-2, 2)):.3f}"
                   for _ in range(n)]
        lines.append(" ".join([draw(WORDS), *numbers]))
    header = draw(st.sampled_from(["", f"{len(lines)} {dim}\n", f"{len(lines) + 1} {dim}\n", "0 0\n",
                                   f"{10**12} {dim}\n", "² ³\n", f"{len(lines)} {10**7}\n"]))
    text = header + "\n".join(lines) + draw(st.sampled_from(["\n", "", "\r\n"]))
    return text.encode("utf-8", "surrogatepass")


@_examples(120)
@given(content=vector_files(), name=st.sampled_from(["v.txt", "v.vec", "v.txt.gz", "v.gz"]),
       compress=st.sampled_from([None, "gzip", "cut gzip"]))
def test_a_generated_vector_file_loads_and_works_or_is_refused(scratch, content, name, compress):
    if compress:
        content = gzip.compress(content)
        if compress == "cut gzip":
            content = content[: len(content) // 2]
    folder = Path(tempfile.mkdtemp(dir=scratch))
    try:
        (folder / name).write_bytes(content)
        attempt(folder / name, "vector file")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# configs alone: refused with a ValueError naming the field, or a model whose size the config predicts exactly

BERT_FIELDS = ["vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
               "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings",
               "type_vocab_size", "initializer_range", "layer_norm_eps", "pad_token_id", "model_type"]
SMALL_BERT = {"vocab_size": 40, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
              "intermediate_size": 16, "max_position_embeddings": 16}


@_examples(200)
@given(changes=st.dictionaries(st.sampled_from(BERT_FIELDS), HOSTILE | st.integers(1, 64), max_size=4),
       removed=st.sets(st.sampled_from(BERT_FIELDS), max_size=2))
def test_a_generated_bert_config_is_refused_or_sized_exactly(changes, removed):
    CASES["bert config"] += 1
    d = {k: v for k, v in {**SMALL_BERT, **changes}.items() if k not in removed}
    try:
        config = BertConfig.from_dict(d)
    except ValueError as e:
        check_message(str(e))
        OUTCOMES["refused"] += 1
        return
    with torch.device("meta"):
        model = BertForPreTraining(config)
    assert config.num_parameters() == model.num_parameters()
    OUTCOMES["loaded"] += 1


@_examples(150)
@given(data=st.data())
def test_a_generated_elmo_config_is_refused_or_sized_exactly(data):
    CASES["elmo config"] += 1
    options = {"char_cnn": {"embedding": {"dim": 4}, "filters": [[1, 4], [2, 8]], "n_highway": 1,
                            "activation": "relu", "n_characters": 262, "max_characters_per_token": 50},
               "lstm": {"dim": 12, "projection_dim": 6, "n_layers": 2, "cell_clip": 3, "proj_clip": 3,
                        "use_skip_connections": True},
               "n_tokens_vocab": 8, "dropout": 0.1}
    for _ in range(data.draw(st.integers(1, 3))):
        paths = _json_paths(options)
        path = data.draw(st.sampled_from(paths))
        node = options
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = copy.deepcopy(data.draw(HOSTILE | st.integers(0, 64)))  # never a shared object
    try:
        config = config_from_options(options)
    except ValueError as e:
        check_message(str(e))
        OUTCOMES["refused"] += 1
        return
    with torch.device("meta"):
        model = ElmoLanguageModel(config)
    assert config.num_parameters() == sum(p.numel() for p in model.parameters())
    OUTCOMES["loaded"] += 1


@_examples(100)
@given(changes=st.dictionaries(st.sampled_from(["vocab_size", "dim", "window", "negatives", "min_count", "subsample",
                                                "lowercase", "model_type"]), HOSTILE, max_size=3))
def test_a_generated_static_config_is_refused_or_kept(changes):
    CASES["static config"] += 1
    try:
        config = StaticConfig.from_dict({"vocab_size": 6, "dim": 5, **changes}, source="config.json")
    except CheckpointError as e:
        check_message(str(e))
        assert str(e).startswith("config.json: ")
        OUTCOMES["refused"] += 1
        return
    assert config.vocab_size * config.dim <= (1 << 30) // 2 // 4
    OUTCOMES["loaded"] += 1


# ----------------------------------------------------------------------------------------------------------
# fixed cases: what was found by hand and by earlier runs of this harness


def _config(key: str, value, nested: str | None = None, **more):
    def change(path: Path, folder: Path) -> None:
        f = folder / "config.json"
        d = json.loads(f.read_text())
        (d[nested] if nested else d)[key] = value
        d.update(more)
        f.write_text(json.dumps(d))

    return change


def _weight(name: str, value: float, index: int = 0, file: str = "model.safetensors"):
    return _weights({name: value}, index, file)


def _weights(values: dict[str, float], index: int = 0, file: str = "model.safetensors"):
    def change(path: Path, folder: Path) -> None:
        state = load_file(folder / file)
        for name, value in values.items():
            state[name].view(-1)[index] = value
        save_file(state, folder / file)

    return change


def _write(name: str, content: bytes | str):
    def change(path: Path, folder: Path) -> None:
        f = folder / name
        f.unlink(missing_ok=True)
        f.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))

    return change


def _make_special(name: str, what: str):
    def change(path: Path, folder: Path) -> None:
        f = folder / name
        f.unlink(missing_ok=True)
        if what == "fifo":
            os.mkfifo(f)
        elif what == "socket":
            _socket(f)
        else:
            f.symlink_to(what)

    return change


def _h5_change(fn):
    def change(path: Path, folder: Path) -> None:
        with h5py.File(folder / "weights.hdf5", "r+") as h5:
            fn(h5, folder)

    return change


def _external_link_to_pipe(h5, folder: Path) -> None:
    os.mkfifo(folder / "other.pipe")
    del h5["RNN_1"]
    h5["RNN_1"] = h5py.ExternalLink(str(folder / "other.pipe"), "/")


def _external_storage_in_pipe(h5, folder: Path) -> None:
    os.mkfifo(folder / "data.pipe")
    shape = h5["char_embed"].shape
    del h5["char_embed"]
    h5.create_dataset("char_embed", shape=shape, dtype="f4", external=[(str(folder / "data.pipe"), 0,
                                                                         h5py.h5f.UNLIMITED)])


def _text_dataset(h5, folder: Path) -> None:
    del h5["CNN/b_cnn_0"]
    h5["CNN/b_cnn_0"] = np.array([b"a", b"b", b"c", b"d"])


def _shard_entry(value):
    def change(path: Path, folder: Path) -> None:
        f = folder / "model.safetensors.index.json"
        d = json.loads(f.read_text())
        d["weight_map"][sorted(d["weight_map"])[0]] = value
        f.write_text(json.dumps(d))

    return change


def _drop_token(f: Path, token: str) -> None:
    spec = json.loads(f.read_text(encoding="utf-8"))
    del spec["model"]["vocab"][token]
    f.write_text(json.dumps(spec), encoding="utf-8")


def _append_zeros(f: Path, n: int) -> None:
    with open(f, "ab") as out:
        out.write(b"\x00" * n)


def _static_vocab_upper(path: Path, folder: Path) -> None:
    (folder / "vocab.txt").write_text("".join(w.capitalize() + "\n" for w in STATIC_WORDS), encoding="utf-8")


KNOWN: list[tuple[str, str, Callable | None, str, str]] = [
    # (id, base kind, change, "refused" or "loaded", what the message says)
    ("bert: 0 attention heads (was ZeroDivisionError)", "bert", _config("num_attention_heads", 0), "refused",
     r"num_attention_heads must be a whole number between 1 and"),
    ("bert: hidden size of a billion (tried to allocate terabytes)", "bert", _config("hidden_size", 10**9),
     "refused", r"hidden_size must be"),
    ("bert: a billion layers (hung building them)", "bert", _config("num_hidden_layers", 10**9), "refused",
     r"num_hidden_layers must be"),
    ("bert: a model of 1.3 GB on a machine of 1 GB", "bert", _config("vocab_size", 5_000_000, hidden_size=64),
     "refused",
     r"parameters.*more than half of this machine's memory"),
    ("bert: vocab_size as a string", "bert", _config("vocab_size", "66"), "refused", r"vocab_size must be.*'66'"),
    ("bert: vocab_size of 400 digits (OverflowError in the range check)", "bert", _config("vocab_size", 10**400),
     "refused", r"vocab_size must be.*\(401 characters\)"),
    ("bert: layer_norm_eps NaN", "bert", _config("layer_norm_eps", float("nan")), "refused", r"layer_norm_eps"),
    ("bert: pad_token_id outside the vocabulary (AssertionError in nn.Embedding)", "bert",
     _config("pad_token_id", 999), "refused", r"pad_token_id"),
    ("bert: hidden_act a list (TypeError: unhashable)", "bert", _config("hidden_act", [1]), "refused", "hidden_act"),
    ("bert: config without its sizes (bert-base defaults assumed)", "bert",
     _write("config.json", '{"model_type": "bert"}'), "refused", r"required field"),
    ("bert: a NaN weight (loaded silently, '[CLS] nan' in fill-in)", "bert",
     _weight("bert.encoder.layer.0.output.dense.weight", float("nan")), "refused",
     r"model.safetensors: weight 'bert.encoder.layer.0.output.dense.weight' holds 1 NaN"),
    ("bert: an infinite weight", "bert", _weight("cls.predictions.bias", float("inf")), "refused", r"infinite"),
    ("bert: a 1e30 embedding (inf out of embed)", "bert",
     _weight("bert.embeddings.word_embeddings.weight", 1e30, 7 * 16), "refused", r"values as large as 1e\+30"),
    ("bert: finite weights that overflow together", "bert",
     _weights({"bert.encoder.layer.1.attention.output.LayerNorm.weight": 0.0,  # 1e14 in, 1e42 out
               "bert.encoder.layer.1.attention.output.LayerNorm.bias": 1e14,
               "bert.encoder.layer.1.intermediate.dense.weight": 1e14,
               "bert.encoder.layer.1.output.dense.weight": 1e14}), "refused",
     r"computes NaN or infinite values .* for a plain six-word sentence"),
    ("bert: tokenizer_config.json null (AttributeError)", "bert", _write("tokenizer_config.json", "null"), "refused",
     r"tokenizer_config.json: expected a JSON object, found null"),
    ("bert: tokenizer.json nested 100000 deep (RecursionError)", "bert",
     _write("tokenizer.json", "[" * 100_000 + "]" * 100_000), "refused", r"tokenizer.json: not a readable"),
    ("bert: a tokenizer id beyond the embeddings", "bert",
     lambda p, f: (f / "tokenizer.json").write_text((f / "tokenizer.json").read_text().replace('"money": 9',
                                                                                               '"money": 900')),
     "refused", r"ids up to 900"),
    ("bert: a tokenizer with a gap in its ids (fill-in asked for a token of id 6)", "bert",
     lambda p, f: _drop_token(f / "tokenizer.json", "bank"), "loaded", ""),
    ("bert: a weights file far larger than the config allows", "bert",
     lambda p, f: _append_zeros(f / "model.safetensors", 70 << 20), "refused", r"far more than"),
    ("bert: the weights a named pipe (would wait forever)", "bert", _make_special("model.safetensors", "fifo"),
     "refused", r"model.safetensors: a named pipe \(FIFO\), not a weights file"),
    ("bert: config.json a named pipe", "bert", _make_special("config.json", "fifo"), "refused", r"named pipe"),
    ("bert: the weights /dev/zero (would never end)", "bert", _make_special("model.safetensors", "/dev/zero"),
     "refused", r"a device file"),
    ("bert: the tokenizer a socket", "bert", _make_special("tokenizer.json", "socket"), "refused", r"a socket"),
    ("bert: a README of 3 MB is cut, not read whole", "bert", _write("README.md", "# card\n" + "x" * (3 << 20)),
     "loaded", ""),
    ("bert shards: an int as a shard name (TypeError)", "bert-shards", _shard_entry(3), "refused",
     r"shard 3 is not a file name"),
    ("bert shards: a shard outside the folder", "bert-shards", _shard_entry("../m/model-00001-of-00002.safetensors"),
     "refused", r"is not a file name in"),
    ("bert shards: /dev/zero as a shard", "bert-shards", _shard_entry("/dev/zero"), "refused", r"not a file name"),
    ("hf cache: a binary refs/main (UnicodeDecodeError)", "hf-cache", _write("refs/main", b"\xff\xfe\x00"),
     "refused", r"refs/main: .*not a revision name"),
    ("hf cache: refs/main pointing out of the cache", "hf-cache", _write("refs/main", "../../.."), "refused",
     r"is not a revision name"),
    ("elmo: a billion layers", "elmo", _config("n_layers", 10**9, "lstm"), "refused", r"lstm.n_layers must be"),
    ("elmo: NaN cell clip (NaN outputs)", "elmo", _config("cell_clip", float("nan"), "lstm"), "refused",
     r"lstm.cell_clip must be"),
    ("elmo: dropout 1e400 (OverflowError)", "elmo", _config("dropout", 10**400), "refused", r"dropout"),
    ("elmo: a vocabulary that is not UTF-8 (UnicodeDecodeError)", "elmo", _write("vocab.txt", b"\xff\xfe" * 10),
     "refused", r"vocab.txt: line 1 of the vocabulary is not UTF-8"),
    ("elmo: a vocabulary word holding U+2028 loads (splitlines would break it)", "elmo", None, "loaded", ""),
    ("elmo: a NaN softmax weight", "elmo", _weight("softmax.weight", float("nan")), "refused", r"softmax.weight"),
    ("elmo published: a dataset of text (ValueError)", "elmo-published", _h5_change(_text_dataset), "refused",
     r"CNN/b_cnn_0"),
    ("elmo published: a group linked to a named pipe in another file", "elmo-published",
     _h5_change(_external_link_to_pipe), "refused", r"ExternalLink"),
    ("elmo published: a dataset stored in a named pipe", "elmo-published", _h5_change(_external_storage_in_pipe),
     "refused", r"keeps its data in other files"),
    ("elmo published: a NaN weight", "elmo-published",
     _h5_change(lambda h5, f: h5["char_embed"].__setitem__((0, 0), np.nan)), "refused", r"NaN"),
    ("elmo published: options with 0 filters", "elmo-published",
     lambda p, f: (f / "options.json").write_text(json.dumps({**json.loads((f / "options.json").read_text()),
                                                              "char_cnn": {"embedding": {"dim": 4}, "filters": []}})),
     "refused", r"at least one \[width, count\]"),
    ("static: capitals in a lower-cased model (never found)", "static", _static_vocab_upper, "refused",
     r"hold capitals"),
    ("static: a NaN vector", "static", _weight("input_embeddings.weight", float("nan")), "refused", r"NaN"),
    ("static: a vocab.txt of a million lines for 6 words", "static", _write("vocab.txt", "w\n" * 1_000_000),
     "refused", r"more than 7 lines"),
    ("text: not gzip though named .gz (a text file: loads)", "text-gz",
     _write("glove.txt.gz", "bank 1 2\nriver 0 1\n"), "loaded", ""),
    ("text: binary though named .gz", "text-gz", _write("glove.txt.gz", b"\x00\xff" * 50), "refused",
     r"not UTF-8"),
    ("text: a truncated gzip file (EOFError)", "text-gz", lambda p, f: p.write_bytes(p.read_bytes()[:-12]),
     "refused", r"damaged or truncated gzip"),
    ("text: a header of superscript digits (ValueError)", "text", _write("vectors.txt", "² ³\nbank 1 2 3\n"),
     "refused", r"expected a word followed by numbers"),
    ("text: 1e39 overflows float32", "text", _write("vectors.txt", "bank 1e39 0\n"), "refused", r"beyond ±1e\+15"),
    ("text: a header announcing 10^12 vectors", "text", _write("vectors.txt", f"{10**12} 300\nbank 1 2\n"),
     "refused", r"announces 1,000,000,000,000 vectors"),
    ("text: a gzip bomb of one endless line", "text-gz",
     lambda p, f: p.write_bytes(gzip.compress(b"a" * (64 << 20))), "refused", r"longer than 4 MB"),
    ("text: a gzip bomb of short lines (more than fit in memory)", "text-gz",  # on a machine of 64 MB
     lambda p, f: p.write_bytes(gzip.compress(b"".join(b"w%d 1 2 3 4 5\n" % i for i in range(400_000)))), "refused",
     r"more vectors than fit in half of this machine's memory"),
    ("text: a word holding a carriage return", "text", _write("vectors.txt", "ba\rnk 1 2\nriver 0 1\n"), "refused",
     r"holds a tab or line break"),
]


@pytest.mark.parametrize("name, kind, change, expected, message", KNOWN, ids=[k[0] for k in KNOWN])
def test_known_case(bases, scratch, monkeypatch, name, kind, change, expected, message):
    if "gzip bomb of short lines" in name:  # a smaller machine, so the limit is met in a second
        monkeypatch.setattr(model_files, "memory_bytes", lambda: 64 << 20)
    with copy_of(bases, kind, scratch) as (path, folder):
        if change is not None:
            change(path, folder)
        outcome, said = attempt(path, kind)
    assert outcome == expected, f"{name}: {outcome} {said}"
    assert re.search(message, said), said


@pytest.mark.parametrize("what", ["fifo", "socket", "/dev/zero", "/dev/null", "dangling", "loop", "NUL", "long",
                                  "~nobody-here/x", "newline"])
def test_a_path_that_is_not_a_model_is_refused_in_one_line(scratch, what):
    folder = Path(tempfile.mkdtemp(dir=scratch))
    try:
        path: str | Path = folder / "model"
        if what == "fifo":
            os.mkfifo(path)
        elif what == "socket":
            _socket(Path(path))
        elif what.startswith("/dev/"):
            path = what
        elif what == "dangling":
            Path(path).symlink_to(folder / "nothing")
        elif what == "loop":
            Path(path).symlink_to(path)
        elif what == "NUL":
            path = str(folder / "a\x00b")
        elif what == "long":
            path = str(folder / ("x" * 5000))
        elif what == "newline":
            (folder / "a\nb").mkdir()
            path = folder / "a\nb"
        else:
            path = what
        assert attempt(path, "path")[0] == "refused"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
