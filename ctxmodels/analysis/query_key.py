"""Every attention head's queries and keys, caught as the model runs (BertViz's "neuron view"):
:class:`QueryKeys` holds them, :func:`catching` finds the projections that make them and records their outputs,
:func:`check_softmax_of_scores` checks that softmax(q · k / √d) gives the model's own weights.
:func:`ctxmodels.analysis.attention.query_keys` runs the model with them.

Where the projections are: the BERT family keeps a query and a key ``Linear`` per layer (BERT, RoBERTa, ELECTRA,
ALBERT and ours: ``query``, ``key``; DistilBERT: ``q_lin``, ``k_lin``). GPT-2 keeps query, key and value in one
``c_attn`` (a ``Conv1D`` of three times the width): its output is split in three, in that order, as GPT-2's own
attention splits it. A GPT reads left to right: position ``i`` sees positions ``0..i`` only (its causal mask), so
a later word's key gets no weight however large its score (:attr:`QueryKeys.causal`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class QueryKeys:
    """How every head of one sequence computes its weights: the queries and keys its dot products read.

    A head's weight from position ``i`` to ``j`` is ``softmax_j(q_i · k_j / √d)``: ``queries[l, h, i]`` and
    ``keys[l, h, j]`` are the layer's input projected by the head's query and key matrices (biases included),
    ``d`` the head's width. With ``causal`` (a GPT) the softmax runs over ``j <= i`` only: the later positions
    are masked out, and their products and scores are NaN here. :func:`ctxmodels.analysis.attention.query_keys`
    checks that this gives the model's own weights, ``attentions``.

    queries, keys: float32 ``[layers, heads, T, d]``; attentions: ``[layers, heads, T, T]``.
    tokens, word_ids, sequence_ids: as :class:`~ctxmodels.analysis.attention.AttentionMaps`, at the level of word
    pieces with [CLS] and [SEP] (where the weights are computed). Layers, heads and positions are 0-based here.
    """

    queries: np.ndarray
    keys: np.ndarray
    attentions: np.ndarray
    tokens: list[str]
    word_ids: list[int | None]
    sequence_ids: list[int | None]
    causal: bool = False  # position i sees only positions 0..i (a left-to-right model)

    @property
    def head_dim(self) -> int:
        return self.queries.shape[-1]

    @property
    def scale(self) -> float:
        """1/√d: what the dot products are multiplied by before the softmax."""
        return 1.0 / float(np.sqrt(self.head_dim))

    def visible(self) -> np.ndarray:
        """[T, T] bool: which position (column) each position (row) may look at."""
        n = self.queries.shape[2]
        return np.tril(np.ones((n, n), dtype=bool)) if self.causal else np.ones((n, n), dtype=bool)

    def scores(self, layer: int, head: int) -> np.ndarray:
        """[T, T]: q_i · k_j / √d, the scores whose softmax along a row is the head's weights (NaN where the
        causal mask hides position j from position i)."""
        raw = (self.queries[layer, head] @ self.keys[layer, head].T) * self.scale
        return np.where(self.visible(), raw, np.nan).astype(np.float32)

    def products(self, layer: int, head: int, row: int) -> np.ndarray:
        """[T, d]: the query of position ``row`` times each key, dimension by dimension, divided by √d: row ``j``
        sums to ``scores(layer, head)[row, j]``, so it shows which dimensions make the score (NaN rows: keys the
        causal mask hides from ``row``)."""
        out = self.queries[layer, head, row][None, :] * self.keys[layer, head] * self.scale
        if self.causal:
            out[row + 1:] = np.nan
        return out


# The query and key projections of a head, by the names the BERT family gives them: BERT, RoBERTa, ELECTRA, ALBERT
# and ours ("query", "key"), DistilBERT ("q_lin", "k_lin"). ALBERT shares one layer's modules across its layers:
# they run once per layer, so outputs are collected in the order they run.
_PROJECTION_NAMES = {"query": "query", "q_lin": "query", "key": "key", "k_lin": "key"}
# DeBERTa's ("query_proj") feed scores that add relative positions to q · k: refused by name, because with random or
# nearly uniform weights the numerical check below could not tell.
_RELATIVE_NAMES = ("query_proj", "key_proj")
_FUSED = "c_attn"  # GPT-2: query, key and value in one projection


def _fused(encoder: Any, name: str) -> list[Any]:
    """GPT-2's ``c_attn`` modules (none for another model); ValueError where its scores are scaled otherwise than
    by 1/√d (``scale_attn_by_inverse_layer_idx``, or no scaling at all)."""
    found = [m for n, m in encoder.named_modules() if n.rsplit(".", 1)[-1] == "attn" and hasattr(m, _FUSED)]
    for m in found:
        if getattr(m, "is_cross_attention", False):
            raise ValueError(f"{name} attends to another text (cross-attention): this view reads one text's heads")
        scaling, d = getattr(m, "scaling", None), getattr(m, "head_dim", None)
        if scaling is None or d is None or abs(float(scaling) - d ** -0.5) > 1e-6:
            raise ValueError(f"{name} scales its attention scores otherwise than by 1/√d (by layer, or not at all), "
                             "so this view's break-down of query · key would not give its weights")
    return [getattr(m, _FUSED) for m in found]


@contextlib.contextmanager
def catching(encoder: Any, name: str) -> Iterator[dict]:
    """While the block runs ``encoder``, record every layer's queries and keys: yields {"query": [...], "key":
    [...], "causal": bool}, a [T, hidden] float32 tensor per layer as each runs (the first sequence of the batch).
    ValueError before the block for a model whose projections this view cannot read."""
    import torch

    caught: dict = {"query": [], "key": [], "causal": False}
    if any(n.rsplit(".", 1)[-1] in _RELATIVE_NAMES for n, _ in encoder.named_modules()):
        raise ValueError(f"{name} adds relative positions to query · key in its attention scores (DeBERTa does), "
                         "so a break-down of query · key would not explain its weights (its attention maps still "
                         "show them)")
    fused = _fused(encoder, name)
    if fused:
        caught["causal"] = True

        def split(module, args, output):
            q, k, _ = output.detach()[0].float().cpu().chunk(3, dim=-1)
            caught["query"].append(q)
            caught["key"].append(k)

        hooks = [(m, split) for m in fused]
    else:
        hooks = [(module, _keep(caught[role])) for n, module in encoder.named_modules()
                 if "attention" in n and (role := _PROJECTION_NAMES.get(n.rsplit(".", 1)[-1]))
                 and isinstance(module, torch.nn.Linear)]
    if not hooks:
        raise ValueError(f"{name} keeps its attention's query and key projections where this view does not look "
                         "(it reads the BERT family: BERT, RoBERTa, ELECTRA, ALBERT, DistilBERT; and GPT-2)")
    handles = [module.register_forward_hook(hook) for module, hook in hooks]
    try:
        yield caught
    finally:
        for handle in handles:
            handle.remove()


def _keep(into: list) -> Any:
    return lambda module, args, output: into.append(output.detach()[0].float().cpu())


def check_softmax_of_scores(qk: QueryKeys, name: str, atol: float = 2e-3) -> None:
    """ValueError unless softmax(q · k / √d) (over the positions each row may see) gives the model's own weights
    in every head."""
    scores = np.einsum("lhid,lhjd->lhij", qk.queries, qk.keys) * qk.scale
    scores = np.where(qk.visible(), scores, -np.inf)
    scores -= scores.max(-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(-1, keepdims=True)
    worst = float(np.abs(weights - qk.attentions).max())
    if not worst <= atol:
        raise ValueError(f"{name}'s attention weights are not the softmax of query · key / √d alone (they differ "
                         f"by up to {worst:.3f}: the model adds something to the scores, as DeBERTa adds relative "
                         "positions), so breaking the scores down into query · key would not explain them")
