"""The ``ctxmodels`` command line: wires up the subcommands of :mod:`ctxmodels.commands`.

A command's module is imported only when that command runs, so ``ctxmodels --help`` stays fast.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import signal
import sys
import threading
import warnings

from .commands import COMMANDS, show_ranges


def _selected(argv: list[str]) -> str:
    """The command named in ``argv``, read before parsing so that ``--help`` shows that command's options."""
    words = [a for a in argv if not a.startswith("-")]
    return words[0] if words else ""


def _interruptible() -> None:
    """Ctrl-C (SIGINT) stops a run cleanly with a checkpoint, also when the process was started with SIGINT ignored
    (a shell starts a background job, `cmd &`, that way, and the app's training jobs inherit it from a server started
    so): the app's Cancel sends SIGINT and must be heard."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    _interruptible()
    parser = argparse.ArgumentParser(
        prog="ctxmodels", description="Train, load and look inside ELMo, BERT and static word vectors."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    parsers = {name: sub.add_parser(name, help=help_, description=help_) for name, (_, help_) in COMMANDS.items()}
    command = _selected(argv)
    module = None
    if command in COMMANDS:
        module = importlib.import_module(f"ctxmodels.commands.{COMMANDS[command][0]}")
        module.add_arguments(parsers[command])
        show_ranges(parsers[command])
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help (0) or a usage error (2), already printed by argparse
        return e.code if isinstance(e.code, int) else 2
    empty = _empty_option(args, parsers[command]) if command in parsers else ""
    if empty:
        print(f"ctxmodels: error: {empty} must not be empty (a path, a name or a value), got ''", file=sys.stderr)
        return 2
    args.argv = argv  # the command as typed, for model cards
    from .checkpoint import CheckpointError, DiskFullError, is_disk_full

    shown = warnings.formatwarning
    warnings.formatwarning = _format_warning
    try:
        return int(module.run(args) or 0)
    except (CheckpointError, ValueError, FileNotFoundError) as e:
        print(f"ctxmodels: error: {_one_line(e)}", file=sys.stderr)
        return 2
    except OSError as e:
        if e.errno not in USER_FACING_ERRNOS:
            raise  # not something the user's files or disk explain: show the traceback
        if is_disk_full(e) and not isinstance(e, DiskFullError):  # a write that did not know its size
            e = DiskFullError(0, e.filename or ".", code=e.errno)
        print(f"ctxmodels: error: {_one_line(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ctxmodels: interrupted", file=sys.stderr)
        return 130
    finally:
        warnings.formatwarning = shown


def _empty_option(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str:
    """The first option (not a positional text or word) given as an empty or all-blank string, as ``--name``: an
    empty --out or --corpus would otherwise mean the current folder, an empty --words "all words"; "" if none."""
    for action in _options(parser):
        value = getattr(args, action.dest, None)
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, str) and not v.strip() for v in values):
            return action.option_strings[-1]
    return ""


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The optional (``--name``) arguments of a parser and of its subcommands' parsers."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += _options(sub)
        elif action.option_strings:
            found.append(action)
    return found


#: OSErrors that the user's paths, permissions or disk explain: reported in one line, not as a traceback
USER_FACING_ERRNOS = frozenset({
    errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT, errno.ENOTDIR,
    errno.EISDIR, errno.EEXIST, errno.ENAMETOOLONG, errno.ELOOP, errno.EFBIG, errno.ENXIO, errno.ENODEV,
})


def _format_warning(message, category, filename, lineno, line=None) -> str:
    """A warning as one line for the person at the terminal: ``ctxmodels: warning: ...``."""
    return f"ctxmodels: warning: {_one_line(str(message))}\n"


def _one_line(error: BaseException | str) -> str:
    """The message on one line: a multi-line message is joined, control characters are shown escaped."""
    from .checkpoint import DiskFullError

    if isinstance(error, OSError) and error.filename and not isinstance(error, DiskFullError):
        text = f"{error.filename}: {error.strerror or error}"
    else:
        text = str(error)
    text = " ".join(part.strip() for part in text.splitlines() if part.strip()) or type(error).__name__
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


if __name__ == "__main__":
    sys.exit(main())
