"""BERT: the encoder, its pre-training heads and its configuration.

The module tree mirrors Hugging Face's ``modeling_bert`` attribute by attribute, so ``state_dict()`` keys are
the checkpoint keys people already have (``bert.encoder.layer.0.attention.self.query.weight``,
``cls.predictions.transform.dense.bias``, ...) and loading needs no mapping table.

Two attention paths give the same numbers: the fused ``F.scaled_dot_product_attention`` (used unless attention
maps are asked for) and an explicit softmax that also returns the probabilities [B, heads, T, T].

Pre-training computes the vocabulary projection only at the positions chosen for prediction (``mlm_positions``),
which is most of the speed-up over running the decoder on every token. For the same reason the last encoder
block runs only at those positions and [CLS]: its other rows feed nothing in pre-training, and its keys and
values (which do need every position) come from the block below.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .bounds import float_range, int_range
from .checkpoint import CheckpointError, read_json, write_json
from .model_files import check_model_bytes, check_number, shown

# Activation names as Hugging Face spells them in config.json. "gelu" is the exact (erf) GELU of the paper.
ACTIVATIONS = {
    "gelu": F.gelu,
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "relu": F.relu,
    "silu": F.silu,
    "swish": F.silu,
}


class Dropout(nn.Dropout):
    """Inverted dropout with the same distribution as ``nn.Dropout``, faster on the CPU.

    ATen's CPU dropout samples a Bernoulli per element; drawing uniforms and comparing them with p measured
    1.7-1.9x faster forward + backward (3.2 vs 1.8 ms for 8x128x256 floats, 12.0 vs 6.5 ms for 8x128x1024, one
    thread), and a BERT step has 3 dropouts per block. Other devices keep the fused ``F.dropout``.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        if x.device.type != "cpu" or self.p >= 1.0:
            return F.dropout(x, self.p, True)
        keep = torch.rand(x.shape, device=x.device).ge_(self.p).mul_(1.0 / (1.0 - self.p))
        return x * keep.to(x.dtype)


# name -> (layers, hidden); heads = hidden / 64 and feed-forward = 4 x hidden, as in the BERT papers.
PRESETS: dict[str, tuple[int, int]] = {
    "tiny": (2, 128),
    "mini": (4, 256),
    "small": (4, 512),
    "medium": (8, 512),
    "base": (12, 768),
    "large": (24, 1024),
}


#: the range of every numeric field of :class:`BertConfig` (far beyond any published BERT; memory is checked too)
LIMITS = {
    "vocab_size": int_range(1, 10_000_000),
    "hidden_size": int_range(1, 65_536),
    "num_hidden_layers": int_range(1, 256),
    "num_attention_heads": int_range(1, 4_096),
    "intermediate_size": int_range(1, 1_048_576),
    "max_position_embeddings": int_range(1, 131_072),
    "type_vocab_size": int_range(1, 1_024),
    "hidden_dropout_prob": float_range(0, 1, hi_open=True),
    "attention_probs_dropout_prob": float_range(0, 1, hi_open=True),
    "initializer_range": float_range(0, 10),
    "layer_norm_eps": float_range(0, 1, lo_open=True),
}
#: what a config.json must state (the defaults are bert-base's, which a checkpoint of another size does not fit)
REQUIRED = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")


