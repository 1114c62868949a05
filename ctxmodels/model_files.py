"""Reading the files of a model a user names, without trusting them.

Every model file is read through here by :func:`ctxmodels.load` and the formats, so that a damaged, hostile or
mismatched file ends in one :class:`~ctxmodels.checkpoint.CheckpointError` naming the file and what to do:

* :func:`path_kind` says what a path is from ``stat`` alone: a named pipe, a device, a socket, a dangling link
  or a link loop is reported, never opened (opening a pipe would wait for a writer forever, a device would
  never end);
* :func:`read_bytes`, :func:`read_text` and :func:`read_json` read a regular file up to a size cap (a
  ``config.json`` of gigabytes, a JSON nesting that would exhaust the stack, bytes that are not UTF-8: one
  clear error each);
* :func:`check_weights` refuses weights holding NaN, infinities or magnitudes no trained model has (beyond
  :data:`MAX_ABS_WEIGHT`), naming the tensor;
* :func:`check_model_bytes` refuses a model whose parameters would take more than half of this machine's memory
  (:func:`memory_bytes`: physical memory, or a container's limit), before anything is allocated;
* :func:`safetensors_shapes` reads the tensor shapes of a safetensors file from its header, so that weights are
  compared with the config before they are read.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
import struct
from collections.abc import Iterable, Sequence
from pathlib import Path

import torch

from .checkpoint import CheckpointError

MiB = 1 << 20
MAX_JSON_BYTES = 16 * MiB  # config.json, options.json, tokenizer_config.json, a shard index
MAX_CARD_BYTES = 1 * MiB  # a model card (README.md)
MAX_VOCAB_BYTES = 256 * MiB  # a word list (ELMo's or static vectors' vocab.txt, WordPiece's vocab.txt)
MAX_TOKENIZER_BYTES = 64 * MiB  # tokenizer.json (bert-base's is 0.5 MB, multilingual ones a few MB)
MAX_SAFETENSORS_HEADER = 100 * MiB  # the limit safetensors itself enforces
#: the largest magnitude a weight may have; trained models stay many orders of magnitude below it, and above it
#: the squares in a LayerNorm or a cosine overflow float32
MAX_ABS_WEIGHT = 1e15
#: share of the machine's memory one model's parameters may take
MEMORY_SHARE = 0.5

_KIND_WORDS = {
    "fifo": "a named pipe (FIFO)",
    "socket": "a socket",
    "device": "a device file",
    "broken link": "a symbolic link to nothing",
    "link loop": "a symbolic link loop",
    "other": "not a regular file or folder",
}


def path_kind(path: str | Path) -> str:
    """What ``path`` is, from ``stat`` alone (nothing is opened): "file", "dir", "missing", "broken link",
    "link loop", "fifo", "socket", "device", "other", or "unreadable: REASON"."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        try:
            os.lstat(path)
        except (OSError, ValueError):
            return "missing"
        return "broken link"
    except ValueError:  # a name holding a NUL byte names nothing
        return "missing"
    except OSError as e:
        if e.errno == errno.ELOOP:
            return "link loop"
        return f"unreadable: {e.strerror or e}"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "other"


def describe_kind(kind: str) -> str:
    """``path_kind``'s answer in words ("a named pipe (FIFO)")."""
    if kind.startswith("unreadable: "):
        return f"unreadable ({kind[len('unreadable: '):]})"
    return _KIND_WORDS.get(kind, kind)


def is_file(path: str | Path) -> bool:
    """A regular file (or a link to one); False for anything else, and never an error."""
    return path_kind(path) == "file"


def is_dir(path: str | Path) -> bool:
    return path_kind(path) == "dir"


def require_file(path: str | Path, what: str = "file") -> Path:
    """``path`` when it is a regular file; CheckpointError saying what it is otherwise."""
    path = Path(path)
    kind = path_kind(path)
    if kind == "file":
        return path
    if kind == "missing":
        raise CheckpointError(f"{path}: file not found (the {what})" if what != "file" else f"{path}: file not found")
    if kind == "dir":
        raise CheckpointError(f"{path}: a folder, where the {what} should be a file")
    raise CheckpointError(f"{path}: {describe_kind(kind)}, not a {what}; give a regular file")


def _size(n: int) -> str:
    return f"{n / MiB:,.1f} MB" if n >= MiB else f"{n:,} bytes"


