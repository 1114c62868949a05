"""What the ELMo layers page computes and says about a probe, without Streamlit: the probes' results (cached beside
the model by ``ctxmodels.analysis.probes``), running one, and how far a result can be trusted."""

from __future__ import annotations

import math
from collections.abc import Callable

from app.kit.registry import get_model
from app.views.elmo_layers.state import MIN_TEST_ITEMS, ProbeRun
from ctxmodels.analysis import probes


def latest(model_id: str, fresh: dict[str, probes.ProbeResult]) -> dict[str, probes.ProbeResult]:
    """The newest cached result of each task on the model; one computed in this session (``fresh``, e.g.
    recomputed without caching) wins."""
    model = get_model(model_id)
    found = {task: probes.latest_cached_result(model, task) for task in probes.TASKS}
    results = {task: r for task, r in found.items() if r is not None}
    return results | {task: r for task, r in fresh.items() if r is not None}


def run(r: ProbeRun, progress: Callable[[float, str], None]) -> probes.ProbeResult:
    """Train the probe on the frozen model (its result is cached beside the model unless ``r.again``)."""
    settings = probes.ProbeSettings(n_sentences=r.n_sentences, epochs=r.epochs)
    return probes.run_probe(get_model(r.model), r.task, settings, progress=progress, cache=not r.again)


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
