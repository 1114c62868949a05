"""A page's words, kept as Markdown beside its script (``text.md``) rather than as strings inside it.

The file has one section per ``## name`` heading (``intro``, ``explain``, ...). Within a paragraph the lines are
joined with spaces, so the file can be wrapped for reading and the text a page shows is one line per paragraph,
as a string in the script would be; blank lines stay paragraph breaks, and a line that starts a list item, a
quote or a formula stays on its own line.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

_HEADING = re.compile(r"^## +(\S+)\s*$")
_OWN_LINE = re.compile(r"^(\s*[-*+] |\s*\d+[.)] |>|\$\$)")


def page_text(page_file: str | Path) -> dict[str, str]:
    """The sections of the ``text.md`` in the folder of ``page_file`` (a page script's ``__file__``), by name."""
    path = Path(page_file).resolve().parent / "text.md"
    return dict(_read(path, path.stat().st_mtime_ns))


@functools.lru_cache(maxsize=32)
def _read(path: Path, stamp: int) -> tuple[tuple[str, str], ...]:
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        heading = _HEADING.match(line)
        if heading:
            current = sections.setdefault(heading.group(1), [])
        elif current is not None:
            current.append(line)
    return tuple((name, unwrap(lines)) for name, lines in sections.items())


def unwrap(lines: list[str]) -> str:
    """``lines`` as Markdown with each paragraph on one line (see the module's docstring)."""
    out: list[str] = []
    for line in lines:
        text = line.strip()
        if not text:
            if out and out[-1] != "":
                out.append("")
        elif out and out[-1] != "" and not _OWN_LINE.match(line):
            out[-1] += " " + text
        else:
            out.append(text)
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out)
