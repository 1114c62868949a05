"""What the What fine-tuning changes page computes and says, without Streamlit: which models are fine-tuned, the
model one started from, the comparison of the two on the task's sentences (once per server, keyed by the models'
names and the settings), projections of its labelled points, and what its measurements show, in words."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from app.kit.cache import shared
from app.kit.errors import record_warnings
from app.kit.inputs import md
from app.kit.registry import get_model, label
from app.views.fine_tuning.state import AUTO, TuningState
from ctxmodels.analysis import attention as att
from ctxmodels.analysis import finetuning as ft
from ctxmodels.analysis import projections
from ctxmodels.loading import FINETUNE, supports


def loaded(mid: str):
    """The model, or None where it does not load (the Models page says why)."""
    try:
        return get_model(mid)
    except Exception:  # noqa: BLE001 - a model that does not load is reported on the Models page
        return None


def finetuned(ids: list[str]) -> list[str]:
    return [m for m in ids if (lm := loaded(m)) is not None and ft.finetune_info(lm) is not None]


def same_kind(ids: list[str], model_id: str) -> list[str]:
    """The other models of the fine-tuned model's architecture: what it can be compared with by hand."""
    kind = get_model(model_id).kind
    return [m for m in ids if m != model_id and (lm := loaded(m)) is not None and lm.kind == kind]


def tunable(ids: list[str]) -> list[str]:
    """The models one can fine-tune here: BERTs, other encoders, GPTs and ELMos that are not fine-tuned themselves."""
    return [m for m in ids if (lm := loaded(m)) is not None and supports(lm, FINETUNE)
            and ft.finetune_info(lm) is None]


def command_text(model: str = "bert-eltec", task: str = "pos") -> str:
    return (f"ctxmodels finetune --model {model} --task {task} --out runs/{model}-{task.replace(':', '-')} "
            "--steps 300")


def job_task(task: str, lemma: str, task_file: str) -> str:
    """The task a fine-tuning job is given: a task file on the server, ``wsd:LEMMA``, or a built-in task (ValueError
    for a missing file or a lemma that is not one word)."""
    if task_file.strip():
        path = Path(task_file.strip()).expanduser()
        if not path.is_file():
            raise ValueError(f"no task file at {task_file.strip()!r}; give the path of a .tsv or CoNLL file "
                             "on the server")
        return str(path)
    if task.startswith("wsd"):
        word = lemma.strip().lower()
        if not word.isalpha():
            raise ValueError("the lemma for wsd must be one word of letters, such as bank")
        return f"wsd:{word}"
    return task


def job_folder(runs: Path, base: str, task: str, from_file: bool) -> Path:
    """Where a fine-tuning job writes its model: named by the base, the task and the time."""
    name = Path(task).stem if from_file else task.replace(":", "-")
    return runs / f"{label(base)}-{name}-{time.strftime('%Y%m%d-%H%M%S')}"


# -- the comparison -------------------------------------------------------------------------------------------------


def base_of(s: TuningState):
    """The model to compare with (ValueError where it is not of the fine-tuned model's architecture)."""
    after = get_model(s.model)
    candidate = ft.base_model(after) if s.base == AUTO else get_model(s.base)
    ft.check_comparable(candidate, after)
    return candidate


def comparison(s: TuningState, before, task: str) -> tuple[ft.FinetuneComparison, list[str]]:
    """Both models on the task's sentences, layer by layer and head by head (once per server), and the warnings."""
    def compute() -> tuple[ft.FinetuneComparison, list[str]]:
        with record_warnings() as warned:
            result = ft.compare_on_task(before, get_model(s.model), task, split=s.split,
                                        max_sentences=s.n_sentences)
        return result, warned

    return shared().get(s.key(task), compute)


def projected(s: TuningState, task: str, result: ft.FinetuneComparison, layer: int, how: str) -> tuple:
    """The labelled points of ``layer``, before and after, projected (once per server)."""
    Xb, Xa = result.layer_points(layer)
    return shared().get(("ft-projection",) + s.key(task) + (layer, how),
                        lambda: tuple(projections.project(X, method=how, seed=0).coords for X in (Xb, Xa)))


