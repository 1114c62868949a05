"""The allowed range of a number a user gives (an option, a run setting), checked with one message everywhere.

A :class:`Bound` is declared once, next to what it bounds: run settings declare theirs on their settings class
(``RunSettings.BOUNDS``), the commands' other options where the option is defined. Both the command line (while
parsing, so the message names the option) and :meth:`Bound.check` (settings built in Python, or read back from a
stored run) use the same words::

    --batch-size must be between 1 and 65536, got 0
    --lr must be above 0 and at most 10, got nan

NaN and infinities are never in range; a whole-number bound refuses fractions and booleans.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Bound:
    """``lo <= value <= hi`` (``lo < value`` when ``lo_open``, ``value < hi`` when ``hi_open``)."""

    lo: float
    hi: float
    integer: bool = True
    lo_open: bool = False
    hi_open: bool = False

    def describe(self) -> str:
        """The range in words: "between 1 and 65536", "above 0 and at most 10", "at least 0 and below 1"."""
        lo, hi = _number(self.lo), _number(self.hi)
        if not self.lo_open and not self.hi_open:
            return f"between {lo} and {hi}"
        low = f"above {lo}" if self.lo_open else f"at least {lo}"
        return f"{low} and {'below' if self.hi_open else 'at most'} {hi}"

    def error(self, name: str, value: Any) -> str:
        kind = "a whole number " if self.integer else ""
        shown = repr(value) if isinstance(value, str) else value
        return f"{name} must be {kind}{self.describe()}, got {shown}"

    def contains(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.integer and not isinstance(value, int):
            return False
        if isinstance(value, float) and not math.isfinite(value):  # a huge int is finite, and too big for a float
            return False
        above = value > self.lo if self.lo_open else value >= self.lo
        below = value < self.hi if self.hi_open else value <= self.hi
        return above and below

    def check(self, name: str, value: Any) -> Any:
        """``value`` if it is in range, else ValueError naming ``name`` (an option such as ``--steps``)."""
        if not self.contains(value):
            raise ValueError(self.error(name, value))
        return value

    def parse(self, name: str, text: str) -> int | float:
        """A number typed by a user, checked; ValueError naming ``name`` when it is not a number in range."""
        stripped = text.strip()
        try:
            value: int | float = int(stripped, 10) if self.integer else float(stripped)
        except ValueError:
            value = None  # type: ignore[assignment]
            if self.integer:  # "1e3" or "10.0": accepted when it is a whole number
                try:
                    number = float(stripped)
                    if math.isfinite(number) and number == int(number):
                        value = int(number)
                except (ValueError, OverflowError):
                    pass
        if value is None:
            raise ValueError(self.error(name, text))
        return self.check(name, value)


def _number(x: float) -> str:
    """1000000 as "1000000", 1e-08 as "1e-08", 10.0 as "10"."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def int_range(lo: int, hi: int) -> Bound:
    return Bound(lo, hi, integer=True)


def float_range(lo: float, hi: float, lo_open: bool = False, hi_open: bool = False) -> Bound:
    return Bound(lo, hi, integer=False, lo_open=lo_open, hi_open=hi_open)


#: the common ceilings (a count of steps, a seed)
MAX_STEPS = 1_000_000_000
MAX_SEED = 2**32 - 1
