"""ELMo: a character-based token encoder under a forward and a backward LSTM language model.

The design (and the numbers, to 1e-6) follow the published bilm-tf implementation:

* token encoder: character embedding -> one Conv1d per filter width, max-pooled over positions -> activation
  -> highway layers -> linear projection. Its output is ELMo's layer 0: context-free, one vector per word.
* two LSTM stacks with separate weights; the forward one reads left to right, the backward one right to left.
  Each LSTM layer is TensorFlow's ``LSTMCell`` with a projection (``num_proj``), ``cell_clip`` and
  ``proj_clip``; layers above the first add their input to their output (skip connections).
* per token the model returns layer 0 duplicated to 2P (``[e; e]``) and every LSTM layer's ``[fwd; bwd]``.

Shapes: B batch, T positions (including whatever boundaries the caller put in), C characters per token,
P projection dim, H LSTM cell dim, L LSTM layers. Padding sits at the end of each row (``mask`` is a prefix);
the backward LM reverses each sentence within its own length, so padding never changes any real output.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .bounds import float_range, int_range
from .char_ids import MAX_CHARS, N_CHARACTERS, batch_to_char_ids
from .model_files import check_model_bytes, check_number, shown

# ----------------------------------------------------------------------------------------------------------
# Config


@dataclass
class CharCNNConfig:
    embedding_dim: int = 16
    filters: list[list[int]] = field(
        default_factory=lambda: [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]
    )
    n_highway: int = 1
    activation: str = "relu"
    n_characters: int = N_CHARACTERS
    max_characters_per_token: int = MAX_CHARS

    @property
    def n_filters(self) -> int:
        return sum(count for _, count in self.filters)


@dataclass
class LSTMConfig:
    dim: int = 1024  # H, the cell size
    projection_dim: int = 128  # P, the output (and recurrent state) size
    n_layers: int = 2
    cell_clip: float | None = 3.0
    proj_clip: float | None = 3.0
    use_skip_connections: bool = True


#: the range of every numeric field of :class:`ElmoConfig` (far beyond any published ELMo; memory is checked too)
LIMITS = {
    "char_cnn.embedding.dim": int_range(1, 4_096),
    "char_cnn.max_characters_per_token": int_range(3, 1_024),
    "char_cnn.filters count": int_range(1, 65_536),
    "char_cnn.n_filters (the filter counts together)": int_range(1, 65_536),
    "char_cnn.n_highway": int_range(0, 64),
    "lstm.dim": int_range(1, 65_536),
    "lstm.projection_dim": int_range(1, 16_384),
    "lstm.n_layers": int_range(1, 64),
    "lstm.cell_clip": float_range(0, 1e6, lo_open=True),
    "lstm.proj_clip": float_range(0, 1e6, lo_open=True),
    "n_tokens_vocab": int_range(0, 10_000_000),
    "dropout": float_range(0, 1, hi_open=True),
}
MAX_FILTER_WIDTHS = 64


def options_error(msg: str) -> ValueError:
    return ValueError(f"ELMo options: {msg}")


@dataclass
class ElmoConfig:
    """Mirrors the published ``options.json`` (read and written by :mod:`ctxmodels.formats.allennlp`)."""

    char_cnn: CharCNNConfig = field(default_factory=CharCNNConfig)
    lstm: LSTMConfig = field(default_factory=LSTMConfig)
    n_tokens_vocab: int = 0  # size of the LM head's output vocabulary; 0 = no head (like published files)
    dropout: float = 0.1  # on the input of every LSTM layer while training, as bilm-tf

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Every field checked (type, range, NaN) before any model is built; ValueError naming the field."""
        c, s = self.char_cnn, self.lstm
        if not isinstance(c, CharCNNConfig) or not isinstance(s, LSTMConfig):
            raise options_error("char_cnn and lstm must be CharCNNConfig and LSTMConfig")

        def check(name: str, value: Any) -> None:
            try:
                check_number(LIMITS[name], name, value)
            except ValueError as e:
                raise options_error(str(e)) from None

        check("char_cnn.embedding.dim", c.embedding_dim)
        check("char_cnn.max_characters_per_token", c.max_characters_per_token)
        if not isinstance(c.filters, (list, tuple)) or not c.filters:
            raise options_error("char_cnn.filters must list at least one [width, count] pair")
        if len(c.filters) > MAX_FILTER_WIDTHS:
            raise options_error(f"char_cnn.filters lists {len(c.filters)} filter widths; at most "
                                f"{MAX_FILTER_WIDTHS} are allowed")
        for f in c.filters:
            if not isinstance(f, (list, tuple)) or len(f) != 2 or not all(
                    isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in f):
                raise options_error(f"char_cnn.filters entries must be [width, count] positive ints, got {shown(f)}")
            if f[0] > c.max_characters_per_token:
                raise options_error(f"filter width {f[0]} exceeds max_characters_per_token "
                                    f"{c.max_characters_per_token}")
            check("char_cnn.filters count", f[1])
        check("char_cnn.n_filters (the filter counts together)", c.n_filters)
        if not isinstance(c.activation, str) or c.activation not in ("relu", "tanh"):
            raise options_error(f"char_cnn.activation must be 'relu' or 'tanh', got {shown(c.activation)}")
        check("char_cnn.n_highway", c.n_highway)
        if type(c.n_characters) is not int or c.n_characters != N_CHARACTERS:
            raise options_error(f"char_cnn.n_characters must be {N_CHARACTERS} (261 or 262 in options.json), "
                                f"got {shown(c.n_characters)}")
        for name in ("dim", "projection_dim", "n_layers"):
            check(f"lstm.{name}", getattr(s, name))
        for name in ("cell_clip", "proj_clip"):
            if getattr(s, name) is not None:
                check(f"lstm.{name}", getattr(s, name))
        if not isinstance(s.use_skip_connections, bool):
            raise options_error(f"lstm.use_skip_connections must be true or false, got {shown(s.use_skip_connections)}")
        check("n_tokens_vocab", self.n_tokens_vocab)
        check("dropout", self.dropout)
        check_model_bytes(self.num_parameters(), "this ELMo configuration")

    def num_parameters(self) -> int:
        """Parameters of an :class:`ElmoLanguageModel` of this config (with its softmax when ``n_tokens_vocab``)."""
        c, s = self.char_cnn, self.lstm
        D, F, P, H, V = c.embedding_dim, c.n_filters, s.projection_dim, s.dim, self.n_tokens_vocab
        cnn = c.n_characters * D + sum(D * width * count + count for width, count in c.filters)
        cnn += c.n_highway * 2 * (F * F + F) + F * P + P
        lstm = 2 * s.n_layers * (P * 4 * H + 4 * H + 4 * H * P + H * P)
        return cnn + lstm + (P * V + V if V else 0)

    # -- presets -----------------------------------------------------------------------------------------
    @classmethod
    def preset(cls, name: str, **overrides: Any) -> ElmoConfig:
        """A named size. ``overrides`` set top-level fields (``n_tokens_vocab``, ``dropout``)."""
        if name not in PRESETS:
            raise ValueError(f"unknown ELMo preset {name!r}; choose one of {', '.join(PRESETS)}")
        config = copy.deepcopy(PRESETS[name])
        config = dataclasses.replace(config, **overrides)
        return config


