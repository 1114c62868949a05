"""Each model row's layer slider, in the link: ``layer=2:bert-eltec&layer=1:elmo-eltec`` (the layer, then the
model's name), so a copied link shows every row at the layer being discussed."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import streamlit as st

from app.kit.inputs import md
from app.kit.url_state import from_history, keep, url_pairs, url_value, write
from ctxmodels.analysis.word_senses import MIX


class LayerLinks:
    """The layer sliders of the rows of ``models`` (ids), named in the link by ``name``."""

    def __init__(self, models: Sequence[str], name: Callable[[str], str]) -> None:
        self.models, self.name = list(models), name
        # the link's layers: on a session's first run, and when Back or Forward restores an address
        fresh = from_history() or not any(k.startswith("layer::") for k in st.session_state)
        self.from_url = url_pairs("layer") if fresh else {}

    def sync(self) -> None:
        """The layer of every shown model, in the link."""
        entries = [f"{st.session_state[f'layer::{m}']}:{self.name(m)}" for m in self.models
                   if f"layer::{m}" in st.session_state]
        write("layer", entries or None)

    def slider(self, model_id: str, model, where, names: dict, mix) -> int | str:
        """The row's layer slider in ``where`` (a session's first run starts from the link's layer for this model,
        checked); ``mix``: ELMo's learned scalar mix, offered as one more layer, or None."""
        key = f"layer::{model_id}"
        options = list(range(model.n_layers)) + ([MIX] if mix else [])
        if key not in st.session_state or from_history():
            st.session_state[key] = url_value(key, model.n_layers - 1, options=options,
                                              raw=self.from_url.get(self.name(model_id)), param="layer",
                                              names=names.get)
        layer = where.select_slider("Layer", options=options, key=key, persist_state="session",
                                    format_func=lambda o, names=names: md(names[o]))
        keep(key, layer)  # kept across page switches, like the other settings
        if layer == MIX:
            where.caption("v = γ Σ s_j h_j with " + ", ".join(f"s_{j} = {w:.2f}" for j, w in enumerate(mix.weights))
                          + f", γ = {mix.gamma:.2f} (see *ELMo layers*)")
        self.sync()
        return layer