@dataclass
class BertConfig:
    """Hyper-parameters with Hugging Face's ``config.json`` field names."""

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0

    def __post_init__(self) -> None:
        """Every field checked against :data:`LIMITS` (type, range, NaN), before any model is built; ValueError
        naming the field, its value and the allowed range."""
        if not isinstance(self.hidden_act, str) or self.hidden_act not in ACTIVATIONS:
            raise ValueError(f"hidden_act {shown(self.hidden_act)} is not supported; use one of {sorted(ACTIVATIONS)}")
        for name, bound in LIMITS.items():
            check_number(bound, name, getattr(self, name))
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size {self.hidden_size} is not a multiple of num_attention_heads {self.num_attention_heads}"
            )
        check_number(int_range(0, self.vocab_size - 1), "pad_token_id (a row of the vocabulary)", self.pad_token_id)
        check_model_bytes(self.num_parameters(), "this BERT configuration")

    def num_parameters(self) -> int:
        """Parameters of a :class:`BertForPreTraining` with both heads (decoder tied), from the config alone."""
        V, H, L, I = self.vocab_size, self.hidden_size, self.num_hidden_layers, self.intermediate_size
        embeddings = (V + self.max_position_embeddings + self.type_vocab_size) * H + 2 * H
        layer = 4 * (H * H + H) + 2 * H + (H * I + I) + (I * H + H) + 2 * H
        pooler = H * H + H
        mlm = H * H + H + 2 * H + V  # transform dense + LayerNorm + output bias (the decoder is the embeddings)
        nsp = 2 * H + 2
        return embeddings + L * layer + pooler + mlm + nsp

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> BertConfig:
        """A named size: tiny (2 layers/128), mini (4/256), small (4/512), medium (8/512), base (12/768), large."""
        if name not in PRESETS:
            raise ValueError(f"unknown BERT preset {name!r}; choose one of {', '.join(PRESETS)}")
        layers, hidden = PRESETS[name]
        fields = dict(
            hidden_size=hidden,
            num_hidden_layers=layers,
            num_attention_heads=hidden // 64,
            intermediate_size=4 * hidden,
        )
        fields.update(overrides)
        return cls(**fields)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        # What transformers needs to pick the right class when it reads our config.json.
        d["model_type"] = "bert"
        d["architectures"] = ["BertForPreTraining"]
        d["position_embedding_type"] = "absolute"
        d["tie_word_embeddings"] = True
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BertConfig:
        """Read a Hugging Face style dict; unknown keys are ignored, non-BERT configs are refused."""
        model_type = d.get("model_type", "bert")
        if model_type != "bert":
            raise ValueError(f"model_type is {shown(model_type)}, not 'bert': this is not a BERT checkpoint")
        pos_type = d.get("position_embedding_type", "absolute")
        if pos_type != "absolute":
            raise ValueError(f"position_embedding_type {shown(pos_type)} is not supported (only 'absolute')")
        if d.get("is_decoder") or d.get("add_cross_attention"):
            raise ValueError("decoder / cross-attention BERT configurations are not supported")
        missing = [k for k in REQUIRED if k not in d]
        if missing:
            raise ValueError(f"the required field(s) {', '.join(missing)} are missing; a BERT config.json states "
                             f"{', '.join(REQUIRED)}")
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in d.items() if k in names}
        if kwargs.get("pad_token_id") is None:
            kwargs.pop("pad_token_id", None)
        return cls(**kwargs)

    def save(self, directory: str | Path) -> None:
        write_json(Path(directory) / "config.json", self.to_dict())

    @classmethod
    def load(cls, directory_or_file: str | Path) -> BertConfig:
        path = Path(directory_or_file)
        if path.is_dir():
            path = path / "config.json"
        d = read_json(path)
        try:
            return cls.from_dict(d)
        except (TypeError, ValueError) as e:
            raise CheckpointError(f"{path}: {e}") from e

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads


@dataclass
class BertOutput:
    """What a forward pass returns. Fields a model cannot or was not asked to produce are None."""

    last_hidden_state: torch.Tensor  # [B, T, H]; [B, 1 + P, H] with mlm_positions (see BertForPreTraining)
    prediction_logits: torch.Tensor | None = None  # [B, T, V], or [B, P, V] with mlm_positions
    seq_relationship_logits: torch.Tensor | None = None  # [B, 2]
    hidden_states: tuple[torch.Tensor, ...] | None = None  # L+1 tensors [B, T, H]; index 0 = embeddings
    attentions: tuple[torch.Tensor, ...] | None = None  # L tensors [B, heads, T, T]
    pooler_output: torch.Tensor | None = None  # [B, H]


# ----------------------------------------------------------------------------------------------------------
# the encoder


class BertEmbeddings(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        T = input_ids.shape[1]
        # Slicing the weight needs no position_ids buffer (and so no extra key in the checkpoint).
        x = self.word_embeddings(input_ids) + self.position_embeddings.weight[:T]
        if token_type_ids is None:
            x = x + self.token_type_embeddings.weight[0]
        else:
            x = x + self.token_type_embeddings(token_type_ids)
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_dim = config.head_dim
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = Dropout(config.attention_probs_dropout_prob)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)  # [B, heads, T, d]

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None,
        output_attentions: bool = False,
        queries: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``mask``: bool [B, 1, 1, T], True where a key may be attended to; None = attend everywhere.
        ``queries`` [B, Q, H]: attend from these rows only (keys and values still come from all of ``x``)."""
        # (Fusing the three projections into one GEMM by concatenating the weights measured no faster on the
        # CPU in training and slower for short inputs, where copying the weights costs more than the GEMM.)
        H = x.shape[-1]
        q = self._heads(self.query(x if queries is None else queries))
        k, v = self._heads(self.key(x)), self._heads(self.value(x))
        B, Q = q.shape[0], q.shape[2]
        # SDPA's CPU kernels fall back to their math path (with ATen's slow dropout) when dropout is on, so
        # training on the CPU takes the explicit path with our dropout: same arithmetic, less time.
        explicit = output_attentions or (self.training and self.dropout.p > 0 and x.device.type == "cpu")
        if explicit:
            scores = (q * (1.0 / math.sqrt(self.head_dim))) @ k.transpose(-1, -2)  # scaling q: fewer elements
            if mask is not None:
                scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
            probs = scores.softmax(dim=-1)
            context = self.dropout(probs) @ v
            probs = probs if output_attentions else None
        else:
            probs = None
            p = self.dropout.p if self.training else 0.0
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        return context.transpose(1, 2).reshape(B, Q, H), probs


class BertSelfOutput(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class BertAttention(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.self = BertSelfAttention(config)  # "self" is the checkpoint key: attention.self.query ...
        self.output = BertSelfOutput(config)

    def forward(self, x, mask, output_attentions=False, queries=None):
        context, probs = self.self(x, mask, output_attentions, queries)
        return self.output(context, x if queries is None else queries), probs


class BertIntermediate(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act = ACTIVATIONS[config.hidden_act]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.dense(x))


class BertLayerOutput(nn.Module):
    """The feed-forward's down projection + add & norm (Hugging Face calls this class ``BertOutput``)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class BertLayer(nn.Module):
    """One post-LayerNorm block: attention, add & norm, feed-forward, add & norm."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertLayerOutput(config)

    def forward(self, x, mask, output_attentions=False, rows: torch.Tensor | None = None):
        """``rows`` [B, Q]: compute the block's output only at these positions (-> [B, Q, H])."""
        queries = None if rows is None else _gather_rows(x, rows)
        x, probs = self.attention(x, mask, output_attentions, queries)
        return self.output(self.intermediate(x), x), probs