_PUBLISHED_FILTERS = [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]  # 2048 in all

PRESETS: dict[str, ElmoConfig] = {
    # Sized for a 2-core CPU: the time-step loop of the LSTM dominates, so the CPU presets keep H modest.
    "tiny": ElmoConfig(
        CharCNNConfig(8, [[1, 16], [2, 16], [3, 32], [4, 64]], n_highway=1),
        LSTMConfig(dim=128, projection_dim=32),
    ),
    "mini": ElmoConfig(
        CharCNNConfig(16, [[1, 32], [2, 32], [3, 64], [4, 128], [5, 128]], n_highway=1),
        LSTMConfig(dim=512, projection_dim=128),
    ),
    "small-cpu": ElmoConfig(
        CharCNNConfig(16, [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 256]], n_highway=1),
        LSTMConfig(dim=1024, projection_dim=128),
    ),
    # The sizes of the published AllenNLP models (the "5.5B" one has the original's size).
    "published-small": ElmoConfig(
        CharCNNConfig(16, _PUBLISHED_FILTERS, n_highway=1),
        LSTMConfig(dim=1024, projection_dim=128),
    ),
    "published-medium": ElmoConfig(
        CharCNNConfig(16, _PUBLISHED_FILTERS, n_highway=1),
        LSTMConfig(dim=2048, projection_dim=256),
    ),
    "published-original": ElmoConfig(
        CharCNNConfig(16, _PUBLISHED_FILTERS, n_highway=2),
        LSTMConfig(dim=4096, projection_dim=512),
    ),
}


