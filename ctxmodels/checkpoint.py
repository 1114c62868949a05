"""Our checkpoint layout: a directory with ``config.json``, ``model.safetensors`` and friends.

Every write is atomic: written to a hidden temporary beside the target (``.NAME.XXXXXXXX.tmp``), flushed to
disk, then renamed over it (:func:`atomic_file`); a folder is written whole under a temporary name and swapped in
(:func:`replace_dir_atomic`), the old one removed only once the new one is in place. So a crash, a kill or a full
disk at any byte of a save leaves the previous file or checkpoint readable. A failed write removes its own
temporary; a killed process cannot, so a run removes the temporaries it finds when it starts
(:func:`remove_stale_temps`). A full disk (ENOSPC, EDQUOT) is reported as :class:`DiskFullError`, whose message
says how much space the write needed and where: ``disk full: 12.5 MB needed at runs/bert/checkpoint``. A write
never replaces a folder, a device or a pipe (renaming over ``/dev/null`` would replace the device itself).
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import re
import resource
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

# torch and safetensors are imported where tensors are read or written: a command that runs no model (``ctxmodels
# occurrences``) reads and writes files through this module and starts without them.


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded; the message names the file and the problem."""


TMP_SUFFIX = ".tmp"
#: no room for a write: the disk (ENOSPC), the user's quota (EDQUOT) or the file-size limit (EFBIG, ``ulimit -f``)
DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


class DiskFullError(OSError):
    """No room (ENOSPC, EDQUOT, or EFBIG: the file-size limit) for a write; the message names the size needed and
    the place."""

    def __init__(self, needed: int, path: str | Path, note: str = "", code: int = errno.ENOSPC):
        self.needed, self.note = int(needed), note
        super().__init__(code, os.strerror(code), str(path))

    def __str__(self) -> str:
        if self.errno == errno.EFBIG:
            limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
            shown = (f"file too large: the file-size limit (ulimit -f, {megabytes(limit)}) stops a write of "
                     f"{megabytes(self.needed)} at {self.filename}")
        else:
            free = _free_bytes(self.filename)
            shown = f"disk full: {megabytes(self.needed)} needed at {self.filename}"
            if free is not None:
                shown += f" ({megabytes(free)} free)"
        return shown + (f"; {self.note}" if self.note else "")


def is_disk_full(error: BaseException) -> bool:
    return isinstance(error, OSError) and error.errno in DISK_FULL


def megabytes(n: int) -> str:
    """A size as "12.5 MB" (rounded up to the next 0.1 MB, so a small write never reads "0.0 MB")."""
    return f"{math.ceil(max(n, 1) / 1e5) / 10:.1f} MB"


def _free_bytes(path: str | Path | None) -> int | None:
    """Free space on the file system that holds ``path`` (or its nearest existing parent)."""
    if not path:
        return None
    p = Path(path)
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return shutil.disk_usage(p).free
    except OSError:
        return None


def tree_bytes(path: str | Path) -> int:
    """Bytes of a file, or of every file under a folder (0 for what does not exist)."""
    path = Path(path)
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() else 0


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    """Make a rename in ``path`` durable (where the platform can open a folder)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as e:
        if is_disk_full(e) or e.errno == errno.EIO:
            raise  # the rename may not be on disk
        # else: a platform that cannot flush a folder (EINVAL, EBADF): the rename stands as well as it can
    finally:
        os.close(fd)


_UMASK = os.umask(0o022)
os.umask(_UMASK)  # put back at once: reading the umask means setting it


@contextmanager
def atomic_file(path: str | Path, size: int | None = None) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; on leaving the block it is flushed to disk and renamed to
    ``path``. On any error the temporary is removed and ``path`` keeps its old content; a full disk becomes a
    :class:`DiskFullError` for ``size`` bytes (the size being written, when the caller knows it; else what the
    temporary had reached)."""
    path = Path(path)
    _check_writable_target(path)
    tmp: Path | None = None
    try:
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TMP_SUFFIX)
        os.close(fd)
        tmp = Path(name)
        yield tmp
        _fsync_file(tmp)
        os.chmod(tmp, _mode_for(path))
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        if is_disk_full(e) and not isinstance(e, DiskFullError):
            written = tmp.stat().st_size if tmp is not None and tmp.exists() else 0
            raise DiskFullError(size if size is not None else written, path, code=e.errno) from e
        raise
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)


