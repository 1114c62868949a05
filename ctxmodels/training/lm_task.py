"""What ``train roberta`` and ``train gpt`` share: a transformers language model trained by the shared trainer on
whole sentences packed across documents (:mod:`.lm_data`), at the size of one of BERT's presets, with the run's
WordPiece vocabulary, saved in transformers' own layout.

:class:`PackedSettings` are BERT's settings without next-sentence pairs, ``--init-from`` or sinusoidal positions;
:class:`LanguageModelTask` is the trainer's side (batches, loss, held-out figures, the folder, the card), a
subclass saying how a batch is scored; :func:`build_lm_task` prepares the data as ``train bert`` does (cached in
``OUT/data``) and builds the model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from ..checkpoint import CheckpointError, load_tensors, read_json, write_json
from .bert_corpus import prepare_on_every_rank
from .bert_data import VocabInfo
from .bert_task import BertSettings
from .lm_data import PackedData
from .trainer import Batch, TrainConfig, TrainTask, default_model_card, setup_distributed


@dataclass
class PackedSettings(BertSettings):
    """BERT's settings (sizes by preset, vocabulary, sequences, schedule) for a model trained on packed sentences:
    no next-sentence pairs, no ``--init-from``, no sinusoidal positions."""

    TITLE: ClassVar[str] = "language model"

    def check(self) -> None:
        for name in ("init_from", "sinusoidal_positions"):
            if getattr(self, name):
                raise ValueError(f"--{name.replace('_', '-')} is not an option of a {self.TITLE} run")
        super().check()

    @classmethod
    def legacy(cls, out: Path) -> dict[str, Any] | None:
        return None


def lm_model_config(settings: BertSettings, tok: Any, architecture: str) -> Any:
    """A transformers config of ``architecture`` ("roberta" or "gpt2") at the size of BERT's ``--preset``."""
    import transformers

    from ..bert import BertConfig

    size = BertConfig.preset(settings.preset, vocab_size=tok.vocab_size)
    if architecture == "gpt2":
        return transformers.GPT2Config(
            vocab_size=tok.vocab_size, n_positions=size.max_position_embeddings, n_embd=size.hidden_size,
            n_layer=size.num_hidden_layers, n_head=size.num_attention_heads, n_inner=size.intermediate_size,
            resid_pdrop=settings.dropout, embd_pdrop=settings.dropout, attn_pdrop=settings.dropout,
            bos_token_id=tok.cls_id, eos_token_id=tok.sep_id, pad_token_id=tok.pad_id,
            architectures=["GPT2LMHeadModel"])
    # RoBERTa counts positions from pad_token_id + 1 (514 rows for 512 pieces when [PAD] is 0)
    return transformers.RobertaConfig(
        vocab_size=tok.vocab_size, hidden_size=size.hidden_size, num_hidden_layers=size.num_hidden_layers,
        num_attention_heads=size.num_attention_heads, intermediate_size=size.intermediate_size,
        max_position_embeddings=size.max_position_embeddings + tok.pad_id + 1, type_vocab_size=1,
        hidden_dropout_prob=settings.dropout, attention_probs_dropout_prob=settings.dropout,
        pad_token_id=tok.pad_id, bos_token_id=tok.cls_id, eos_token_id=tok.sep_id,
        architectures=["RobertaForMaskedLM"])


def position_limit(config: Any) -> int:
    """Pieces a sequence may hold in this model (RoBERTa's table starts after pad_token_id)."""
    if config.model_type == "roberta":
        return config.max_position_embeddings - config.pad_token_id - 1
    if config.model_type == "gpt2":
        return config.n_positions
    return config.max_position_embeddings


def check_sequence_length(max_seq_len: int, config: Any) -> None:
    """ValueError when ``--max-seq-len`` is longer than the model's position table."""
    limit = position_limit(config)
    if max_seq_len > limit:
        raise ValueError(f"--max-seq-len {max_seq_len} exceeds the model's {limit} positions; give --max-seq-len "
                         f"{limit} or less")


def save_pretrained_folder(lm: Any, tokenizer: Any, directory: str | Path) -> None:
    """``lm`` in transformers' layout in ``directory``, with the run's tokenizer (its length: the positions)."""
    from ..formats.transformers_models import _quiet

    directory = Path(directory)
    with _quiet():  # no "Writing model shards" bar in the run's output
        lm.save_pretrained(directory, safe_serialization=True)
    tokenizer.save(directory)
    tok_config = read_json(directory / "tokenizer_config.json")
    tok_config["model_max_length"] = position_limit(lm.config)
    write_json(directory / "tokenizer_config.json", tok_config)
    if lm.config.model_type == "gpt2":
        no_token_types(directory)


