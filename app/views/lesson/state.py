"""Where the lesson is, read from its widgets and the URL (``step``, ``reveal``): a lesson can be prepared as a list
of links."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LessonState:
    step: int  # from 1
    reveal: bool  # the step's answer is shown


def clamped(step: int, n_steps: int) -> int:
    """``step`` kept between the first and the last step."""
    return min(max(step, 1), n_steps)
