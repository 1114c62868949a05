"""The ``ctxmodels`` command line: wires up the subcommands of :mod:`ctxmodels.commands`.

A command's module is imported only when that command runs, so ``ctxmodels --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .commands import COMMANDS


def _selected(argv: list[str]) -> str:
    """The command named in ``argv``, read before parsing so that ``--help`` shows that command's options."""
    words = [a for a in argv if not a.startswith("-")]
    return words[0] if words else ""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
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
    args = parser.parse_args(argv)
    args.argv = argv  # the command as typed, for model cards
    from .checkpoint import CheckpointError

    try:
        return int(module.run(args) or 0)
    except (CheckpointError, ValueError, FileNotFoundError) as e:
        print(f"ctxmodels: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ctxmodels: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
