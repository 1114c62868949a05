"""BERT pre-training as a run: its settings, the losses and held-out metrics, the trainer's task, the model card.

The data it trains on (tokenised documents, masking, next-sentence pairs, batches) comes from
:mod:`ctxmodels.training.bert_data`; the loop that runs it is :class:`ctxmodels.training.trainer.Trainer`.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..checkpoint import CheckpointError, load_tensors, read_json, write_json
from ..text import CorpusError, read_documents
from .bert_data import (
    IGNORE_INDEX,
    MLM_PROBABILITY,
    PretrainingData,
    VocabInfo,
    batch_encoder,
    prepare_data,
    tokenize_documents,
)
from .corpus import heldout_indices
from .trainer import Batch, TrainConfig, TrainTask, default_model_card, setup_distributed

if TYPE_CHECKING:
    from ..tokenization import WordPieceTokenizer

# ----------------------------------------------------------------------------------------------------------
# run settings (stored in out/ so that --resume rebuilds the task identically)

# Peak learning rates by preset (warm-up: 10% of the steps). Small BERTs tolerate high rates: tiny and mini
# trained without trouble at 1e-3 here (batch 32), where 1e-4 would waste a short CPU run. Larger models get
# the lower rates of the BERT papers (1e-4 for base at batch 256), as post-LayerNorm stacks diverge more easily.
DEFAULT_LR = {"tiny": 1e-3, "mini": 1e-3, "small": 5e-4, "medium": 3e-4, "base": 1e-4, "large": 1e-4}
DEFAULT_STEPS = 10_000
SETTINGS_FILE = "train_args.json"


@dataclass
class BertTrainSettings:
    """Everything that defines a run's data and optimisation; None = not given on the command line."""

    corpus: str
    preset: str | None = None
    vocab_size: int | None = None
    tokenizer: str | None = None
    max_seq_len: int | None = None
    batch_size: int | None = None
    max_predictions: int | None = None
    whole_word_masking: bool | None = None
    dropout: float | None = None
    sinusoidal_positions: bool | None = None
    init_from: str | None = None
    heldout_docs: int | None = None
    eval_sequences: int | None = None
    seed: int | None = None
    steps: int | None = None
    lr: float | None = None
    warmup: int | None = None
    weight_decay: float | None = None
    bf16: bool | None = None
    # Bookkeeping that does not change the numbers: stored for --resume, but may be changed there.
    save_every: int | None = None
    eval_every: int | None = None
    log_every: int | None = None

    RUNTIME = ("save_every", "eval_every", "log_every")
    # --steps may change on --resume too: it moves the run's end, and the learning-rate decay stretches (or
    # shrinks) from where it stands to the new end; everything before stays exactly as it was.
    EXTENDABLE = ("steps",)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> BertTrainSettings:
        s = cls(**{f: getattr(args, f, None) for f in cls.__dataclass_fields__})
        s.corpus = str(Path(args.corpus).resolve())
        if s.tokenizer is not None:
            s.tokenizer = str(Path(s.tokenizer).resolve())
        if s.init_from is not None:
            s.init_from = str(Path(s.init_from).resolve())
        return s

    def resolved(self) -> BertTrainSettings:
        """Fill in the defaults (heldout_docs stays None until the corpus is read) and check the values."""
        s = BertTrainSettings(**self.__dict__)
        s.preset = s.preset or "mini"
        s.vocab_size = s.vocab_size or 16_000
        s.max_seq_len = s.max_seq_len or 128
        s.batch_size = s.batch_size or 32
        # 20 for 128 as in BERT: 15% of the tokens, rounded up.
        s.max_predictions = s.max_predictions or math.ceil(MLM_PROBABILITY * s.max_seq_len)
        s.whole_word_masking = bool(s.whole_word_masking)
        s.dropout = 0.1 if s.dropout is None else s.dropout
        s.sinusoidal_positions = bool(s.sinusoidal_positions)
        s.eval_sequences = 256 if s.eval_sequences is None else s.eval_sequences
        s.seed = 0 if s.seed is None else s.seed
        s.steps = s.steps or DEFAULT_STEPS
        if s.preset not in DEFAULT_LR:
            raise ValueError(f"unknown --preset {s.preset!r}; choose one of {', '.join(DEFAULT_LR)}")
        s.lr = s.lr or DEFAULT_LR[s.preset]
        s.warmup = max(1, min(10_000, s.steps // 10)) if s.warmup is None else s.warmup
        s.weight_decay = 0.01 if s.weight_decay is None else s.weight_decay
        s.bf16 = bool(s.bf16)
        s.save_every = 500 if s.save_every is None else s.save_every
        s.eval_every = 500 if s.eval_every is None else s.eval_every
        s.log_every = s.log_every or 10
        for name in ("vocab_size", "max_seq_len", "batch_size", "max_predictions", "steps"):
            if getattr(s, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(s, name)}")
        if not 0 <= s.dropout < 1:
            raise ValueError(f"--dropout must be at least 0 and below 1, got {s.dropout}")
        if s.seed < 0 or s.eval_sequences < 0 or s.warmup < 0 or s.lr <= 0:
            raise ValueError("--seed, --eval-sequences and --warmup must be 0 or more, --lr positive")
        return s

    def merged_with_stored(self, stored: dict[str, Any], path: Path) -> BertTrainSettings:
        """The stored run's settings; any setting given now must equal the stored one."""
        conflicts = []
        for name, value in self.__dict__.items():
            changeable = name in self.RUNTIME or name in self.EXTENDABLE
            if value is not None and name in stored and stored[name] != value and not changeable:
                conflicts.append(f"--{name.replace('_', '-')} {value} (the run used {stored[name]})")
        if conflicts:
            raise ValueError(
                f"{path}: --resume continues a run with its own settings, but these differ: {'; '.join(conflicts)}. "
                "Drop them to resume, or start a new run with another --out"
            )
        known = {k: v for k, v in stored.items() if k in self.__dataclass_fields__}
        known.update({k: getattr(self, k) for k in self.RUNTIME + self.EXTENDABLE if getattr(self, k) is not None})
        return BertTrainSettings(**known)

    def train_config(self, args: argparse.Namespace) -> TrainConfig:
        limit = getattr(args, "time_limit", None)
        return TrainConfig(
            max_steps=self.steps, lr=self.lr, warmup_steps=self.warmup, weight_decay=self.weight_decay,
            bf16=self.bf16, save_every=self.save_every, eval_every=self.eval_every, log_every=self.log_every,
            seed=self.seed, time_limit_s=None if limit is None else 60.0 * limit,
            progress=not getattr(args, "no_progress", False),
        )


# ----------------------------------------------------------------------------------------------------------
# the training task


def pretraining_losses(output, batch: Batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(MLM loss, NSP loss, number of predicted tokens). Logits are upcast: bf16 cross-entropy is too coarse."""
    logits = output.prediction_logits.float()
    labels = batch["mlm_labels"]
    n = (labels != IGNORE_INDEX).sum()
    mlm = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                          ignore_index=IGNORE_INDEX, reduction="sum") / n.clamp(min=1)
    nsp = F.cross_entropy(output.seq_relationship_logits.float(), batch["next_sentence_label"])
    return mlm, nsp, n


def forward_batch(model: nn.Module, batch: Batch):
    """The model's output on a pre-training batch (vocabulary scores only at the masked positions)."""
    return model(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"],
                 attention_mask=batch["attention_mask"], mlm_positions=batch["mlm_positions"])


@torch.no_grad()
def pretraining_metrics(model: nn.Module, batches: Sequence[Batch],
                        device: torch.device | str = "cpu") -> dict[str, float]:
    """Masked-token top-1/top-5 accuracy, MLM loss and perplexity, NSP accuracy over ``batches``.

    The batches are masked as in training (80/10/10), as in the original BERT evaluation.
    """
    loss_sum = top1 = top5 = n_pred = nsp_right = n_seq = 0.0
    for batch in batches:
        batch = {k: v.to(device) for k, v in batch.items()}
        out = forward_batch(model, batch)
        logits = out.prediction_logits.float()
        labels = batch["mlm_labels"]
        valid = labels != IGNORE_INDEX
        loss_sum += F.cross_entropy(logits[valid], labels[valid], reduction="sum").item()
        best = logits.topk(5, dim=-1).indices
        top1 += (best[..., 0] == labels)[valid].sum().item()
        top5 += (best == labels[..., None]).any(-1)[valid].sum().item()
        n_pred += valid.sum().item()
        nsp_right += (out.seq_relationship_logits.argmax(-1) == batch["next_sentence_label"]).sum().item()
        n_seq += len(labels)
    mlm_loss = loss_sum / max(n_pred, 1)
    return {
        "mlm_loss": mlm_loss,
        "mlm_perplexity": math.exp(min(mlm_loss, 50.0)),
        "mlm_accuracy": top1 / max(n_pred, 1),
        "mlm_top5_accuracy": top5 / max(n_pred, 1),
        "nsp_accuracy": nsp_right / max(n_seq, 1),
    }


def heldout_metrics(model: nn.Module, tokenizer: WordPieceTokenizer, corpus: str | Path, n_sequences: int = 2048,
                    max_seq_len: int = 128, heldout_docs: int | Sequence[int] | None = None, seed: int = 0,
                    batch_size: int = 32) -> dict[str, float]:
    """:func:`pretraining_metrics` of a trained model on the held-out documents of ``corpus``.

    The documents are those a training run with the same ``heldout_docs`` and ``seed`` held out, so a shipped
    model can be measured again from its directory and the corpus alone.
    """
    docs = read_documents(corpus)
    held = heldout_indices(len(docs), heldout_docs, seed)
    if not held:
        raise CorpusError(f"{corpus}: no held-out documents to evaluate on")
    tokenized = tokenize_documents([docs[i] for i in held], batch_encoder(tokenizer))
    pool = None if len(held) >= 2 else tokenize_documents([d for i, d in enumerate(docs) if i not in held],
                                                          batch_encoder(tokenizer))
    data = PretrainingData(tokenized, VocabInfo.from_tokenizer(tokenizer), max_seq_len=max_seq_len,
                           max_predictions=math.ceil(MLM_PROBABILITY * max_seq_len), seed=seed, random_pool=pool,
                           name=f"{Path(corpus).name} (held-out documents)")
    model.eval()
    return pretraining_metrics(model, data.fixed_batches(n_sequences, batch_size), next(model.parameters()).device)


class BertPretrainingTask(TrainTask):
    """Masked LM + next-sentence prediction on a plain-text corpus."""

    name = "bert"

    def __init__(self, model: nn.Module, tokenizer: WordPieceTokenizer, train_data: PretrainingData,
                 eval_data: PretrainingData | None, settings: BertTrainSettings, data_meta: dict[str, Any]):
        self.model, self.tokenizer = model, tokenizer
        self.train_data, self.eval_data = train_data, eval_data
        self.settings, self.data_meta = settings, data_meta
        self._eval_batches: list[Batch] | None = None

    def num_batches(self, epoch: int) -> int:
        return self.train_data.num_batches

    def get_batch(self, epoch: int, index: int) -> Batch:
        return self.train_data.batch(epoch, index)

    def loss(self, model: nn.Module, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]:
        mlm, nsp, _ = pretraining_losses(forward_batch(model, batch), batch)
        stats = {"tokens": int(batch["attention_mask"].sum()), "mlm_loss": mlm.item(), "nsp_loss": nsp.item()}
        return mlm + nsp, stats

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        """Masked-token top-1/top-5 accuracy, MLM perplexity and NSP accuracy on a fixed held-out set."""
        if self.eval_data is None or self.settings.eval_sequences == 0:
            return {}
        if self._eval_batches is None:
            self._eval_batches = self.eval_data.fixed_batches(self.settings.eval_sequences, self.settings.batch_size)
        return pretraining_metrics(model, self._eval_batches, next(model.parameters()).device)

    def save_model(self, directory: Path) -> None:
        from ..formats.huggingface import save_pretrained

        save_pretrained(self.model, self.tokenizer, directory)

    def load_weights(self, directory: Path) -> None:
        """Restore the weights saved by :meth:`save_model` (which writes the tied decoder weight only once)."""
        path = Path(directory) / "model.safetensors"
        state = load_tensors(path)
        if self.model.decoder_is_tied:
            state.setdefault("cls.predictions.decoder.weight", state.get("bert.embeddings.word_embeddings.weight"))
        try:
            self.model.load_state_dict(state, strict=True)
        except (RuntimeError, TypeError) as e:
            raise CheckpointError(f"{path}: does not fit this model ({e})") from e

    def model_card(self, info: dict[str, Any]) -> str:
        s, m, cfg = self.settings, self.data_meta, self.model.config
        n_params = sum(p.numel() for p in self.model.parameters())
        card = default_model_card("BERT", info)
        init_row = (f"| initial weights | `{s.init_from}` (continued pre-training with this run's schedule) |\n"
                    if s.init_from else "")
        card += f"""
## Model

| | |
|---|---|
| architecture | BertForPreTraining (masked LM + next-sentence prediction) |
| preset | {s.preset}: {cfg.num_hidden_layers} layers, hidden {cfg.hidden_size}, {cfg.num_attention_heads} heads, \
feed-forward {cfg.intermediate_size}, dropout {cfg.hidden_dropout_prob:g} while training |
| parameters | {n_params:,} |
| tokenizer | {m['tokenizer']}; {m['vocab_size']:,} pieces, {'lower-cased' if self.tokenizer.lowercase else 'cased'} |
{init_row}
## Training data

| | |
|---|---|
| corpus | `{m['corpus']}` ({m['documents']} documents, blank-line separated) |
| training text | {m['documents'] - len(m['heldout_indices'])} documents, {m['train_tokens']:,} word pieces \
in {m['train_sentences']:,} sentences |
| held-out documents | {', '.join(map(str, m['heldout_indices'])) or 'none'} (0-based, in corpus order; \
{m['heldout_tokens']:,} word pieces) |
| sequences | up to {s.max_seq_len} pieces, batch {s.batch_size}, {MLM_PROBABILITY:.0%} masked (at most \
{s.max_predictions} a sequence; 80% [MASK] / 10% random / 10% kept){', whole-word masking' * s.whole_word_masking} |
| held-out evaluation | {s.eval_sequences} fixed sequences from the held-out documents, masked as in training |
"""
        if "eltec" in m["corpus"].lower():
            card += ("\nCorpus credit: English Novel Corpus (ELTeC-eng), ed. Lou Burnard, v1.0.1, "
                     "DOI 10.5281/zenodo.3533868 (texts public domain; ELTeC markup CC BY 4.0).\n")
        return card


# ----------------------------------------------------------------------------------------------------------
# command line


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``ctxmodels train bert``; unset ones take defaults, or the stored run's values on --resume."""
    p.add_argument("--preset", default=None, choices=list(DEFAULT_LR), help="model size (default mini)")
    p.add_argument("--vocab-size", type=int, default=None, help="WordPiece vocabulary to train (default 16000)")
    p.add_argument("--tokenizer", default=None, metavar="DIR",
                   help="use this tokenizer (tokenizer.json or vocab.txt) instead of training one")
    p.add_argument("--max-seq-len", type=int, default=None, help="pieces per sequence with [CLS]/[SEP] (default 128)")
    p.add_argument("--batch-size", type=int, default=None, help="sequences per step (default 32)")
    p.add_argument("--max-predictions", type=int, default=None,
                   help="most masked tokens per sequence (default 15%% of --max-seq-len, i.e. 20 for 128)")
    p.add_argument("--dropout", type=float, default=None,
                   help="dropout of hidden states and attention while training (default 0.1, as in BERT; short "
                        "runs learn faster with 0)")
    p.add_argument("--init-from", default=None, metavar="DIR",
                   help="start from the weights of an earlier run's model (same preset and --tokenizer), with this "
                        "run's own schedule: continued pre-training")
    p.add_argument("--sinusoidal-positions", action="store_true", default=None,
                   help="start the learned position embeddings from the Transformer's sines and cosines instead "
                        "of noise (they still train; the checkpoint format is unchanged)")
    p.add_argument("--whole-word-masking", action="store_true", default=None,
                   help="mask all pieces of a word together")
    p.add_argument("--heldout-docs", type=int, default=None,
                   help="documents held out for evaluation (default 2; 1 for corpora under 10 documents)")
    p.add_argument("--eval-sequences", type=int, default=None,
                   help="held-out sequences per evaluation (default 256; 0 = no evaluation)")
    # None = "not given", so that --resume can tell a conflicting value from a default.
    p.set_defaults(seed=None, weight_decay=None, bf16=None, save_every=None, eval_every=None, log_every=None)


@torch.no_grad()
def init_sinusoidal_positions(weight: torch.Tensor, std: float) -> None:
    """Fill a [positions, hidden] table with the sines and cosines of "Attention is all you need", scaled to the
    standard deviation ``std`` of the other embeddings.

    Randomly initialised positions carry no notion of "next to", which a small model then needs many steps to
    learn before attention can use its neighbours; from sinusoids, nearby positions start out similar and a
    fixed offset is a linear map, so that structure is there from the first step.
    """
    n, d = weight.shape
    pos = torch.arange(n, dtype=torch.float32)[:, None]
    freq = torch.exp(-math.log(10_000.0) * torch.arange(0, d, 2, dtype=torch.float32) / d)
    table = torch.zeros(n, d)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq)[:, : d // 2]
    weight.copy_(table * (std / table.std()))


def build_task(args: argparse.Namespace) -> tuple[BertPretrainingTask, TrainConfig]:
    from ..bert import BertConfig, BertForPreTraining

    out = Path(args.out)
    info = setup_distributed()
    given = BertTrainSettings.from_args(args)
    settings_path = out / SETTINGS_FILE
    if args.resume:
        if not settings_path.is_file():
            raise CheckpointError(f"{settings_path}: not found, so there is no BERT run to resume in {out}")
        stored = read_json(settings_path).get("settings", {})
        settings = given.merged_with_stored(stored, settings_path).resolved()
    else:
        if (out / "checkpoint" / "trainer_state.pt").exists():
            raise CheckpointError(
                f"{out} already holds a training run; pass --resume to continue it or choose another --out"
            )
        settings = given.resolved()

    if info.is_main:
        data = prepare_data(out, settings, resume=args.resume)
        settings.heldout_docs = len(data.meta["heldout_indices"])
        write_json(settings_path, {"kind": "bert", "settings": settings.__dict__})
    if info.world_size > 1:
        import torch.distributed as dist

        dist.barrier()  # the other ranks load what rank 0 prepared
    if not info.is_main:
        data = prepare_data(out, settings, resume=args.resume)

    tok = data.tokenizer
    vocab = VocabInfo.from_tokenizer(tok)
    common = dict(max_seq_len=settings.max_seq_len, max_predictions=settings.max_predictions,
                  batch_size=settings.batch_size, whole_word_masking=settings.whole_word_masking, seed=settings.seed)
    train = PretrainingData(data.train, vocab, name=f"{Path(settings.corpus).name} (training documents)", **common)
    eval_data = None
    if data.heldout.n_tokens and settings.eval_sequences:
        held_docs = int(np.count_nonzero(np.diff(data.heldout.doc_offsets)))
        # With one held-out document, "random next" segments for NSP come from the training documents.
        pool = None if held_docs >= 2 else data.train
        eval_data = PretrainingData(data.heldout, vocab, random_pool=pool,
                                    name=f"{Path(settings.corpus).name} (held-out documents)", **common)

    config = BertConfig.preset(settings.preset, vocab_size=tok.vocab_size, pad_token_id=tok.pad_id,
                               hidden_dropout_prob=settings.dropout, attention_probs_dropout_prob=settings.dropout)
    if settings.max_seq_len > config.max_position_embeddings:
        raise ValueError(f"--max-seq-len {settings.max_seq_len} exceeds the model's "
                         f"{config.max_position_embeddings} positions (max_position_embeddings)")
    torch.manual_seed(settings.seed)  # the same initial weights on every rank and every re-run
    model = BertForPreTraining(config)
    if settings.sinusoidal_positions:
        init_sinusoidal_positions(model.bert.embeddings.position_embeddings.weight, config.initializer_range)
    task = BertPretrainingTask(model, tok, train, eval_data, settings, data.meta)
    if settings.init_from and not args.resume:
        task.load_weights(Path(settings.init_from))  # same architecture and tokenizer, or a clear error
    return task, settings.train_config(args)