def _gather_rows(x: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """x [B, T, H], rows [B, Q] -> x at those positions, [B, Q, H]."""
    return torch.gather(x, 1, rows.long().unsqueeze(-1).expand(-1, -1, x.shape[-1]))


class BertEncoder(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.layer = nn.ModuleList(BertLayer(config) for _ in range(config.num_hidden_layers))


class BertPooler(nn.Module):
    """tanh(dense(h_[CLS])): the sentence vector the NSP head reads."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(hidden[:, 0]))


def _init_weights(module: nn.Module, std: float) -> None:
    """BERT's initialisation: N(0, std) weights, zero biases, identity LayerNorms, a zero [PAD] embedding."""
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, std=std)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, std=std)
        if module.padding_idx is not None:
            with torch.no_grad():
                module.weight[module.padding_idx].zero_()
    elif isinstance(module, nn.LayerNorm):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)


class BertModel(nn.Module):
    """The bare encoder: embeddings, ``num_hidden_layers`` blocks and (optionally) the pooler."""

    def __init__(self, config: BertConfig, add_pooling_layer: bool = True):
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None
        self.apply(lambda m: _init_weights(m, config.initializer_range))

    def _check_input(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None) -> None:
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be [batch, length], got shape {tuple(input_ids.shape)}")
        T = input_ids.shape[1]
        if T > self.config.max_position_embeddings:
            raise ValueError(
                f"input has {T} tokens but this model has only {self.config.max_position_embeddings} positions "
                "(max_position_embeddings); truncate it, e.g. tokenizer.encode(text, max_length=...)"
            )
        # Range checks cost a reduction; training data is built from the model's own vocabulary, so only
        # check outside training, where ids come from users and other tokenizers.
        if not self.training and input_ids.numel():
            lo, hi = int(input_ids.min()), int(input_ids.max())
            if lo < 0 or hi >= self.config.vocab_size:
                raise ValueError(
                    f"token id {hi if hi >= self.config.vocab_size else lo} is outside the vocabulary "
                    f"(size {self.config.vocab_size}): was the text encoded with this model's tokenizer?"
                )
            if token_type_ids is not None and token_type_ids.numel():
                if int(token_type_ids.min()) < 0 or int(token_type_ids.max()) >= self.config.type_vocab_size:
                    raise ValueError(f"token_type_ids must lie in [0, {self.config.type_vocab_size})")

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        output_hidden_states: bool = False,
        output_attentions: bool = False,
        last_layer_positions: torch.Tensor | None = None,
    ) -> BertOutput:
        """``last_layer_positions`` [B, Q]: run the last block only at these positions, so
        ``last_hidden_state`` is [B, Q, H] (rows in that order). Nothing downstream of pre-training reads the
        other rows, and skipping them saves most of a block. Put position 0 first if the pooler is wanted:
        it reads row 0. Ignored (full output) when hidden states or attentions are requested."""
        self._check_input(input_ids, token_type_ids)
        if output_hidden_states or output_attentions:
            last_layer_positions = None
        mask = None
        if attention_mask is not None and not bool(attention_mask.all()):
            # Without a mask SDPA can take its fastest kernel, so only pass one when something is padded.
            mask = attention_mask.bool()[:, None, None, :]
        x = self.embeddings(input_ids, token_type_ids)
        hidden_states = [x] if output_hidden_states else None
        attentions = [] if output_attentions else None
        last = len(self.encoder.layer) - 1
        for i, layer in enumerate(self.encoder.layer):
            x, probs = layer(x, mask, output_attentions, last_layer_positions if i == last else None)
            if hidden_states is not None:
                hidden_states.append(x)
            if attentions is not None:
                attentions.append(probs)
        return BertOutput(
            last_hidden_state=x,
            hidden_states=tuple(hidden_states) if hidden_states is not None else None,
            attentions=tuple(attentions) if attentions is not None else None,
            pooler_output=self.pooler(x) if self.pooler is not None else None,
        )


