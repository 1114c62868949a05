"""One process at a time writes a run folder: ``train``, ``finetune`` and ``average`` hold its lock while they work.

The lock is a file in the folder (``.ctxmodels.lock``; beside it, ``.NAME.lock``, for a folder that is written
whole and swapped in) that the holder keeps open with an exclusive ``fcntl.flock``, and in which it writes its pid,
host and start time. The kernel releases the lock when the holder exits however it exits (a kill included), so a
dead holder's lock is simply taken over; the file is removed when the holder lets go. A second process is refused
with :class:`FolderInUse`: ``runs/x is in use by process 1234 on host-a since 2025-05-01 10:00:00 ...``.
The lock is re-entrant within a process (the command holds it, and so does the trainer it starts).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_NAME = ".ctxmodels.lock"

# folders whose lock this process holds -> (the open lock file, how many holders inside this process)
_HELD: dict[str, list] = {}


class FolderInUse(ValueError):
    """Another process holds the folder's lock; the message says which and since when."""


def lock_path(folder: str | Path, beside: bool = False) -> Path:
    folder = Path(folder)
    if beside:
        folder = folder.resolve()
        return folder.parent / f".{folder.name}.lock"
    return folder / LOCK_NAME


@contextmanager
def hold_folder(folder: str | Path, beside: bool = False) -> Iterator[None]:
    """Hold ``folder``'s lock for the block (the folder is made, and removed again if it stays empty); FolderInUse
    when another live process holds it. ``beside``: the lock file lies beside the folder, for a folder that is
    replaced whole. A folder that cannot be made (a file is in the way) is not locked: the caller's own checks
    say what is wrong with it."""
    folder = Path(folder)
    if int(os.environ.get("RANK", "0") or 0) != 0:  # under torchrun the first process holds it for all
        yield
        return
    if beside and not folder.resolve().name:  # the root folder: nothing to put a lock beside (callers refuse it)
        yield
        return
    made = not folder.exists()
    try:
        (folder.parent if beside else folder).mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError, PermissionError):
        yield
        return
    path = lock_path(folder, beside)
    key = str(path.resolve())
    if key in _HELD:  # this process holds it already
        _HELD[key][1] += 1
        try:
            yield
        finally:
            _HELD[key][1] -= 1
        return
    handle = _acquire(path, folder)
    _HELD[key] = [handle, 1]
    try:
        yield
    finally:
        del _HELD[key]
        _release(path, handle)
        if made and not beside:
            _remove_if_empty(folder)


def _acquire(path: Path, folder: Path):
    """The open lock file, locked by this process, with this process's description in it."""
    while True:
        handle = open(path, "a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            text = handle.read()
            handle.close()
            raise FolderInUse(_in_use(folder, text)) from None
        except BaseException:
            handle.close()
            raise
        # The previous holder may have removed the file between our open and our lock: ours would then be a file
        # nobody else sees. Lock the one at the path.
        try:
            same = os.fstat(handle.fileno()).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        handle.close()
    handle.seek(0)
    handle.truncate()
    handle.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}) + "\n")
    handle.flush()
    return handle


def _release(path: Path, handle) -> None:
    try:
        path.unlink(missing_ok=True)  # before unlocking: a waiting process then locks a new file, not this one
    except OSError:
        pass  # a folder gone read-only: the file stays, unlocked, and the next run takes it over
    handle.close()


def _in_use(folder: Path, text: str) -> str:
    try:
        holder = json.loads(text)
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(holder["since"])))
        who = f"process {int(holder['pid'])} on {holder['host']} since {since}"
    except (ValueError, KeyError, TypeError):
        who = "another process"
    return (f"{folder} is in use by {who}: one run writes a folder at a time. Wait for it to finish (or stop it), "
            "or give another folder")


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass  # not empty: the run wrote something
