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
:mod:`~ctxmodels.viz.attention`, :mod:`~ctxmodels.viz.blanks` and :mod:`~ctxmodels.viz.finetuning`, one per
family of views. No Streamlit here.
"""

from ctxmodels.viz.attention import (
    attention_maps,
    head_lines,
    head_map,
    head_query_key,
    heads_grid,
    heads_summary,
    rollout,
)
from ctxmodels.viz.blanks import fill_in_guesses, guesses_by_layer
from ctxmodels.viz.elmo_layers import elmo_layer_weights
from ctxmodels.viz.finetuning import (
    finetuning_classes,
    finetuning_comparison,
    finetuning_heads,
    finetuning_layers,
    finetuning_points,
)
from ctxmodels.viz.overview import same_word
from ctxmodels.viz.senses import layer_measurements, occurrences, preset_sentences, word_senses, word_senses_row

__all__ = [
    "attention_maps", "elmo_layer_weights", "fill_in_guesses", "finetuning_classes", "finetuning_comparison",
    "finetuning_heads", "finetuning_layers", "finetuning_points", "guesses_by_layer", "head_lines", "head_map",
    "head_query_key", "heads_grid", "heads_summary", "layer_measurements", "occurrences", "preset_sentences",
    "rollout", "same_word", "word_senses", "word_senses_row",
]
