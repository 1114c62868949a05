"""The preset sentences: one file per word in the shipped example set (``assets/examples/senses/WORD.txt``), one
sentence a line, each with its sense label (``sentence | label``)."""

from __future__ import annotations

from pathlib import Path

from ctxmodels.paths import examples_dir

# Two sentences with the same words before "bank", whose words after it say which bank: a model that reads left to
# right cannot tell them apart at the word (How they learn's left-to-right part, the Lesson's last step).
SAME_BEFORE_BANK = ("She walked down to the bank to fish in the quiet river.",
                    "She walked down to the bank to pay in her wages.")


def senses_dir() -> Path:
    return examples_dir() / "senses"


def preset_words() -> list[str]:
    return sorted(p.stem for p in senses_dir().glob("*.txt"))


def preset_sentences(word: str) -> list[str]:
    path = senses_dir() / f"{word}.txt"
    if not path.is_file():
        words = preset_words()
        if not words:
            raise ValueError(f"no preset sentences in {senses_dir()}; type your own sentences")
        raise ValueError(f"no preset for {word!r}; presets: {', '.join(words)}")
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
