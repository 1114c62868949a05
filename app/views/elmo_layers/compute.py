"""What the ELMo layers page computes and says about a probe, without Streamlit: the stored results, running one
for a visitor, and how far a result can be trusted.

A visitor's run is theirs: it is never written beside the model (the shipped ``<model>/probes/<task>.json`` stays
as it was) nor anywhere another visitor reads; the page keeps it in that visitor's session. The stored results are
the ones shipped with the model, or written there by the operator's ``ctxmodels probe``."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from app.kit.registry import get_model
from app.views.elmo_layers.state import MIN_TEST_ITEMS, ProbeRun
from ctxmodels.analysis import probes
from ctxmodels.paths import assets_dir


def stored(model_id: str) -> dict[str, probes.ProbeResult]:
    """The newest stored result of each task on the model (shipped, or the operator's ``ctxmodels probe``)."""
    model = get_model(model_id)
    found = {task: probes.latest_cached_result(model, task) for task in probes.TASKS}
    return {task: r for task, r in found.items() if r is not None}


def run(r: ProbeRun, progress: Callable[[float, str], None]) -> probes.ProbeResult:
    """The probe the visitor asked for: the stored result with these settings unless ``r.again``, else trained on
    the frozen model now. Nothing is written: the result is the visitor's to keep (the page holds it)."""
    model = get_model(r.model)
    settings = probes.ProbeSettings(n_sentences=r.n_sentences, epochs=r.epochs)
    hit = None if r.again else probes.cached_result(model, r.task, settings)
    if hit is not None:
        progress(1.0, "a stored result with these settings")
        return hit
    return probes.run_probe(model, r.task, settings, progress=progress, cache=False)


def source_of(model_id: str, r: probes.ProbeResult, mine: bool) -> str:
    """Which result the page shows, in Markdown: the one stored with the model, or the visitor's own run."""
    if mine and not r.cached:
        return "**your run just now** (only you see it; it is not stored, and others see the stored measurement)"
    if _shipped(model_id):
        what = "**the shipped measurement**"
    else:
        what = "**the stored measurement** (made with `ctxmodels probe`)"
    return what + (" with the settings you asked for" if mine else "")


def _shipped(model_id: str) -> bool:
    """Whether the model is one of the shipped ones (its folder in the assets folder)."""
    path = getattr(get_model(model_id), "path", None)
    if path is None:
        return False
    try:
        return Path(path).resolve().is_relative_to(assets_dir().resolve())
    except OSError:
        return False


def margin(accuracy: float, n: int) -> float:
    """Half the width of the 95% interval of an accuracy measured on ``n`` items (normal approximation)."""
    return 1.96 * math.sqrt(max(accuracy * (1 - accuracy), 0.0) / max(n, 1))


def too_small(r: probes.ProbeResult) -> str | None:
    """Why a probe's result means little (its test set is too small), in Markdown, or None."""
    reasons = []
    if r.n_test < MIN_TEST_ITEMS:
        reasons.append(f"only {r.n_test} test items (fewer than {MIN_TEST_ITEMS}): an accuracy measured on so few "
                       f"is uncertain by about ±{100 * margin(0.5, r.n_test):.0f} points (95% interval), more than "
                       "the layers usually differ")
    if r.n_test < len(r.labels):
        reasons.append(f"fewer test items ({r.n_test}) than classes ({len(r.labels)}): some "
                       f"{'senses' if r.task == 'wsd' else 'tags'} are never tested")
    if not reasons:
        return None
    return ("**Too small to mean much**: " + "; ".join(reasons) + ". Run it again below with more SemCor "
            "sentences.")


def balance_note(r: probes.ProbeResult) -> str:
    """What the word-sense baseline is here: the items are sense-balanced, so it is near (or below) chance."""
    n_lemmas, n_senses = len(r.lemmas), len(r.labels)
    per_sense = r.settings.get("max_per_sense")
    cap = f"at most {per_sense} each, " if per_sense else ""
    chance = f" (about {n_lemmas / n_senses:.0%} here: {n_lemmas} lemmas, {n_senses} senses)" if n_lemmas and \
        n_senses else ""
    return ("The word-sense items are **sense-balanced**: each lemma's senses contribute about the same number of "
            f"occurrences ({cap}taken in turn until the sentence budget is spent). So the most frequent sense is "
            f"near chance, one guess among a lemma's senses{chance}, and it can fall below chance: when a lemma's "
            "senses have equal totals, the one commonest among the training items is left with the fewest test "
            "items. In running text the most frequent sense is a strong baseline; here the probe is compared with "
            "guessing.")
