"""Model cards: the README.md beside a model, and the licence its front matter states."""

from __future__ import annotations

import re
from pathlib import Path

from ..checkpoint import CheckpointError
from ..model_files import MAX_CARD_BYTES, is_dir, is_file, read_bytes


def read_card(path: Path) -> str:
    """The model card (README.md beside the model), its first megabyte at most; "" when there is none."""
    card = (path if is_dir(path) else path.parent) / "README.md"
    if not is_file(card):
        return ""
    try:
        data = read_bytes(card, MAX_CARD_BYTES, "model card", head=True)
    except CheckpointError:
        return ""
    text = data.decode("utf-8", errors="replace")
    if len(data) == MAX_CARD_BYTES:
        limit = f"{MAX_CARD_BYTES >> 20} MB"
        text = text[: text.rfind("\n") + 1] + f"\n*(the card is longer; only its first {limit} is shown)*\n"
    return text


def card_licence(card: str) -> str | None:
    """The ``license:`` of a model card's front matter (the YAML block between ``---`` lines), or None."""
    lines = card.splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    for line in lines[1:200]:
        if line.strip() == "---":
            break
        m = re.match(r"licen[cs]e\s*:\s*(\S.*)$", line.strip())
        if m:
            return m.group(1).strip().strip("'\"")[:80] or None
    return None
