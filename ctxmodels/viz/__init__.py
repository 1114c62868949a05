"""Every view the explorer app draws, as a Plotly figure, from a notebook or a script.

Each view takes a model (a loaded one, or a name or path for :func:`ctxmodels.load`) and sentences or a word, and
returns a ``plotly.graph_objects.Figure``: it shows itself in Jupyter and VS Code, and ``fig.write_html`` saves
it. The app's pages draw with the same functions, so a notebook and the app draw the same picture of the same
input::

    from ctxmodels import viz

    viz.word_senses("bert-eltec", viz.preset_sentences("bank"), "bank")
    viz.head_map("minilm-eltec", "The keys to the cabinet are on the table.", layer=3, head=5)

The modules hold the drawing itself (data in, figure out: what the app's pages call): :mod:`~ctxmodels.viz.style`
(escaping, colours, per-layer panels, one attention map), :mod:`~ctxmodels.viz.scatter` (occurrences as points),
:mod:`~ctxmodels.viz.senses`, :mod:`~ctxmodels.viz.overview`, :mod:`~ctxmodels.viz.elmo_layers`,
:mod:`~ctxmodels.viz.attention`, :mod:`~ctxmodels.viz.blanks`, :mod:`~ctxmodels.viz.finetuning` and
:mod:`~ctxmodels.viz.objectives`, one per family of views. No Streamlit here.
"""

from __future__ import annotations

import importlib

# name -> the module that holds it: imported when first asked for (PEP 562), so that the drawing modules the app's
# pages import (style, scatter, ...) do not load torch and the analysis with them
_VIEWS = {
    "attention": ("attention_maps", "head_lines", "head_map", "head_query_key", "heads_grid", "heads_summary",
                  "rollout"),
    "blanks": ("fill_in_guesses", "guesses_by_layer"),
    "compute_curves": ("measure_by_compute", "objectives_by_compute"),
    "elmo_layers": ("elmo_layer_weights",),
    "finetuning": ("finetuning_classes", "finetuning_comparison", "finetuning_heads", "finetuning_layers",
                   "finetuning_points"),
    "objectives": ("corruption", "next_word_guesses"),
    "overview": ("same_word",),
    "senses": ("layer_measurements", "occurrences", "preset_sentences", "word_senses", "word_senses_row"),
}
_WHERE = {name: module for module, names in _VIEWS.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