def no_token_types(directory: str | Path) -> None:
    """Make a GPT folder's saved tokenizer give only ids and a mask (``model_input_names``), as training feeds it:
    GPT-2 would add token types through its word embeddings, so ``AutoTokenizer`` + ``AutoModelFor...`` would run
    another model than the one trained."""
    path = Path(directory) / "tokenizer_config.json"
    config = read_json(path)
    config["model_input_names"] = ["input_ids", "attention_mask"]
    write_json(path, config)


def load_pretrained_weights(lm: Any, directory: str | Path) -> None:
    """Restore what :func:`save_pretrained_folder` wrote into ``lm`` (the output layer tied to the input
    embeddings is written once)."""
    path = Path(directory) / "model.safetensors"
    missing, unexpected = lm.load_state_dict(load_tensors(path), strict=False)
    tied = set(getattr(lm, "_tied_weights_keys", None) or ())
    if unexpected or set(missing) - tied:
        wrong = sorted(set(missing) - tied) + list(unexpected)
        raise CheckpointError(f"{path}: does not fit this model ({', '.join(wrong[:5])})")
    lm.tie_weights()


@torch.no_grad()
def summed_scores(model: nn.Module, batches: Any, width: int, **kw: Any) -> np.ndarray:
    """``model``'s scores of each batch (a tuple of ``width`` numbers: sums and counts) added up over ``batches``,
    in eval mode (put back after); ``kw`` goes to every call."""
    was = model.training
    model.eval()
    device = next(model.parameters()).device
    sums = np.zeros(width)
    for batch in batches:
        sums += [float(x) for x in model({k: v.to(device) for k, v in batch.items()}, **kw)]
    model.train(was)
    return sums


class ScoredModel(nn.Module):
    """A transformers language model and its loss in one forward. The trainer wraps the task's model in DDP, which
    synchronises the gradients of what the wrapped forward ran: the loss's own use of the model's parts (RoBERTa's
    head on the masked positions only) must happen inside it."""

    def __init__(self, lm: nn.Module, score: Callable[[nn.Module, Batch], tuple[torch.Tensor, ...]]):
        super().__init__()
        self.lm, self.score = lm, score

    def forward(self, batch: Batch) -> tuple[torch.Tensor, ...]:
        return self.score(self.lm, batch)