def read_bytes(path: str | Path, limit: int, what: str = "file", head: bool = False) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; CheckpointError otherwise (with ``head``, the
    first ``limit`` bytes of a longer file instead).

    The file is opened non-blocking and checked again once open, so a file swapped for a pipe in between
    cannot make the read wait.
    """
    path = require_file(path, what)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise CheckpointError(f"{path}: cannot open the {what} ({e.strerror or e})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise CheckpointError(f"{path}: not a regular file, cannot be the {what}")
        if st.st_size > limit and not head:
            raise CheckpointError(f"{path}: {_size(st.st_size)}, more than a {what} may be ({_size(limit)}); "
                                  "is it the right file?")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(limit + 1 - total, 8 * MiB))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit and head:
                return b"".join(chunks)[:limit]
            if total > limit:  # grew while being read
                raise CheckpointError(f"{path}: more than a {what} may be ({_size(limit)})")
        return b"".join(chunks)
    except OSError as e:
        raise CheckpointError(f"{path}: cannot read the {what} ({e.strerror or e})") from None
    finally:
        os.close(fd)


def read_text(path: str | Path, limit: int, what: str = "file") -> str:
    """UTF-8 text of a regular file of at most ``limit`` bytes (a leading byte-order mark dropped)."""
    data = read_bytes(path, limit, what)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise CheckpointError(f"{path}: line {line} of the {what} is not UTF-8 text ({e.reason})") from None
    return text.removeprefix("\ufeff")


def read_json(path: str | Path, what: str = "JSON file", limit: int = MAX_JSON_BYTES) -> dict:
    """A JSON object from a regular UTF-8 file of at most ``limit`` bytes; CheckpointError otherwise."""
    text = read_text(path, limit, what)
    try:
        obj = json.loads(text)
    except RecursionError:
        raise CheckpointError(f"{path}: not valid JSON (nested too deeply)") from None
    except ValueError as e:  # JSONDecodeError, and integers of thousands of digits
        raise CheckpointError(f"{path}: not valid JSON ({_squeeze(str(e))})") from None
    if not isinstance(obj, dict):
        raise CheckpointError(f"{path}: expected a JSON object, found {_json_type(obj)}")
    return obj


def _json_type(obj) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(obj), type(obj).__name__)


def _squeeze(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(text: str) -> str:
    """A message on one line and safe to print: line breaks and other control characters (which a file name or a
    quoted value may hold; an escape sequence would drive the terminal) written as escapes (``\\n``, ``\\x1b``)."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], str(text))


def shown(value, limit: int = 80) -> str:
    """``repr(value)`` for a message, cut to ``limit`` characters (a value quoted from a hostile file may be
    megabytes long)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 20]}... ({len(text):,} characters)"


def check_number(bound, name: str, value):
    """``bound.check(name, value)`` (a :class:`ctxmodels.bounds.Bound`) that also refuses, with the same message,
    an integer too large to compare as a float (JSON holds them: 1 followed by 400 zeros)."""
    try:
        ok = bound.contains(value)
    except (OverflowError, TypeError, ValueError):
        ok = False
    if not ok:
        text = bound.error(name, value)
        shown = repr(value) if isinstance(value, str) else str(value)
        if len(shown) > 80:  # a value quoted from a hostile file: its start and its size
            text = text[: len(text) - len(shown)] + f"{shown[:40]}... ({len(shown):,} characters)"
        raise ValueError(text)
    return value


# ----------------------------------------------------------------------------------------------------------
# weights


def check_weights(named: Iterable[tuple[str, torch.Tensor]], source: str | Path) -> None:
    """CheckpointError naming the first floating-point tensor with NaN, infinities or values beyond
    ±:data:`MAX_ABS_WEIGHT`. One pass over each tensor (its minimum and maximum), no copies."""
    for name, t in named:
        if not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.numel() == 0:
            continue
        t = t.detach()
        lo, hi = (float(v) for v in torch.aminmax(t))
        if math.isfinite(lo) and math.isfinite(hi) and max(-lo, hi) <= MAX_ABS_WEIGHT:
            continue
        n_nan, n_inf = int(torch.isnan(t).sum()), int(torch.isinf(t).sum())
        if n_nan or n_inf:
            parts = [f"{n:,} {what}" for n, what in ((n_nan, "NaN"), (n_inf, "infinite")) if n]
            problem = " and ".join(parts) + f" value(s) among {t.numel():,}"
        else:
            problem = f"values as large as {max(-lo, hi):.3g} (trained weights stay far below {MAX_ABS_WEIGHT:.0e})"
        raise CheckpointError(f"{source}: weight '{name}' holds {problem}; the file is damaged (or saved from a "
                              "diverged run): use an earlier checkpoint or train again")


def memory_bytes() -> int:
    """This machine's memory, or the container's limit when that is lower (cgroup v2 or v1)."""
    total = 0
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        pass
    if total <= 0:
        total = 16 * 2**30  # platforms without sysconf: assume a laptop
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit_file).read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if text.isdigit() and 0 < int(text) < total:
            total = int(text)
    return total


def memory_budget() -> int:
    """Bytes one model's parameters may take: :data:`MEMORY_SHARE` of :func:`memory_bytes`."""
    return int(memory_bytes() * MEMORY_SHARE)