def _mode_for(path: Path) -> int:
    """The permissions the finished file gets: the replaced file's own, else what a plain ``open(path, "w")`` would
    give (0666 less the umask). ``mkstemp`` makes its file 0600, which would hide a shared file from other users."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0o666 & ~_UMASK


def _check_writable_target(path: Path) -> None:
    """Make ``path``'s folder. An OSError whose message says what to do when ``path`` is something a file must not
    replace (a folder, a device, a pipe: renaming over ``/dev/null`` would replace the device itself) or when a
    parent is a file (callers that fall back elsewhere on an OSError keep doing so)."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "a folder; give the name of a file to write", str(path))
    if mode is not None and not stat.S_ISREG(mode):
        raise FileExistsError(errno.EEXIST, "not a regular file (a device, pipe or socket); give the name of a "
                              "file to write", str(path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocking = next((p for p in reversed(path.parents) if p.exists() and not p.is_dir()), path.parent)
        raise NotADirectoryError(errno.ENOTDIR, f"cannot write there, {blocking} is a file, not a folder",
                                 str(path)) from None


def check_writable_file(path: str | Path) -> Path:
    """``path`` once it is sure that a file can be written there (its folder made, a temporary written and removed
    there); an OSError saying why not otherwise. Commands call it before long work whose result goes there."""
    path = Path(path)
    _check_writable_target(path)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TMP_SUFFIX)
    os.close(fd)
    os.unlink(name)
    return path


def check_not_an_input(out: str | Path, files: list[str | Path] = (), folders: list[str | Path] = ()) -> None:
    """ValueError when writing ``out`` would overwrite one of a command's inputs: one of ``files``, or a file in
    one of ``folders``, under whatever path (a symlink, ``..``, a hard link)."""
    out = Path(out)
    if not out.exists():
        return
    for f in files:
        if Path(f).exists() and os.path.samefile(out, f):
            raise ValueError(f"{out} is the input {f}; writing it would overwrite what is being read. Give another "
                             "output file")
    for folder in folders:
        if not Path(folder).is_dir():
            continue
        if os.path.samefile(out.resolve().parent, folder) or any(
                f.is_file() and os.path.samefile(out, f) for f in Path(folder).iterdir()):  # a hard link too
            raise ValueError(f"{out} is a file of the input folder {folder}; writing it would overwrite what is "
                             "being read. Give an output file outside it")


class WorkKeptElsewhere(ValueError):
    """Finished work could not be written where asked; the message says why and where it was kept instead."""


def write_finished(path: str | Path, text: str, what: str = "the result") -> None:
    """Write finished work (a report that took a long time) to ``path``. When that fails (a full disk, the folder
    gone or made read-only meanwhile), the work is kept in a new file of the temporary folder, the home folder or
    the current one (else printed on stdout) and :class:`WorkKeptElsewhere` says why and where: it is never lost."""
    try:
        write_text_atomic(path, text)
        return
    except OSError as e:
        reason = f"{e.strerror or e}" if not isinstance(e, DiskFullError) else str(e)
    kept = _keep_aside(Path(path), text)
    raise WorkKeptElsewhere(f"{path}: cannot write it ({reason}); {what} is saved in {kept} instead")


def _keep_aside(path: Path, text: str) -> str:
    """Where ``text`` went: a new file named after ``path`` in the first folder that takes it, else stdout."""
    for folder in (tempfile.gettempdir(), Path.home(), Path.cwd()):
        name = None
        try:
            fd, name = tempfile.mkstemp(dir=folder, prefix=f"{path.stem or 'ctxmodels'}-", suffix=path.suffix)
            with os.fdopen(fd, "wb") as f:
                write_bytes_to(f, text.encode("utf-8"))
            return name
        except OSError:
            if name is not None:
                Path(name).unlink(missing_ok=True)
    import sys

    sys.stdout.write(text)
    sys.stdout.flush()
    return "standard output (above)"


def write_bytes_to(f, data: bytes) -> None:
    """Write all of ``data`` to ``f`` (an unbuffered file may take part of it per call). Every file this package
    writes by hand goes through here, which is where the tests make a disk fill up."""
    view = memoryview(data)
    while view:
        n = f.write(view)
        view = view[len(view) if n is None else n:]


def write_text_atomic(path: str | Path, text: str) -> None:
    data = text.encode("utf-8")
    with atomic_file(path, size=len(data)) as tmp, open(tmp, "wb") as f:
        write_bytes_to(f, data)


def write_json(path: str | Path, obj: Any) -> None:
    write_text_atomic(path, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def read_json(path: str | Path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: file not found")
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path}: not valid JSON ({e})") from e
    if not isinstance(obj, dict):
        raise CheckpointError(f"{path}: expected a JSON object, found {type(obj).__name__}")
    return obj


def save_file(tensors: dict[str, torch.Tensor], filename: str, metadata: dict[str, str] | None = None) -> None:
    """safetensors' ``save_file`` (the one write of tensors, so a test can make it fail)."""
    from safetensors.torch import save_file as write

    try:
        write(tensors, filename, metadata=metadata)
    except Exception as e:  # safetensors reports an I/O error as its own exception, with the errno in its text
        cause = write_failure(filename, e)
        if cause is None:
            raise
        raise cause from e


def write_failure(path: str | Path, error: BaseException, needed: int = 0) -> OSError | None:
    """The OSError behind a library's failed write of ``path`` when the library does not raise one (safetensors,
    torch's zip writer, SQLite), or None when it is not a lack of room: the errno the message quotes ("os error
    28"); else EFBIG when the file reached the file-size limit (``ulimit -f``), ENOSPC when the disk has less room
    left than the write still needed (``needed`` bytes in all), or under 1 MB."""
    path = Path(path)
    quoted = re.search(r"os error (\d+)", str(error))
    if quoted:
        code = int(quoted.group(1))
        return OSError(code, os.strerror(code), str(path))
    if "disk is full" in str(error):  # SQLite's SQLITE_FULL
        return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit != resource.RLIM_INFINITY and max(size, needed) >= limit - 65536:
        return OSError(errno.EFBIG, os.strerror(errno.EFBIG), str(path))
    free = _free_bytes(path)
    if free is not None and free < max(needed - size, 1 << 20):
        return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    return None


def load_file(filename: str) -> dict[str, torch.Tensor]:
    """safetensors' ``load_file``."""
    from safetensors.torch import load_file as read

    return read(filename)


def save_tensors(path: str | Path, tensors: dict[str, torch.Tensor], metadata: dict[str, str] | None = None):
    """Safetensors save that handles tied (shared-storage) tensors and is atomic."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    seen: dict[int, str] = {}
    out = {}
    for name, t in tensors.items():
        t = t.detach().cpu()
        key = t.untyped_storage().data_ptr() if t.numel() else id(t)
        # safetensors refuses shared storage; tied weights are written as independent copies.
        out[name] = t.clone().contiguous() if key in seen else t.contiguous()
        seen.setdefault(key, name)
    size = sum(t.numel() * t.element_size() for t in out.values()) + 100 * len(out) + 1000  # + the header
    with atomic_file(path, size=size) as tmp:
        save_file(out, str(tmp), metadata=metadata)


def load_tensors(path: str | Path) -> dict[str, torch.Tensor]:
    """Load a safetensors file, or a legacy ``.bin`` with ``weights_only=True`` (never arbitrary pickles).

    Half-precision tensors (the shipped models store fp16 to stay small) come back as float32, the precision
    every model here computes in.
    """
    import torch

    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: file not found")
    try:
        if path.suffix == ".safetensors":
            state = load_file(str(path))
        else:
            state = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as e:  # unpickling errors come in many types; all mean "corrupt or unsafe"
        raise CheckpointError(f"{path}: not a readable weights file ({type(e).__name__}: {e})") from e
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise CheckpointError(f"{path}: expected a dict of tensors")
    half = (torch.float16, torch.bfloat16)
    return {k: v.float() if v.dtype in half else v for k, v in state.items()}



def replace_dir_atomic(tmp_dir: Path, final_dir: Path) -> None:
    """Swap a fully written ``tmp_dir`` in as ``final_dir``.

    The new folder is flushed to disk first; the old one is renamed to ``FINAL.old``, the new one renamed into
    place, and only then is the old one removed. ``final_dir`` is therefore always either the old complete folder
    or the new complete one, except between the two renames, when ``FINAL.old`` holds the old one:
    :func:`recover_dir` puts it back (readers of a checkpoint call it first).
    """
    tmp_dir, final_dir = Path(tmp_dir), Path(final_dir)
    for f in tmp_dir.rglob("*"):
        if f.is_file():
            _fsync_file(f)
    _fsync_dir(tmp_dir)
    recover_dir(final_dir)
    old = _old_dir(final_dir)
    if final_dir.exists():
        os.replace(final_dir, old)
    try:
        os.replace(tmp_dir, final_dir)
        _fsync_dir(final_dir.parent)
    finally:
        recover_dir(final_dir)  # the old one goes, or back in place if the new one did not get there


def _old_dir(final_dir: Path) -> Path:
    return final_dir.with_name(final_dir.name + ".old")


def recover_dir(final_dir: str | Path) -> None:
    """Finish a swap of :func:`replace_dir_atomic` that a kill interrupted: without ``final_dir``, its old copy
    goes back in place; with both, the old copy (complete or half removed) goes."""
    final_dir = Path(final_dir)
    old = _old_dir(final_dir)
    if not old.exists():
        return
    if final_dir.exists():
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(old, final_dir)


def new_tmp_dir(final_dir: str | Path) -> Path:
    """A hidden temporary folder beside ``final_dir`` (``.NAME.XXXXXXXX.tmp``), for :func:`replace_dir_atomic`."""
    final_dir = Path(final_dir)
    final_dir.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(dir=final_dir.parent, prefix=f".{final_dir.name}.", suffix=TMP_SUFFIX))


# temporaries of this module, and those of older versions of the trainers' data caches and checkpoint swap
_TEMP_NAMES = re.compile(r"^\..+\.tmp$|.+\.tmp\.npz$|^\.\w+\.\d+\.npy$")


def is_temp_name(name: str) -> bool:
    """A temporary written by this module (or by older versions of the trainers' data caches)."""
    return bool(_TEMP_NAMES.match(name))


def remove_stale_temps(directory: str | Path, min_age_s: float = 0.0) -> int:
    """Remove the temporaries (files and folders) that killed writers left in ``directory``; returns how many.

    Only for a folder no other process is writing to at the moment, or with ``min_age_s``: then only
    temporaries untouched for that long go (a cache folder that runs share).
    """
    directory = Path(directory)
    if not directory.is_dir():
        return 0
    removed, now = 0, time.time()
    for entry in directory.iterdir():
        if not is_temp_name(entry.name):
            continue
        try:
            if min_age_s and now - entry.lstat().st_mtime < min_age_s:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
            removed += 1
        except OSError:
            pass  # gone already, or not ours to remove: leave it
    return removed


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks (keys the training-data caches to the corpus content)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