def head_maps(before, after, words: list[str], layer: int, head: int) -> tuple[list, float]:
    """Both models' word-level attention maps on one sentence, and how far the head's rows moved (mean JS
    divergence; ``layer`` and ``head`` from 1)."""
    maps = [att.merge_word_pieces(att.compute_attention(m, None, words)) for m in (before, after)]
    d = float(ft.js_divergence(maps[0].attentions[layer - 1, head - 1],
                               maps[1].attentions[layer - 1, head - 1]).mean())
    return maps, d


# -- what the measurements show, in words (Markdown) ----------------------------------------------------------------


def reading(table: pd.DataFrame) -> str:
    """What the CKA curve shows (measured here, not assumed)."""
    cka = table["cka"].to_numpy(dtype=float)
    names = list(table["layer_name"])
    if not np.isfinite(cka).any():
        return "No layer has a CKA to read (constant vectors)."
    if np.nanmin(cka) >= 0.999:
        return (f"No layer changed (the lowest CKA is {np.nanmin(cka):.3f}). That is what a **feature-based** "
                "fine-tuning does, which leaves the model's own weights as they were and trains only the mix and "
                "the task layer; a fine-tuning of every weight that looks like this was too short to move them.")
    low = int(np.nanargmin(cka))
    drop = np.diff(cka[np.isfinite(cka)])
    steady = bool((drop <= 1e-3).all())
    text = (f"Here the layer that changed most is **{md(names[low])}** (CKA {cka[low]:.3f}); "
            f"{md(names[0])} stays at {cka[0]:.3f} and {md(names[-1])} is at {cka[-1]:.3f}. ")
    if steady and low == len(cka) - 1:
        return text + "CKA falls layer by layer: the picture the literature expects."
    if low == len(cka) - 1:
        return text + "The top layer moved most, as expected, though not every step down is smaller."
    return text + ("Unlike the usual picture, the top layer is not the one that moved most: a short or "
                   "feature-based fine-tuning, or a small model, can look like this.")


def separation_reading(table: pd.DataFrame, majority: float) -> str | None:
    """Where the 1-NN accuracy of the labels gained most; None when there is nothing to say."""
    gain = table["knn_after"] - table["knn_before"]
    top = int(np.nanargmax(gain.to_numpy(dtype=float))) if gain.notna().any() else None
    if top is None:
        return None
    if not np.nanmax(np.abs(gain.to_numpy(dtype=float))) >= 5e-4:
        return "The 1-NN accuracy is the same before and after in every layer."
    return (f"The 1-NN accuracy gained most in **{md(table['layer_name'][top])}** "
            f"({table['knn_before'][top]:.1%} → {table['knn_after'][top]:.1%}; the most frequent label is "
            f"{majority:.1%} of the points).")


def heads_reading(heads: np.ndarray) -> str:
    """Which layer's attention changed most and least (mean over its heads)."""
    by_layer = heads.mean(axis=1)
    if by_layer.max() < 1e-6:
        return "No head's attention changed."
    return (f"The attention changed most in **layer {int(np.argmax(by_layer)) + 1}** (mean over its heads "
            f"{small(by_layer.max())}) and least in layer {int(np.argmin(by_layer)) + 1} ({small(by_layer.min())}).")


def shared_top(matrices: list) -> float:
    """The top of one colour scale for maps set side by side: the largest weight of any (1 when there is none)."""
    tops = [float(np.nanmax(m)) for m in matrices if np.size(m) and np.isfinite(m).any()]
    return max(tops, default=1.0) or 1.0


def small(x: float) -> str:
    """A divergence as a student reads it: three decimals, or "under 0.001" (not 0.000481)."""
    return "under 0.001" if 0 <= x < 0.0005 else f"{x:.3f}"