class LanguageModelTask(TrainTask):
    """The trainer's side of a transformers language model on :class:`PackedData`: batches, loss, held-out
    figures, the model folder. Subclasses say how a batch is scored (:meth:`score`) and describe the model;
    ``lm`` is the transformers model, ``model`` the same with its loss (:class:`ScoredModel`)."""

    TITLE = ""
    ARCHITECTURE = ""
    LOSS_NAME = "loss"

    def __init__(self, model: nn.Module, tokenizer: Any, train_data: PackedData, eval_data: PackedData | None,
                 settings: BertSettings, data_meta: dict[str, Any]):
        self.lm, self.model, self.tokenizer = model, ScoredModel(model, self.score), tokenizer
        self.train_data, self.eval_data = train_data, eval_data
        self.settings, self.data_meta = settings, data_meta
        self._eval_batches: list[Batch] | None = None

    def num_batches(self, epoch: int) -> int:
        return self.train_data.num_batches

    def get_batch(self, epoch: int, index: int) -> Batch:
        return self.train_data.batch(epoch, index)

    @staticmethod
    def score(lm: nn.Module, batch: Batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(summed cross-entropy over the predicted positions, their number, correct top-1 guesses there)."""
        raise NotImplementedError

    def objective(self) -> str:
        """The training objective in words, for the card."""
        return ""

    def sequences(self) -> str:
        """What a training sequence is, for the card."""
        return f"whole sentences packed across documents up to {self.settings.max_seq_len} pieces"

    def loss(self, model: nn.Module, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]:
        total, n, _ = model(batch)
        loss = total / n.clamp(min=1)
        return loss, {"tokens": int(batch["attention_mask"].sum()), self.LOSS_NAME: loss.item()}

    def eval_batches(self) -> list[Batch]:
        """The fixed held-out set (drawn on first use): the same sequences and masks at every evaluation, and
        for ``ctxmodels quality``, which scores a shipped model on them again."""
        if self._eval_batches is None:
            self._eval_batches = self.eval_data.fixed_batches(self.settings.eval_sequences, self.settings.batch_size)
        return self._eval_batches

    @torch.no_grad()
    def evaluate(self, model: nn.Module) -> dict[str, float]:
        """Held-out top-1 accuracy and perplexity of the predicted pieces on a fixed set."""
        if self.eval_data is None or self.settings.eval_sequences == 0:
            return {}
        total, count, right = summed_scores(model, self.eval_batches(), 3)
        return {"top1": right / max(count, 1), "ppl": float(np.exp(total / max(count, 1)))}

    def save_model(self, directory: Path) -> None:
        save_pretrained_folder(self.lm, self.tokenizer, directory)

    def load_weights(self, directory: Path) -> None:
        load_pretrained_weights(self.lm, directory)

    def model_card(self, info: dict[str, Any]) -> str:
        s, m, cfg = self.settings, self.data_meta, self.lm.config
        card = default_model_card(self.TITLE, info)
        n_params = sum(p.numel() for p in self.lm.parameters())
        return card + f"""
## Model

| | |
|---|---|
| architecture | {self.ARCHITECTURE} |
| size | {s.preset}: {cfg.num_hidden_layers} layers, hidden {cfg.hidden_size}, {cfg.num_attention_heads} heads, \
dropout {s.dropout:g} while training |
| parameters | {n_params:,} |
| tokenizer | {m['tokenizer']}; {m['vocab_size']:,} pieces ([CLS]/[SEP] as start and end) |

## Training data

| | |
|---|---|
| corpus | `{m['corpus']}` ({m['documents']} documents, blank-line separated) |
| held-out documents | {', '.join(map(str, m['heldout_indices'])) or 'none'} (0-based, in corpus order) |
| sequences | {self.sequences()}, batch {s.batch_size} |
| objective | {self.objective()} |
"""


def packed_options(settings: BertSettings, mlm: bool) -> dict[str, Any]:
    """How a run's sequences are packed and masked: what its training and held-out :class:`PackedData` share
    (and what ``ctxmodels quality`` draws a shipped model's held-out set with)."""
    return dict(max_seq_len=settings.max_seq_len, batch_size=settings.batch_size, mlm=mlm,
                max_predictions=settings.max_predictions, whole_word_masking=settings.whole_word_masking,
                static_masking=getattr(settings, "static_masking", 0), seed=settings.seed,
                mask_split=settings.mask_shares)


def packed_datasets(settings: BertSettings, data: Any, mlm: bool) -> tuple[PackedData, PackedData | None]:
    """The training sequences of the prepared ``data`` (:func:`prepare_on_every_rank`), and the held-out ones
    (None without held-out text or evaluation)."""
    vocab = VocabInfo.from_tokenizer(data.tokenizer)
    common = packed_options(settings, mlm)
    train = PackedData(data.train, vocab, data_seed=settings.data_seed,
                       name=f"{Path(settings.corpus).name} (training documents)", **common)
    eval_data = (PackedData(data.heldout, vocab, name=f"{Path(settings.corpus).name} (held-out documents)",
                            **common) if data.heldout.n_tokens and settings.eval_sequences else None)
    return train, eval_data


def build_lm_task(task_class: type[LanguageModelTask], settings: BertSettings, out: str | Path, resume: bool,
                  mlm: bool) -> tuple[LanguageModelTask, TrainConfig]:
    """The task and trainer settings of a run in ``out``: data prepared (and cached) as for BERT, the model
    built at the preset's size."""
    import transformers

    out = Path(out)
    info = setup_distributed()
    data = prepare_on_every_rank(out, settings, resume, info)
    tok = data.tokenizer
    config = lm_model_config(settings, tok, "roberta" if mlm else "gpt2")
    check_sequence_length(settings.max_seq_len, config)
    train, eval_data = packed_datasets(settings, data, mlm)
    torch.manual_seed(settings.seed)  # the same initial weights on every rank and every re-run
    model_class = transformers.RobertaForMaskedLM if mlm else transformers.GPT2LMHeadModel
    model = model_class(config)
    return task_class(model, tok, train, eval_data, settings, data.meta), settings.train_config()