# ----------------------------------------------------------------------------------------------------------
# Token encoder (layer 0)


class Highway(nn.Module):
    """bilm-tf's highway layer: y = g * relu(x W_t + b_t) + (1 - g) * x with g = sigmoid(x W_c + b_c).

    The names follow the published file: what TensorFlow calls ``carry`` is the gate on the transformed path.
    bilm-tf uses relu here whatever the CNN's activation is.
    """

    def __init__(self, dim: int):
        super().__init__()
        self.carry = nn.Linear(dim, dim)
        self.transform = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate = torch.sigmoid(self.carry(x))
        return gate * F.relu(self.transform(x)) + (1.0 - gate) * x


class CharCNNTokenEncoder(nn.Module):
    def __init__(self, config: CharCNNConfig, projection_dim: int):
        super().__init__()
        self.config = config
        self.char_embedding = nn.Embedding(config.n_characters, config.embedding_dim, padding_idx=0)
        self.convs = nn.ModuleList(nn.Conv1d(config.embedding_dim, count, width) for width, count in config.filters)
        self.highways = nn.ModuleList(Highway(config.n_filters) for _ in range(config.n_highway))
        self.projection = nn.Linear(config.n_filters, projection_dim)
        self.activation = F.relu if config.activation == "relu" else torch.tanh

    def forward(self, char_ids: torch.Tensor) -> torch.Tensor:
        """char_ids [N, C] -> token vectors [N, P]."""
        x = self.char_embedding(char_ids).transpose(1, 2)  # [N, D, C]: Conv1d wants channels first
        # Max over positions, then the activation: the order bilm-tf uses (equal anyway for monotone ones).
        # max(), not amax(): the same values, and its backward scatters to one index where amax's compares the
        # whole conv output against the max (up to a fifth of a training step). Ties are windows of padding only,
        # identical inputs, so the weight gradients are the same either way.
        h = self.activation(torch.cat([conv(x).max(dim=-1).values for conv in self.convs], dim=-1))
        for highway in self.highways:
            h = highway(h)
        return self.projection(h)


# ----------------------------------------------------------------------------------------------------------
# LSTM with projection and clipping (TensorFlow LSTMCell semantics)


class ProjectedLSTMLayer(nn.Module):
    """Weights of one direction of one layer.

    Gate order of ``input_linear`` / ``recurrent_weight`` rows is (i, f, o, g): the three sigmoid gates come
    first so one sigmoid call covers them. The forget-gate bias includes TensorFlow's ``forget_bias`` (1.0),
    which the published files keep outside ``B``. The step itself runs in :func:`_run_lstm_pair`, which
    handles both directions of a layer in one batched call.
    """

    def __init__(self, input_dim: int, cell_dim: int, projection_dim: int):
        super().__init__()
        self.cell_dim = cell_dim
        self.input_linear = nn.Linear(input_dim, 4 * cell_dim)
        self.recurrent_weight = nn.Parameter(torch.empty(4 * cell_dim, projection_dim))
        self.projection = nn.Linear(cell_dim, projection_dim, bias=False)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # Glorot-uniform as TensorFlow's default initialiser; forget bias 1.0 as TensorFlow's forget_bias.
        for w in (self.input_linear.weight, self.recurrent_weight, self.projection.weight):
            nn.init.xavier_uniform_(w)
        with torch.no_grad():
            self.input_linear.bias.zero_()
            self.input_linear.bias[self.cell_dim : 2 * self.cell_dim] = 1.0


LSTMState = tuple[torch.Tensor, torch.Tensor]  # (h [L, 2, B, P], c [L, 2, B, H]); dim 1 = (forward, backward)


