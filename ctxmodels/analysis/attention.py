"""BERT attention maps: word-level merging, hiding [CLS]/[SEP], head means, rollout and per-head summaries.

Conventions: ``maps.attentions[l, h, i, j]`` is how much position ``i`` (row, "from") attends to position ``j``
(column, "to") in head ``h`` of layer ``l`` (0-based arrays; the summary tables number layers and heads from 1,
so "layer 3" is ``attentions[2]`` and matches the hidden-state layer names, where layer 0 is the embeddings).
Each row is a probability distribution (sums to 1) and every operation here keeps it that way, except rows that
had all their attention on hidden tokens (see :func:`hide_special`).

Typical use::

    maps = compute_attention(model, tokenizer, "The bank raised its rates.")
    rolled = attention_rollout(maps)              # on the full piece-level maps, before merging/hiding
    words = hide_special(merge_word_pieces(maps))
    table = rank_heads(head_summaries(maps), by="to_prev")
    csv = map_table(words.attentions[0, 0], words.tokens)   # one map as a table with unique labels

    pair = compute_attention(model, tokenizer, "The bank was closed.", pair="She went home.")
    pair.next_sentence                            # P(IsNext) from BERT's next-sentence head, same forward pass
    next_sentence_probability(model, tokenizer, "The bank was closed.", "She went home.")   # the same, no maps

    qk = query_keys(model, tokenizer, "The bank raised its rates.")   # every head's queries and keys
    qk.scores(0, 0)                               # q · k / √d of layer 1, head 1; its row softmax is the map
    qk.products(0, 0, row=2)                      # [T, d]: which dimensions make each score of position 2's row

The next-sentence probability lives here, beside the maps, because it is read off the same forward pass and the
same encoding of a sentence pair (segments A and B, their token type ids, both [SEP]s) that the attention of a
pair shows: the Attention page's "pair" box is BERT's next-sentence task.

Memory: the maps of one sequence take ``layers * heads * T * T * 4`` bytes as float32: 17 MB for a 4-layer,
4-head model at T = 512, 151 MB for BERT-base (12 x 12) at T = 512 (and as much again inside torch during the
forward pass, which keeps every layer's probabilities), 2 MB for BERT-base at T = 60.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..kinds import ATTENTION, supports
from .query_key import QueryKeys, catching, check_softmax_of_scores
from .query_key import check_softmax_of_scores as _check_softmax_of_scores  # noqa: F401 - its old name

CLS, SEP, PAD = "[CLS]", "[SEP]", "[PAD]"
# The same roles as RoBERTa-style tokenizers write them (encoders read through transformers keep their own names).
CLS_NAMES, SEP_NAMES, PAD_NAMES = (CLS, "<s>"), (SEP, "</s>"), (PAD, "<pad>")
SPECIAL_TOKENS = (*CLS_NAMES, *SEP_NAMES, *PAD_NAMES)
SUMMARY_COLUMNS = ("entropy", "to_cls", "to_sep", "to_self", "to_prev", "to_next")


@dataclass
class AttentionMaps:
    """Attention of one sequence, all layers and heads, with what each position is.

    attentions: float32 ``[layers, heads, T, T]`` (row = from, column = to).
    tokens: T labels: word pieces, or words after :func:`merge_word_pieces`.
    word_ids: the word each position belongs to (None for [CLS]/[SEP]/[PAD]).
    sequence_ids: 0 = first segment, 1 = second segment, None = special token.
    words: the words of the text (A's then B's), if known.
    head_names: one per head ("1".."H"; "mean" after :func:`mean_over_heads`; "rollout").
    level: "piece" or "word".
    hidden_share: after :func:`hide_special`: ``[layers, heads, T]`` share of each row's attention that went to
        the hidden tokens before renormalising (BERT often puts most of it on [SEP]); None otherwise.
    next_sentence: for a sentence pair, the probability the model's next-sentence (NSP) head gives that segment B
        follows segment A ("IsNext"), from the same forward pass; None without a pair or without an NSP head.
    """

    attentions: np.ndarray
    tokens: list[str]
    word_ids: list[int | None]
    sequence_ids: list[int | None]
    words: list[str] | None = None
    head_names: list[str] | None = None
    level: str = "piece"
    hidden_share: np.ndarray | None = None
    next_sentence: float | None = None

    def __post_init__(self) -> None:
        A = self.attentions
        if A.ndim != 4 or A.shape[2] != A.shape[3]:
            raise ValueError(f"attention maps must be [layers, heads, T, T], got shape {A.shape}")
        T = A.shape[2]
        for name in ("tokens", "word_ids", "sequence_ids"):
            if len(getattr(self, name)) != T:
                raise ValueError(f"{len(getattr(self, name))} {name} for attention over {T} positions")
        if self.head_names is None:
            self.head_names = [str(h + 1) for h in range(A.shape[1])]

    @property
    def n_layers(self) -> int:
        return self.attentions.shape[0]

    @property
    def n_heads(self) -> int:
        return self.attentions.shape[1]

    @property
    def n_tokens(self) -> int:
        return self.attentions.shape[2]

    @property
    def special(self) -> np.ndarray:
        """Boolean [T]: positions holding [CLS], [SEP] or [PAD] (not part of any word)."""
        return np.array([w is None and t in SPECIAL_TOKENS for t, w in zip(self.tokens, self.word_ids)], dtype=bool)

    def replace(self, **changes: Any) -> AttentionMaps:
        return dataclasses.replace(self, **changes)


def attention_maps(
    attentions: Any,
    tokens: Any,
    word_ids: Sequence[int | None] | None = None,
    sequence_ids: Sequence[int | None] | None = None,
    words: Sequence[str] | None = None,
) -> AttentionMaps:
    """Build :class:`AttentionMaps` from a model's output for ONE sequence.

    attentions: ``BertOutput.attentions`` (a tuple of ``[1, heads, T, T]`` or ``[heads, T, T]`` tensors, one per
        layer) or an array ``[layers, heads, T, T]``.
    tokens: an ``Encoded`` (tokens, word_ids, sequence_ids and words are taken from it) or the list of tokens.
        Without word_ids every non-special token counts as its own word.
    """
    if hasattr(tokens, "tokens") and hasattr(tokens, "word_ids"):
        enc = tokens
        tokens, word_ids, sequence_ids = enc.tokens, enc.word_ids, enc.sequence_ids
        words = getattr(enc, "words", words)
    tokens = list(tokens)
    A = _stack_layers(attentions)
    if A.shape[2] != len(tokens):
        raise ValueError(f"attention covers {A.shape[2]} positions but {len(tokens)} tokens were given; pass the "
                         "tokens of the same encoding (with [CLS]/[SEP])")
    if word_ids is None:
        word_ids, n = [], 0
        for t in tokens:
            word_ids.append(None if t in SPECIAL_TOKENS else n)
            n += t not in SPECIAL_TOKENS
    if sequence_ids is None:
        sequence_ids = [None if w is None else 0 for w in word_ids]
    return AttentionMaps(A, tokens, list(word_ids), list(sequence_ids), list(words) if words is not None else None)


def merge_word_pieces(maps: AttentionMaps) -> AttentionMaps:
    """Word-level maps: attention TO a word is the sum over its pieces (columns), attention FROM a word is the
    mean over its pieces (rows). Rows still sum to 1. Special tokens stay single positions."""
    groups: dict[tuple, int] = {}
    assign = np.empty(maps.n_tokens, dtype=np.int64)
    for pos, w in enumerate(maps.word_ids):
        key = ("word", w) if w is not None else ("special", pos)
        assign[pos] = groups.setdefault(key, len(groups))
    G = len(groups)
    counts = np.bincount(assign, minlength=G)
    # Sum runs of positions with reduceat (a memory pass; a one-hot matmul costs T*T*G flops). Pieces of a word
    # are contiguous in any encoding, so `order` is the identity unless word_ids say otherwise.
    order = np.argsort(assign, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    A = maps.attentions if np.array_equal(order, np.arange(len(order))) else maps.attentions[..., order][..., order, :]
    to_words = np.add.reduceat(A, starts, axis=-1)  # [L, H, T, G]: sum over each word's columns
    merged = np.add.reduceat(to_words, starts, axis=-2) / counts[:, None]  # [L, H, G, G]: mean over its rows

    first = [int(np.flatnonzero(assign == g)[0]) for g in range(G)]
    tokens = []
    for g, pos in enumerate(first):
        w = maps.word_ids[pos]
        if w is None:
            tokens.append(maps.tokens[pos])
        elif maps.words is not None and 0 <= w < len(maps.words):
            tokens.append(maps.words[w])
        else:
            tokens.append("".join(maps.tokens[p].removeprefix("##") for p in np.flatnonzero(assign == g)))
    hidden = None
    if maps.hidden_share is not None:
        hidden = np.add.reduceat(maps.hidden_share[..., order], starts, axis=-1) / counts
    return maps.replace(
        attentions=merged.astype(np.float32),
        tokens=tokens,
        word_ids=[maps.word_ids[p] for p in first],
        sequence_ids=[maps.sequence_ids[p] for p in first],
        level="word",
        hidden_share=hidden,
    )


def hide_special(maps: AttentionMaps, which: Sequence[str] = SPECIAL_TOKENS) -> AttentionMaps:
    """Drop the rows and columns of special tokens (default [CLS], [SEP], [PAD]) and renormalise each row to 1.

    BERT puts much of its attention on [CLS]/[SEP] (Clark et al. 2019 read attention to [SEP] as a "no-op");
    hiding them shows where the *rest* of each row's attention goes. The share that was removed is kept in
    ``hidden_share`` so a view can say "this row had 85% on [SEP]". A row whose attention was all on hidden
    tokens stays all zeros rather than being made up.
    """
    which = set(which)
    hide = np.array([w is None and t in which for t, w in zip(maps.tokens, maps.word_ids)], dtype=bool)
    if hide.all():
        raise ValueError("hide_special would hide every position; there are no word tokens to show")
    keep = np.flatnonzero(~hide)
    A = maps.attentions[:, :, keep[:, None], keep[None, :]]
    total = maps.attentions.sum(axis=-1)[:, :, keep]  # row mass before hiding (1 for softmax rows)
    kept_mass = A.sum(axis=-1)
    A = np.divide(A, kept_mass[..., None], out=np.zeros_like(A), where=kept_mass[..., None] > 0)
    hidden = np.divide(total - kept_mass, total, out=np.zeros_like(total), where=total > 0)
    if maps.hidden_share is not None:  # hidden twice: combine the shares
        prev = maps.hidden_share[:, :, keep]
        hidden = prev + (1 - prev) * hidden
    return maps.replace(
        attentions=A.astype(np.float32),
        tokens=[maps.tokens[i] for i in keep],
        word_ids=[maps.word_ids[i] for i in keep],
        sequence_ids=[maps.sequence_ids[i] for i in keep],
        hidden_share=hidden.astype(np.float32),
    )


def mean_over_heads(maps: AttentionMaps) -> AttentionMaps:
    """The mean over heads, as maps with a single head named "mean"."""
    hidden = maps.hidden_share.mean(axis=1, keepdims=True) if maps.hidden_share is not None else None
    return maps.replace(attentions=maps.attentions.mean(axis=1, keepdims=True), head_names=["mean"],
                        hidden_share=hidden)


def attention_rollout(maps: AttentionMaps, residual: bool = True) -> AttentionMaps:
    """Attention rollout (Abnar & Zuidema 2020): how much each position at layer l draws on each input token.

    Per layer: the mean over heads ``A``; with ``residual=True`` (the paper's choice) the residual connection is
    modelled as ``0.5 * A + 0.5 * I``, rows renormalised; then the layers are multiplied through:
    ``R_1 = Â_1``, ``R_l = Â_l @ R_{l-1}``. Returns maps with one head ("rollout") whose layer ``l`` is
    ``R_{l+1}`` (the flow up to and including that layer). Rows stay distributions.

    Roll out the full piece-level maps (what :func:`compute_attention` returns), then merge / hide the result:
    hiding first would cut the paths that run through [CLS]/[SEP].
    """
    if maps.hidden_share is not None:
        raise ValueError("attention_rollout needs every position: roll out the maps first, then hide_special")
    A = maps.attentions.mean(axis=1, dtype=np.float64)  # [L, T, T]
    if residual:
        A = 0.5 * A + 0.5 * np.eye(maps.n_tokens)[None]
    rows = A.sum(axis=-1, keepdims=True)
    A = np.divide(A, rows, out=np.zeros_like(A), where=rows > 0)
    R = np.empty_like(A)
    R[0] = A[0]
    for layer in range(1, maps.n_layers):
        R[layer] = A[layer] @ R[layer - 1]
    return maps.replace(attentions=R[:, None].astype(np.float32), head_names=["rollout"])


def head_summaries(maps: AttentionMaps) -> pd.DataFrame:
    """One row per (layer, head) with the measures of Clark et al. (2019), averaged over the rows (positions):

    entropy: mean entropy of a row's distribution, in nats (0 = all on one token; at most ln T);
    to_cls / to_sep: mean share of attention to the [CLS] token / to all [SEP] tokens (NaN if absent, e.g. hidden);
    to_self: mean of the diagonal; to_prev / to_next: mean attention to the position just before / after,
    over the rows that have one (so a pure previous-token head scores exactly 1).
    Rows with no mass at all (possible after :func:`hide_special`) are left out of the means.
    ``layer`` and ``head`` are numbered from 1; ``head_name`` is the head's name in the maps.
    """
    A = maps.attentions
    L, H, T, _ = A.shape
    live = A.sum(axis=-1, dtype=np.float64) > 0  # [L, H, T]

    def row_mean(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Mean of values [L, H, T] over the live rows selected by the boolean mask rows [T]; NaN if none."""
        w = live & rows
        count = w.sum(axis=-1)
        return np.divide((values * w).sum(axis=-1), count, out=np.full(count.shape, np.nan), where=count > 0)

    all_rows = np.ones(T, dtype=bool)
    log_a = np.zeros_like(A)
    np.log(A, out=log_a, where=A > 0)  # 0 log 0 = 0
    entropy = -np.einsum("lhij,lhij->lhi", A, log_a, dtype=np.float64)
    tok = np.array(maps.tokens, dtype=object)
    is_special = maps.special

    def to_columns(mask: np.ndarray) -> np.ndarray:
        if not mask.any():
            return np.full((L, H), np.nan)
        return row_mean(A[..., mask].sum(axis=-1, dtype=np.float64), all_rows)

    idx = np.arange(T)
    diag = A[..., idx, idx]
    prev = np.zeros((L, H, T))
    prev[..., 1:] = A[..., idx[1:], idx[:-1]]
    nxt = np.zeros((L, H, T))
    nxt[..., :-1] = A[..., idx[:-1], idx[1:]]
    columns = {
        "entropy": row_mean(entropy, all_rows),
        "to_cls": to_columns(np.isin(tok, CLS_NAMES) & is_special),
        "to_sep": to_columns(np.isin(tok, SEP_NAMES) & is_special),
        "to_self": row_mean(diag, all_rows),
        "to_prev": row_mean(prev, idx >= 1),
        "to_next": row_mean(nxt, idx < T - 1),
    }
    rows = []
    for layer in range(L):
        for head in range(H):
            row = {"layer": layer + 1, "head": head + 1, "head_name": maps.head_names[head]}
            row.update({name: float(values[layer, head]) for name, values in columns.items()})
            rows.append(row)
    return pd.DataFrame(rows, columns=["layer", "head", "head_name", *SUMMARY_COLUMNS])


def rank_heads(summary: pd.DataFrame, by: str = "to_prev", ascending: bool = False, top: int | None = None
               ) -> pd.DataFrame:
    """Heads sorted by one summary column (highest first unless ``ascending``); NaN last; ties keep layer order."""
    if by not in summary.columns or by in ("head_name",):
        options = [c for c in summary.columns if c != "head_name"]
        raise ValueError(f"cannot rank heads by {by!r}; choose one of {', '.join(options)}")
    if top is not None and top < 1:
        raise ValueError(f"top must be a positive number of heads, got {top}")
    ranked = summary.sort_values(by, ascending=ascending, na_position="last", kind="stable").reset_index(drop=True)
    return ranked.head(top) if top is not None else ranked


def map_table(matrix: np.ndarray, tokens_from: Sequence[str], tokens_to: Sequence[str] | None = None
              ) -> pd.DataFrame:
    """One attention map ``[T_from, T_to]`` as a table: a row per attending position, a column per attended one.

    The first column, ``from``, names the row's position; every label is ``"POSITION:TOKEN"`` (``"3:bank"``), so
    a token that repeats, or one that reads like a column name ("from", "index"), still gets a column of its own.
    """
    m = np.asarray(matrix)
    tokens_to = tokens_from if tokens_to is None else tokens_to
    if m.ndim != 2 or m.shape != (len(tokens_from), len(tokens_to)):
        raise ValueError(f"an attention map of shape {m.shape} does not fit {len(tokens_from)} x {len(tokens_to)} "
                         "tokens")
    columns = [f"{j}:{t}" for j, t in enumerate(tokens_to)]
    table = pd.DataFrame(m, columns=pd.Index(columns, dtype=object))
    table.insert(0, "from", [f"{i}:{t}" for i, t in enumerate(tokens_from)])
    return table


def compute_attention(model: Any, tokenizer: Any, text: str | list[str], pair: str | list[str] | None = None,
                      max_length: int = 512) -> AttentionMaps:
    """Run the model once on ``text`` (and ``pair``: segment B, with its token type ids and both [SEP]s) and
    return its attention maps at the word-piece level. For a pair, and a model with BERT's next-sentence head,
    ``next_sentence`` holds that head's probability that B follows A (as :func:`next_sentence_probability`).

    model: a :class:`ctxmodels.bert.BertForPreTraining` / ``BertModel``, or a loaded model (``ctxmodels.load``)
    with attention, in which case ``tokenizer`` may be None. Longer texts are truncated to ``max_length`` pieces
    (and to the model's positions) with a warning. The model runs in eval mode without gradients; its training
    flag is restored afterwards.
    """
    enc, out = _forward(model, tokenizer, text, pair, max_length, attentions=True)
    if out.attentions is None:
        raise ValueError(f"{type(_torch_encoder(model)).__name__} returned no attention maps")
    maps = attention_maps(out.attentions, enc)
    if pair is not None and has_next_sentence_head(model) and getattr(out, "pooler_output", None) is not None:
        maps.next_sentence = _is_next(model, out.pooler_output)
    return maps


def query_keys(model: Any, tokenizer: Any, text: str | list[str], pair: str | list[str] | None = None,
               max_length: int = 512) -> QueryKeys:
    """Run the model once on ``text`` (and ``pair``) and return every head's queries and keys with its weights
    (BertViz's "neuron view"): what a head's weight from one token to another is made of.

    model and tokenizer as for :func:`compute_attention`. ValueError for a model whose query and key projections
    are not where the BERT family or GPT-2 keeps them (:mod:`.query_key`), or whose weights are not the softmax of
    q · k / √d alone (DeBERTa adds relative positions to the scores): a break-down of q · k would not explain them.
    A GPT's are masked as its own are: a position sees only itself and the positions before it.
    """
    import torch

    encoder = _torch_encoder(model)
    name = getattr(model, "name", type(model).__name__)
    with catching(encoder, name) as captured:
        enc, out = _forward(model, tokenizer, text, pair, max_length, attentions=True)
    maps = attention_maps(out.attentions, enc)
    L, H, T, _ = maps.attentions.shape
    if any(len(captured[role]) != L for role in ("query", "key")):
        raise ValueError(f"{name}: found {len(captured['query'])} query and {len(captured['key'])} key projections "
                         f"run for {L} layers of attention; this view cannot tell which belongs to which head")
    q, k = (torch.stack(captured[role]).numpy() for role in ("query", "key"))  # [L, T, hidden]
    if q.shape[-1] % H or q.shape[1] != T:
        raise ValueError(f"{name}: query projections of shape {q.shape[1:]} do not split into {H} heads over {T} "
                         "positions")
    q, k = (a.reshape(L, T, H, -1).transpose(0, 2, 1, 3).astype(np.float32) for a in (q, k))
    result = QueryKeys(q, k, maps.attentions, maps.tokens, maps.word_ids, maps.sequence_ids, captured["causal"])
    check_softmax_of_scores(result, name)
    return result


def _is_module(model: Any) -> bool:
    """A torch module (our BERT, given with its tokenizer) rather than a model from ``ctxmodels.load``."""
    import torch

    return isinstance(model, torch.nn.Module)


def _require_attention(model: Any) -> None:
    """ValueError unless the loaded ``model``'s kind has attention maps (:mod:`ctxmodels.kinds`)."""
    if not supports(model, ATTENTION):
        raise ValueError(f"{model.name} has no attention maps (kind {model.kind!r}); attention needs a BERT-family "
                         "encoder")


def _torch_encoder(model: Any) -> Any:
    """The torch module that runs ``model``'s attention: our BERT's encoder, or a loaded model's
    ``attention_module`` (its own encoder, a transformers model's base model)."""
    if _is_module(model):
        return getattr(model, "bert", model)  # a BertForPreTraining, or a bare BertModel
    _require_attention(model)
    return model.attention_module


def _torch_model(model: Any) -> Any:
    return model if _is_module(model) else model.model


def has_next_sentence_head(model: Any) -> bool:
    """Whether ``model`` (a :class:`ctxmodels.bert.BertForPreTraining` or a loaded BERT) has BERT's next-sentence
    (NSP) head: a model saved as an encoder only (or as ``BertForMaskedLM``) has none."""
    if not _is_module(model) and not supports(model, ATTENTION):
        return False
    return bool(getattr(_torch_model(model), "has_nsp_head", False))


def next_sentence_probability(model: Any, tokenizer: Any, text: str | list[str], pair: str | list[str],
                              max_length: int = 512) -> float:
    """The probability BERT's next-sentence (NSP) head gives that ``pair`` (segment B) follows ``text`` (segment A).

    BERT was pre-trained on pairs "[CLS] A [SEP] B [SEP]" where B was the sentence after A half of the time and a
    random sentence otherwise; the head reads the pooled [CLS] vector and gives two logits, index 0 "IsNext" and
    index 1 "NotNext" (ctxmodels' training labels, as Hugging Face's). This is the softmax's first entry. model and
    tokenizer as for :func:`compute_attention` (the same encoding, truncation and eval mode). ValueError for a
    model without the head, or an empty ``pair``.
    """
    if not has_next_sentence_head(model):
        name = getattr(model, "name", type(model).__name__)
        raise ValueError(f"{name} has no next-sentence (NSP) head (it was saved without it, e.g. as an encoder "
                         "only), so it cannot say whether one sentence follows another")
    if not pair or (isinstance(pair, str) and not pair.strip()):
        raise ValueError("next_sentence_probability needs a second sentence (segment B)")
    _, out = _forward(model, tokenizer, text, pair, max_length, attentions=False)
    return _is_next(model, out.pooler_output)


def _forward(model: Any, tokenizer: Any, text: str | list[str], pair: str | list[str] | None, max_length: int,
             attentions: bool) -> tuple[Any, Any]:
    """(the encoding, the encoder's output) for one text or pair, in eval mode without gradients. Only the encoder
    runs (its pooler included): the pre-training heads are applied by the callers that need them."""
    import torch

    if not _is_module(model):  # a LoadedModel from ctxmodels.load: its own template and encoder
        _require_attention(model)
        tokenizer = tokenizer if tokenizer is not None else model.tokenizer
        if isinstance(text, str) and not text.strip():
            raise ValueError("compute_attention got an empty text")
        enc = tokenizer.encode(text, pair=pair, max_length=min(max_length, model.max_length))
        return enc, model.encoder_output(enc, attentions=attentions)
    if tokenizer is None:
        raise ValueError("compute_attention needs the model's tokenizer")
    encoder = getattr(model, "bert", model)  # skip the pre-training heads: only the encoder's output is needed
    positions = getattr(getattr(encoder, "config", None), "max_position_embeddings", None)
    if positions is not None:
        max_length = min(max_length, positions)
    if isinstance(text, str) and not text.strip():
        raise ValueError("compute_attention got an empty text")
    enc = tokenizer.encode(text, pair=pair, max_length=max_length)

    device = next(encoder.parameters()).device
    ids = torch.tensor([enc.ids], dtype=torch.long, device=device)
    types = torch.tensor([enc.type_ids], dtype=torch.long, device=device)
    was_training = encoder.training
    encoder.eval()
    try:
        with torch.no_grad():
            out = encoder(ids, token_type_ids=types, output_attentions=attentions)
    finally:
        encoder.train(was_training)
    return enc, out


def _is_next(model: Any, pooled: Any) -> float:
    """P(IsNext) from the NSP head of ``model`` (a BertForPreTraining, or a loaded BERT) on the pooled [CLS] vector
    [1, H]."""
    import torch

    with torch.no_grad():
        logits = _torch_model(model).cls.seq_relationship(pooled)[0].float()
    p = float(logits.softmax(dim=-1)[0])
    if not np.isfinite(p):
        raise ValueError("the model computed NaN or infinite next-sentence scores for this pair: its weights are "
                         "damaged (ctxmodels.load refuses such a model when it loads)")
    return p


def _stack_layers(attentions: Any) -> np.ndarray:
    """Tuple of per-layer tensors/arrays ([1, H, T, T] or [H, T, T]) or one array [L, H, T, T] -> float32 array."""
    if isinstance(attentions, (list, tuple)):
        if not attentions:
            raise ValueError("no attention layers given (did the forward pass run with output_attentions=True?)")
        layers = [_to_numpy(a) for a in attentions]
        shapes = {a.shape for a in layers}
        if len(shapes) > 1:
            raise ValueError(f"attention layers have different shapes {sorted(shapes)}")
        A = np.stack(layers)
        if A.ndim == 5:
            if A.shape[1] != 1:
                raise ValueError(f"attention for a batch of {A.shape[1]} sequences; pass one sequence "
                                 "(e.g. [a[i] for a in out.attentions])")
            A = A[:, 0]
    else:
        A = _to_numpy(attentions)
    if A.ndim != 4 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"expected attention [layers, heads, T, T] (or per-layer [1, heads, T, T]), got shape "
                         f"{A.shape}")
    if not np.isfinite(A).all() or (A < 0).any():
        raise ValueError("attention maps contain negative or non-finite values; pass softmax probabilities")
    return A


def _to_numpy(a: Any) -> np.ndarray:
    if hasattr(a, "detach"):  # torch tensor, without importing torch for numpy users
        a = a.detach().float().cpu().numpy()
    return np.asarray(a, dtype=np.float32)