# ----------------------------------------------------------------------------------------------------------
# pre-training heads


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.act = ACTIVATIONS[config.hidden_act]
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.act(self.dense(x)))


class BertLMPredictionHead(nn.Module):
    """dense + GELU + LayerNorm, then the decoder (weights tied to the word embeddings) plus its own bias."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(self.transform(x), self.decoder.weight, self.bias)


class BertPreTrainingHeads(nn.Module):
    def __init__(self, config: BertConfig, mlm_head: bool = True, nsp_head: bool = True):
        super().__init__()
        self.predictions = BertLMPredictionHead(config) if mlm_head else None
        self.seq_relationship = nn.Linear(config.hidden_size, 2) if nsp_head else None


class BertForPreTraining(nn.Module):
    """BERT with its masked-LM and next-sentence heads.

    A model loaded from an encoder-only checkpoint (a Hugging Face ``BertModel`` save) has no MLM head
    (``has_mlm_head`` is False) and maybe no pooler / NSP head; it still gives hidden states and attention.
    """

    def __init__(
        self, config: BertConfig, mlm_head: bool = True, nsp_head: bool = True, add_pooling_layer: bool = True
    ):
        super().__init__()
        if nsp_head and not add_pooling_layer:
            raise ValueError("the NSP head reads the pooled [CLS] vector: it needs add_pooling_layer=True")
        self.config = config
        self.bert = BertModel(config, add_pooling_layer=add_pooling_layer)
        self.cls = BertPreTrainingHeads(config, mlm_head=mlm_head, nsp_head=nsp_head)
        self.cls.apply(lambda m: _init_weights(m, config.initializer_range))
        self.tie_weights()

    @property
    def has_mlm_head(self) -> bool:
        return self.cls.predictions is not None

    @property
    def has_nsp_head(self) -> bool:
        return self.cls.seq_relationship is not None

    @property
    def decoder_is_tied(self) -> bool:
        return self.has_mlm_head and self.cls.predictions.decoder.weight is self.bert.embeddings.word_embeddings.weight

    def tie_weights(self) -> None:
        """Share the decoder weight with the word embeddings (one Parameter, as in the paper)."""
        if self.has_mlm_head:
            self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight

    def untie_weights(self) -> None:
        """Give the decoder its own copy (for checkpoints whose decoder differs from the embeddings)."""
        if self.has_mlm_head:
            w = self.bert.embeddings.word_embeddings.weight
            self.cls.predictions.decoder.weight = nn.Parameter(w.detach().clone())

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        mlm_positions: torch.Tensor | None = None,
        output_hidden_states: bool = False,
        output_attentions: bool = False,
    ) -> BertOutput:
        """``mlm_positions`` [B, P]: if given, the vocabulary projection runs only at those positions (logits
        [B, P, V]), and so does the last encoder block, plus [CLS] for the pooler: ``last_hidden_state`` is
        then [B, 1 + P, H], the [CLS] row followed by the rows at ``mlm_positions``. Requesting hidden states
        or attentions turns that saving off (every state is then full length)."""
        rows = None
        if mlm_positions is not None:
            B, T = input_ids.shape
            if mlm_positions.dim() != 2 or mlm_positions.shape[0] != B:
                raise ValueError(f"mlm_positions must be [batch, P] with batch {B}, got {tuple(mlm_positions.shape)}")
            if not self.training and mlm_positions.numel():
                if int(mlm_positions.min()) < 0 or int(mlm_positions.max()) >= T:
                    raise ValueError(f"mlm_positions must lie in [0, {T}) for inputs of length {T}")
            if self.has_mlm_head and not (output_hidden_states or output_attentions):
                cls_row = torch.zeros(B, 1, dtype=torch.long, device=mlm_positions.device)
                rows = torch.cat([cls_row, mlm_positions.long()], dim=1)
        out = self.bert(input_ids, token_type_ids, attention_mask, output_hidden_states, output_attentions,
                        last_layer_positions=rows)
        if self.has_mlm_head:
            seq = out.last_hidden_state
            if rows is not None:
                seq = seq[:, 1:]
            elif mlm_positions is not None:
                seq = _gather_rows(seq, mlm_positions)
            out.prediction_logits = self.cls.predictions(seq)
        if self.has_nsp_head and out.pooler_output is not None:
            out.seq_relationship_logits = self.cls.seq_relationship(out.pooler_output)
        return out

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