def check_model_bytes(n_parameters: int, what: str = "this model") -> None:
    """ValueError when ``n_parameters`` float32 values would take more than :func:`memory_budget`."""
    need, budget = 4 * int(n_parameters), memory_budget()
    if need > budget:
        raise ValueError(f"{what} would have {n_parameters:,} parameters ({need / 2**30:,.1f} GB as float32), more "
                         f"than half of this machine's memory ({budget / 2**30:,.1f} GB may be used); is the "
                         "config right?")


def check_weights_file_size(files: str | Path | Sequence[str | Path], n_parameters: int,
                            what: str = "config.json", source: str | Path | None = None) -> None:
    """CheckpointError when weights files (together) are far larger than the model its config describes could
    fill (float64 weights and a few unused tensors are allowed for), checked before anything is read."""
    files = [Path(files)] if isinstance(files, (str, Path)) else [Path(f) for f in files]
    source = files[0] if source is None else source
    try:
        size = sum(os.stat(f).st_size for f in files)
    except OSError as e:
        raise CheckpointError(f"{source}: cannot read the weights ({e.strerror or e})") from None
    allowed = 8 * int(n_parameters) + 64 * MiB
    if size > allowed:
        raise CheckpointError(f"{source}: {_size(size)} of weights, far more than the {n_parameters:,} parameters "
                              f"{what} describes can fill (at most {_size(allowed)}); the weights and {what} do "
                              "not belong together")


def safetensors_shapes(path: str | Path) -> dict[str, tuple[int, ...]]:
    """``{name: shape}`` from a safetensors file's header, without reading the tensors; CheckpointError when the
    header is not a safetensors header."""
    path = require_file(path, "weights file")
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise CheckpointError(f"{path}: not a readable weights file (safetensors: too short)")
            (n,) = struct.unpack("<Q", head)
            size = os.fstat(f.fileno()).st_size
            if n < 2 or n > MAX_SAFETENSORS_HEADER or n > size - 8:
                raise CheckpointError(f"{path}: not a readable weights file (safetensors: header length {n:,} in "
                                      f"a file of {size:,} bytes)")
            raw = f.read(n)
    except OSError as e:
        raise CheckpointError(f"{path}: cannot read the weights file ({e.strerror or e})") from None
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise CheckpointError(f"{path}: not a readable weights file (safetensors: its header is not JSON)") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: not a readable weights file (safetensors: the header is not an object)")
    shapes = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        shape = entry.get("shape") if isinstance(entry, dict) else None
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                                  for d in shape):
            raise CheckpointError(f"{path}: not a readable weights file (safetensors: tensor {name[:60]!r} has no "
                                  "valid shape)")
        shapes[name] = tuple(shape)
    return shapes


def shape_problems(expected: dict[str, tuple[int, ...]], found: dict[str, tuple[int, ...]],
                   what: str = "config.json") -> list[str]:
    """What keeps weights of ``found`` shapes from filling a model of ``expected`` shapes: missing and unexpected
    names, then shape mismatches (each list shortened)."""

    def shown(names: list[str]) -> str:
        return ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")

    problems = []
    missing = [k for k in expected if k not in found]
    if missing:
        problems.append(f"missing {len(missing)} weights ({shown(missing)})")
    unexpected = [k for k in found if k not in expected]
    if unexpected:
        problems.append(f"{len(unexpected)} weights this configuration has no place for ({shown(unexpected)})")
    bad = [f"{k} is {tuple(found[k])}, {what} implies {tuple(expected[k])}"
           for k in expected if k in found and tuple(found[k]) != tuple(expected[k])]
    if bad:
        problems.append("shape mismatch: " + "; ".join(bad[:4]) + (" ..." if len(bad) > 4 else ""))
    return problems
