"""What the Attention page computes, without Streamlit: a model's attention maps on a sentence (or pair), read as
the page's options ask, one head's queries and keys, and the heads ranked. Cached per server by the model's name
and the text (``app/kit/cache.py``)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from app.kit.cache import memo
from app.kit.errors import record_warnings
from app.kit.inputs import check_text, quoted
from app.kit.registry import get_model
from app.views.attention.state import SHARES, AttentionState
from ctxmodels.analysis import attention as att
from ctxmodels.loading import LEFT_TO_RIGHT, declares
from ctxmodels.viz import attention as attention_view

Source = tuple[str, str, str | None]  # model, sentence A, sentence B (checked)


def source(s: AttentionState) -> Source:
    """The model and the checked text of the state (ValueError saying what is wrong with it)."""
    text = check_text(s.sentence, "sentence A")
    pair_text = check_text(s.pair, "sentence B") if s.pair.strip() else None
    return s.model, text, pair_text


def left_to_right(model_id: str) -> bool:
    """Whether the model reads left to right (a GPT: each position sees only itself and the ones before it)."""
    return declares(get_model(model_id), LEFT_TO_RIGHT)


@memo(max_entries=64, spinner="Running the model …")
def raw_maps(model_id: str, text: str, pair: str | None) -> tuple[att.AttentionMaps, list[str]]:
    """Every head's map on the word pieces, and the warnings the model gave (a text cut to its length)."""
    with record_warnings() as warned:
        maps = att.compute_attention(get_model(model_id), None, text, pair=pair or None)
    return maps, warned


def shown(maps: att.AttentionMaps, s: AttentionState, rollout: bool) -> att.AttentionMaps:
    """The maps as the options ask: rolled out on the full piece-level maps first, then merged and hidden (as
    ctxmodels.viz reads them)."""
    return attention_view.read_maps(maps, merge=s.merge, hide=s.hide, rollout=rollout)


def detail(maps: att.AttentionMaps, s: AttentionState) -> tuple[att.AttentionMaps, att.AttentionMaps]:
    """The maps of the overview and those of the detail (one head, the mean over heads, or the rollout)."""
    base = shown(maps, s, rollout=False)
    if s.view == "rollout":
        return base, shown(maps, s, rollout=True)
    return base, att.mean_over_heads(base) if s.view == "mean" else base


def tokens_table(maps: att.AttentionMaps) -> pd.DataFrame:
    seg = {0: "A", 1: "B", None: "special"}
    return pd.DataFrame({"token": maps.tokens, "segment": [seg.get(s, s) for s in maps.sequence_ids]}).T


@memo(max_entries=16, spinner="Reading every head's queries and keys …")
def raw_query_keys(model_id: str, text: str, pair: str | None) -> att.QueryKeys:
    with record_warnings():  # a truncation was already said above the maps
        return att.query_keys(get_model(model_id), None, text, pair=pair or None)


def weight_sentence(tokens: list[str], row: int, products: np.ndarray, weights: np.ndarray) -> str:
    """What makes the heaviest weight of the row: its score and the dimensions that give most of it."""
    j = int(np.argmax(weights))
    score = float(products[j].sum())
    top = np.argsort(-np.abs(products[j]))[:3]
    dims = ", ".join(f"{int(i)} ({products[j, i]:+.2f})" for i in top)
    return (f"{quoted(tokens[row])} gives most weight to {quoted(tokens[j])} ·{j} ({weights[j]:.0%}): its score is "
            f"{score:+.2f}, of which dimensions {dims} give most. Only differences between the scores count: adding "
            "one number to every score of a row changes no weight.")


class Ranking(NamedTuple):
    summary: pd.DataFrame  # every head's measures
    top: pd.DataFrame  # the twelve heads ranked first
    table: pd.DataFrame  # those as the page shows them: shares in per cent
    order: list[str]  # its columns: the measure ranked by first after the head, on show however narrow the page


def ranked(base: att.AttentionMaps, by: str, ascending: bool) -> Ranking:
    """The heads sorted by one measure (``att.SUMMARY_COLUMNS``), lowest first when ``ascending``."""
    summary = att.head_summaries(base)
    top = att.rank_heads(summary, by=by, ascending=ascending, top=12)
    table = top.drop(columns=["head_name"]).assign(**{c: 100 * top[c] for c in SHARES})
    return Ranking(summary, top, table, ["layer", "head", by, *(c for c in att.SUMMARY_COLUMNS if c != by)])


class OpeningHead(NamedTuple):
    layer: int  # from 1, as the sliders count
    head: int  # from 1
    share: float  # the share of its rows' attention on the previous token


def opening_head(base: att.AttentionMaps) -> OpeningHead:
    """The head the detail opens on: the one that looks most at the previous token. Such a head draws one bright
    line just below the diagonal, a pattern a class sees at a glance; the first head of the first layer, the old
    opening, spreads its attention in a blur that shows nothing clear."""
    top = att.rank_heads(att.head_summaries(base), by="to_prev", top=1)
    if top.empty or not np.isfinite(top["to_prev"].iloc[0]):
        return OpeningHead(1, 1, float("nan"))
    row = top.iloc[0]
    return OpeningHead(int(row["layer"]), int(row["head"]), float(row["to_prev"]))


def picked_token(event, n_tokens: int) -> int | None:
    """The token (its row) a click on the line view picked: the ``customdata`` of the point clicked, or None."""
    try:
        points = event["selection"]["points"]
    except (KeyError, TypeError):
        return None
    for p in points or []:
        cd = p.get("customdata")
        cd = cd[0] if isinstance(cd, (list, tuple)) and cd else cd
        if isinstance(cd, (int, float)) and 0 <= int(cd) < n_tokens:
            return int(cd)
    return None