def _run_lstm_pair(
    x: torch.Tensor,
    layers: tuple[ProjectedLSTMLayer, ProjectedLSTMLayer],
    h: torch.Tensor,
    c: torch.Tensor,
    cell_clip: float | None,
    proj_clip: float | None,
    step_mask: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Run the forward and backward LSTM of one layer together (batched over the direction axis).

    x [2, B, T, D] (the backward half already reversed), h [2, B, P], c [2, B, H]. ``step_mask`` [T, 1, B, 1]
    freezes the state of rows whose sentence has ended (needed only when the final state is carried on).
    Returns outputs [2, B, T, P] and the final (h, c).
    """
    fwd, bwd = layers
    H = fwd.cell_dim
    # The input half of every gate for all time steps in one matmul; the loop only adds the recurrent half.
    # The input is made time-major before the matmul (a copy of D-wide rows, not of the 4H-wide gates), and the
    # gates are unbound once, so autograd stacks the step gradients in one go (indexing x_gates[t] in the
    # loop would make every step's backward zero-fill it all).
    w_in = torch.stack([fwd.input_linear.weight, bwd.input_linear.weight]).transpose(1, 2)  # [2, D, 4H]
    b_in = torch.stack([fwd.input_linear.bias, bwd.input_linear.bias])[:, None, :]  # [2, 1, 4H]
    B, T = x.shape[1], x.shape[2]
    x_tm = x.transpose(1, 2).reshape(2, T * B, x.shape[3])  # [2, T*B, D]
    x_gates = torch.baddbmm(b_in, x_tm, w_in).view(2, T, B, 4 * H).unbind(1)  # T x [2, B, 4H]
    # Contiguous once per call, so the per-step batched matmuls never copy their weights.
    w_rec = torch.stack([fwd.recurrent_weight.t(), bwd.recurrent_weight.t()])  # [2, P, 4H]
    w_proj = torch.stack([fwd.projection.weight.t(), bwd.projection.weight.t()])  # [2, H, P]
    outputs = []
    for t, x_t in enumerate(x_gates):
        gates = torch.baddbmm(x_t, h, w_rec)
        sig, g = gates.split([3 * H, H], dim=-1)
        i, f, o = torch.sigmoid(sig).chunk(3, dim=-1)
        new_c = torch.addcmul(f * c, i, torch.tanh(g))
        if cell_clip is not None:
            new_c = new_c.clamp(-cell_clip, cell_clip)
        new_h = torch.bmm(o * torch.tanh(new_c), w_proj)
        if proj_clip is not None:
            new_h = new_h.clamp(-proj_clip, proj_clip)
        if step_mask is not None:
            new_h = torch.where(step_mask[t], new_h, h)
            new_c = torch.where(step_mask[t], new_c, c)
        h, c = new_h, new_c
        outputs.append(h)
    if not outputs:  # a batch of empty rows
        return x.new_zeros(2, B, 0, h.shape[-1]), h, c
    return torch.stack(outputs, dim=2), h, c


def _reverse_index(lengths: torch.Tensor, T: int) -> torch.Tensor:
    """Index [B, T] that reverses each row's first ``length`` positions and leaves the padding in place."""
    t = torch.arange(T, device=lengths.device)[None, :]
    rev = lengths[:, None] - 1 - t
    return torch.where(rev >= 0, rev, t)


@dataclass
class ElmoBiLMOutput:
    token_embedding: torch.Tensor  # [B, T, P]
    forward_layers: list[torch.Tensor]  # L x [B, T, P]
    backward_layers: list[torch.Tensor]  # L x [B, T, P]
    mask: torch.Tensor  # [B, T] bool
    state: LSTMState | None = None  # final LSTM state per row, when asked for (stateful use)

    def layers(self) -> torch.Tensor:
        """[L+1, B, T, 2P]: layer 0 = [e; e], layer k = [fwd_k; bwd_k]."""
        e = self.token_embedding
        out = [torch.cat([e, e], dim=-1)]
        out += [torch.cat([f, b], dim=-1) for f, b in zip(self.forward_layers, self.backward_layers)]
        return torch.stack(out)


class ElmoBiLM(nn.Module):
    def __init__(self, config: ElmoConfig):
        super().__init__()
        self.config = config
        s = config.lstm
        P = s.projection_dim
        self.token_encoder = CharCNNTokenEncoder(config.char_cnn, P)
        self.forward_lstm = nn.ModuleList(ProjectedLSTMLayer(P, s.dim, P) for _ in range(s.n_layers))
        self.backward_lstm = nn.ModuleList(ProjectedLSTMLayer(P, s.dim, P) for _ in range(s.n_layers))
        self.dropout = nn.Dropout(config.dropout)
        self._init_token_encoder()

    @torch.no_grad()
    def _init_token_encoder(self) -> None:
        # bilm-tf's initialisation: uniform characters, convolutions as Kim et al. (relu) or Glorot (tanh),
        # highway gate bias -2 (so each highway layer starts out mostly passing its input through).
        enc, cnn = self.token_encoder, self.config.char_cnn
        nn.init.uniform_(enc.char_embedding.weight, -1.0, 1.0)
        enc.char_embedding.weight[0].zero_()
        for conv, (width, _) in zip(enc.convs, cnn.filters):
            if cnn.activation == "relu":
                nn.init.uniform_(conv.weight, -0.05, 0.05)
            else:
                nn.init.normal_(conv.weight, std=(1.0 / (width * cnn.embedding_dim)) ** 0.5)
            conv.bias.zero_()
        for hw in enc.highways:
            dim = hw.carry.in_features
            nn.init.normal_(hw.carry.weight, std=(1.0 / dim) ** 0.5)
            nn.init.normal_(hw.transform.weight, std=(1.0 / dim) ** 0.5)
            hw.carry.bias.fill_(-2.0)
            hw.transform.bias.zero_()
        nn.init.normal_(enc.projection.weight, std=(1.0 / enc.projection.in_features) ** 0.5)
        enc.projection.bias.zero_()

    @property
    def output_dim(self) -> int:
        return 2 * self.config.lstm.projection_dim

    @property
    def num_layers(self) -> int:
        return self.config.lstm.n_layers + 1

    def _check_inputs(self, char_ids: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        C = self.config.char_cnn.max_characters_per_token
        if char_ids.dim() != 3 or char_ids.shape[-1] != C:
            raise ValueError(f"char_ids must have shape [batch, tokens, {C}], got {tuple(char_ids.shape)}; "
                             "make them with ctxmodels.char_ids.batch_to_char_ids")
        if char_ids.dtype not in (torch.long, torch.int32, torch.int64):
            raise ValueError(f"char_ids must be integer ids, got dtype {char_ids.dtype}")
        n_chars = self.config.char_cnn.n_characters
        if char_ids.numel() and (char_ids.min() < 0 or char_ids.max() >= n_chars):
            raise ValueError(f"char_ids must lie in [0, {n_chars}), got {int(char_ids.min())}..{int(char_ids.max())}")
        if mask is None:
            mask = (char_ids > 0).any(dim=-1)
        mask = mask.to(torch.bool)
        if mask.shape != char_ids.shape[:2]:
            raise ValueError(f"mask shape {tuple(mask.shape)} does not match char_ids {tuple(char_ids.shape[:2])}")
        lengths = mask.sum(dim=1)
        prefix = torch.arange(mask.shape[1], device=mask.device)[None, :] < lengths[:, None]
        if not torch.equal(prefix, mask):
            raise ValueError("mask must mark each row's real tokens first and padding only at the end")
        return mask

    def forward(
        self,
        char_ids: torch.Tensor,
        mask: torch.Tensor | None = None,
        state: LSTMState | None = None,
        return_state: bool = False,
    ) -> ElmoBiLMOutput:
        """char_ids [B, T, C] (0 = padded position), mask [B, T] (default: tokens with any id > 0).

        ``state`` continues from a previous batch row by row (stateful use, as the published recordings);
        ``return_state`` returns each row's state after its last real token (rows with no tokens keep theirs).
        """
        mask = self._check_inputs(char_ids, mask)
        return self.contextualize(self.embed_tokens(char_ids, mask), mask, state, return_state)

    def embed_tokens(self, char_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The char CNN's token vectors [B, T, P] for checked ``char_ids`` [B, T, C] and ``mask`` [B, T]."""
        B, T = mask.shape
        # Encode each distinct spelling once (a batch of text repeats its frequent words many times), and only
        # real tokens: padded positions stay exactly zero.
        spellings, inverse = torch.unique(char_ids[mask], dim=0, return_inverse=True)
        encoded = self.token_encoder(spellings)[inverse]
        token_embedding = encoded.new_zeros(B, T, self.config.lstm.projection_dim)
        token_embedding[mask] = encoded
        return token_embedding

    def contextualize(
        self,
        token_embedding: torch.Tensor,
        mask: torch.Tensor,
        state: LSTMState | None = None,
        return_state: bool = False,
    ) -> ElmoBiLMOutput:
        """Both directions' LSTM layers over token vectors [B, T, P] (:meth:`embed_tokens`, or vectors made
        otherwise: integrated gradients runs them on blends of two sentences' token vectors)."""
        B, T = mask.shape
        s = self.config.lstm
        P, H, L = s.projection_dim, s.dim, s.n_layers
        if state is None:
            h0 = token_embedding.new_zeros(L, 2, B, P)
            c0 = token_embedding.new_zeros(L, 2, B, H)
        else:
            h0, c0 = state
            if tuple(h0.shape) != (L, 2, B, P) or tuple(c0.shape) != (L, 2, B, H):
                raise ValueError(f"state shapes {tuple(h0.shape)}, {tuple(c0.shape)} do not fit this batch; "
                                 f"expected {(L, 2, B, P)} and {(L, 2, B, H)} (same batch size as before)")

        lengths = mask.sum(dim=1)
        rev = _reverse_index(lengths, T)[..., None].expand(B, T, P)
        x = torch.stack([token_embedding, token_embedding.gather(1, rev)])  # [2, B, T, P]
        step_mask = mask.t()[:, None, :, None] if return_state else None  # [T, 1, B, 1]
        out_mask = mask[None, :, :, None].to(x.dtype)

        fwd_layers, bwd_layers, h_n, c_n = [], [], [], []
        for k in range(L):
            x_in = self.dropout(x)
            y, h, c = _run_lstm_pair(x_in, (self.forward_lstm[k], self.backward_lstm[k]), h0[k], c0[k],
                                     s.cell_clip, s.proj_clip, step_mask)
            if k > 0 and s.use_skip_connections:
                y = y + x_in
            y = y * out_mask
            fwd_layers.append(y[0])
            bwd_layers.append(y[1].gather(1, rev))  # back to reading order
            h_n.append(h)
            c_n.append(c)
            x = y
        final = (torch.stack(h_n), torch.stack(c_n)) if return_state else None
        return ElmoBiLMOutput(token_embedding, fwd_layers, bwd_layers, mask, final)

    def layers(self, char_ids: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """[L+1, B, T, 2P]: layer 0 = the token embedding duplicated, then each LSTM layer's [fwd; bwd]."""
        return self(char_ids, mask).layers()

    def embed_sentences(self, sentences: list[list[str]]) -> tuple[torch.Tensor, torch.Tensor]:
        """All layers for tokenised sentences, with <S> and </S> added for the LSTMs and removed again.

        Returns (layers [L+1, B, T, 2P], mask [B, T]) where T is the longest sentence.
        """
        char_ids, mask = batch_to_char_ids(sentences, add_boundaries=True,
                                           max_chars=self.config.char_cnn.max_characters_per_token)
        device = next(self.parameters()).device
        layers = self.layers(char_ids.to(device), mask.to(device))
        lengths = mask.sum(dim=1) - 2
        T = max(int(lengths.max()) if len(sentences) else 0, 0)
        words = layers[:, :, 1 : T + 1]
        word_mask = torch.arange(T)[None, :] < lengths[:, None]
        return words * word_mask[None, :, :, None].to(words.device, words.dtype), word_mask


class ElmoLanguageModel(nn.Module):
    """The biLM plus an optional softmax over an output vocabulary, shared by both directions (bilm-tf).

    Published ELMo files carry no softmax: such a model gives representations but cannot compute perplexity.
    ``vocab`` (the output words, index = softmax row) is set by the loader when the checkpoint has one.
    """

    def __init__(self, config: ElmoConfig, bilm: ElmoBiLM | None = None):
        super().__init__()
        self.config = config
        self.bilm = bilm if bilm is not None else ElmoBiLM(config)  # an existing biLM is wrapped, not copied
        P = config.lstm.projection_dim
        self.softmax = nn.Linear(P, config.n_tokens_vocab) if config.n_tokens_vocab > 0 else None
        if self.softmax is not None:
            nn.init.normal_(self.softmax.weight, std=1.0 / P**0.5)
            nn.init.zeros_(self.softmax.bias)
        self.vocab: list[str] | None = None

    @property
    def has_lm_head(self) -> bool:
        return self.softmax is not None

    def forward(self, char_ids: torch.Tensor, mask: torch.Tensor | None = None, **kwargs: Any) -> ElmoBiLMOutput:
        return self.bilm(char_ids, mask, **kwargs)

    def require_lm_head(self) -> nn.Linear:
        if self.softmax is None:
            raise ValueError("this ELMo has no language-model head (published ELMo files carry no softmax "
                             "weights), so it gives word representations but cannot compute perplexity; "
                             "train one with `ctxmodels train elmo` to get a model with a head")
        return self.softmax

    def full_softmax_logits(self, states: torch.Tensor) -> torch.Tensor:
        """Logits over the whole output vocabulary for LSTM top-layer states [..., P] -> [..., V]."""
        return self.require_lm_head()(states)
