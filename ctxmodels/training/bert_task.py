"""BERT pre-training as a run: its settings, the losses and held-out metrics, the trainer's task, the model card.

The data it trains on (tokenised documents, masking, next-sentence pairs, batches) comes from
:mod:`ctxmodels.training.bert_data`; the loop that runs it is :class:`ctxmodels.training.trainer.Trainer`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..bounds import Bound, float_range, int_range
from ..checkpoint import CheckpointError, load_tensors, read_json
from ..masking import MASK_SPLIT_TEXT, describe_mask_split, format_mask_split, parse_mask_split
from ..text import CorpusError
from ..tokenization import SPECIAL_TOKENS
from .bert_corpus import batch_encoder, prepare_on_every_rank, tokenize_documents
from .bert_data import IGNORE_INDEX, MLM_PROBABILITY, PretrainingData, VocabInfo
from .corpus import heldout_documents
from .settings import RunSettings
from .trainer import Batch, TrainConfig, TrainTask, default_model_card, setup_distributed

if TYPE_CHECKING:
    from ..bert import BertConfig
    from ..tokenization import WordPieceTokenizer

# ----------------------------------------------------------------------------------------------------------
# run settings (stored in out/run.json so that --resume rebuilds the task identically; see .settings)

# Peak learning rates by preset (warm-up: 10% of the steps). Small BERTs tolerate high rates: tiny and mini
# trained without trouble at 1e-3 here (batch 32), where 1e-4 would waste a short CPU run. Larger models get
# the lower rates of the BERT papers (1e-4 for base at batch 256), as post-LayerNorm stacks diverge more easily.
DEFAULT_LR = {"tiny": 1e-3, "mini": 1e-3, "small": 5e-4, "medium": 3e-4, "base": 1e-4, "large": 1e-4}
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt")
START_FILE = "start.json"  # a run's record of the model it started from (--init-from)
INIT_LR = 1e-4  # continued pre-training from --init-from without --preset


@dataclass
class BertSettings(RunSettings):
    """A BERT run: the common settings plus the model, tokenizer and masking; None = follows from the others."""

    KIND: ClassVar[str] = "bert"
    TITLE: ClassVar[str] = "BERT"
    PATHS: ClassVar[tuple[str, ...]] = (*RunSettings.PATHS, "tokenizer", "init_from")
    BOUNDS: ClassVar[dict[str, Bound]] = {
        "vocab_size": int_range(len(SPECIAL_TOKENS) + 1, 250_000),
        "max_seq_len": int_range(8, 512),  # 512: every preset's max_position_embeddings
        "batch_size": int_range(1, 8192),
        "max_predictions": int_range(1, 512),
        "dropout": float_range(0, 1, hi_open=True),
        "eval_sequences": int_range(0, 100_000),
    }

    steps: int | None = 10_000
    lr: float | None = None  # DEFAULT_LR of the preset
    warmup: int | None = None  # 10% of the steps, at most 10,000
    preset: str | None = None  # "mini", or with --init-from the starting model's own size
    vocab_size: int = 16_000
    tokenizer: str | None = None  # a tokenizer to load instead of training one
    max_seq_len: int = 128
    batch_size: int = 32
    max_predictions: int | None = None  # 15% of max_seq_len, rounded up: 20 for 128, as in BERT
    whole_word_masking: bool = False
    # of the chosen pieces, percent [MASK] / random / kept (a string, as run.json stores it and --mask-split takes it)
    mask_split: str = MASK_SPLIT_TEXT
    dropout: float = 0.1
    sinusoidal_positions: bool = False
    init_from: str | None = None  # an earlier run's model to start from (continued pre-training)
    eval_sequences: int = 256

    def check(self) -> None:
        super().check()
        if self.preset is None and not self.init_from:
            self.preset = "mini"
        if self.preset is not None and self.preset not in DEFAULT_LR:
            raise ValueError(f"unknown --preset {self.preset!r}; choose one of {', '.join(DEFAULT_LR)}")
        if self.max_predictions is None:
            self.max_predictions = math.ceil(MLM_PROBABILITY * self.max_seq_len)
        self.mask_split = format_mask_split(parse_mask_split(self.mask_split))
        if self.lr is None:
            # A pre-trained start (its own size) gets the BERT papers' rate for further pre-training.
            self.lr = DEFAULT_LR[self.preset] if self.preset else INIT_LR
        if self.warmup is None:
            self.warmup = max(1, min(10_000, self.steps // 10))
        if self.max_predictions > self.max_seq_len:
            raise ValueError(f"--max-predictions {self.max_predictions} is more than the pieces in a sequence "
                             f"(--max-seq-len {self.max_seq_len})")

    @property
    def mask_shares(self) -> tuple[int, int, int]:
        """``mask_split`` as numbers: the percentages [MASK] / random / kept."""
        return parse_mask_split(self.mask_split)

    @classmethod
    def legacy(cls, out: Path) -> dict[str, Any] | None:
        path = out / "train_args.json"  # runs started before run.json
        return read_json(path).get("settings", {}) if path.is_file() else None


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
    docs, held = heldout_documents(corpus, heldout_docs, seed)
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
                 eval_data: PretrainingData | None, settings: BertSettings, data_meta: dict[str, Any]):
        self.model, self.tokenizer = model, tokenizer
        self.train_data, self.eval_data = train_data, eval_data
        self.settings, self.data_meta = settings, data_meta
        self._eval_batches: list[Batch] | None = None
        self.fresh_heads: list[str] = []  # modules that --init-from did not provide (set by load_weights)
        self.start = ""  # the --init-from model in words (describe_start)

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
        """Start from the weights in ``directory``: a model saved by :meth:`save_model` (which writes the tied
        decoder weight only once) or a Hugging Face BERT: an encoder alone (``BertModel`` keys, no ``bert.``
        prefix) or one with only some heads (``BertForMaskedLM`` has no pooler and no next-sentence classifier).
        What it lacks of the pooler and the pre-training heads starts fresh and is listed in :attr:`fresh_heads`;
        the encoder itself must be complete."""
        path = Path(directory) / "model.safetensors"
        state = load_tensors(path)
        encoder_only = "embeddings.word_embeddings.weight" in state and not any(k.startswith("bert.") for k in state)
        if encoder_only:
            state = {f"bert.{k}": v for k, v in state.items()}
        state.pop("bert.embeddings.position_ids", None)  # a buffer older transformers versions saved
        if self.model.decoder_is_tied:
            state.setdefault("cls.predictions.decoder.weight", state.get("bert.embeddings.word_embeddings.weight"))
        try:
            missing, unexpected = self.model.load_state_dict(state, strict=False)
        except (RuntimeError, TypeError) as e:
            raise CheckpointError(f"{path}: does not fit this model ({e})") from e
        fresh = [k for k in missing if k.startswith(("cls.", "bert.pooler."))]
        if unexpected or len(fresh) != len(missing):
            wrong = [k for k in missing if k not in fresh] + list(unexpected)
            raise CheckpointError(f"{path}: does not fit this model (missing or unexpected weights: "
                                  f"{', '.join(wrong[:5])}{' …' if len(wrong) > 5 else ''})")
        self.fresh_heads = sorted({k.rsplit(".", 1)[0] for k in fresh})

    def model_card(self, info: dict[str, Any]) -> str:
        s, m, cfg = self.settings, self.data_meta, self.model.config
        n_params = sum(p.numel() for p in self.model.parameters())
        card = default_model_card("BERT", info)
        start = f"{self.start}, " if self.start else ""
        init_row = (f"| initial weights | {start}`{s.init_from}` (continued pre-training with this run's schedule"
                    f"{'; started fresh: ' + ', '.join(self.fresh_heads) if self.fresh_heads else ''}) |\n"
                    if s.init_from else "")
        size = s.preset or "the starting model's"
        order_row = (f"| training order | `--data-seed {s.data_seed}` (held-out documents and evaluation set: `--seed "
                     f"{s.seed}`) |\n" if s.order_seed != s.seed else "")
        added = (f" plus the {m['added_documents']} documents of `{m['add_text']}` (`--add-text`: trained on, none "
                 "held out)" if m.get("add_text") else "")
        card += f"""
## Model

| | |
|---|---|
| architecture | BertForPreTraining (masked LM + next-sentence prediction) |
| size | {size}: {cfg.num_hidden_layers} layers, hidden {cfg.hidden_size}, {cfg.num_attention_heads} heads, \
feed-forward {cfg.intermediate_size}, dropout {cfg.hidden_dropout_prob:g} while training |
| parameters | {n_params:,} |
| tokenizer | {m['tokenizer']}; {m['vocab_size']:,} pieces, {'lower-cased' if self.tokenizer.lowercase else 'cased'} |
{init_row}
## Training data

| | |
|---|---|
| corpus | `{m['corpus']}` ({m['documents']} documents, blank-line separated) |
| training text | {m['documents'] - len(m['heldout_indices'])} documents{added}, {m['train_tokens']:,} word pieces \
in {m['train_sentences']:,} sentences |
| held-out documents | {', '.join(map(str, m['heldout_indices'])) or 'none'} (0-based, in corpus order; \
{m['heldout_tokens']:,} word pieces) |
| sequences | up to {s.max_seq_len} pieces, batch {s.batch_size}, {MLM_PROBABILITY:.0%} masked (at most \
{s.max_predictions} a sequence; {describe_mask_split(s.mask_shares)}){', whole-word masking' * s.whole_word_masking} |
| held-out evaluation | {s.eval_sequences} fixed sequences from the held-out documents, masked as in training |
{order_row}"""
        if "eltec" in m["corpus"].lower():
            card += ("\nCorpus credit: English Novel Corpus (ELTeC-eng), ed. Lou Burnard, v1.0.1, "
                     "DOI 10.5281/zenodo.3533868 (texts public domain; ELTeC markup CC BY 4.0).\n")
        return card


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


def model_config(settings: BertSettings, tok: WordPieceTokenizer, out: Path) -> BertConfig:
    """The architecture: the preset's, or with ``--init-from`` the starting model's own (its config.json; the
    run's saved one when the start is gone on --resume); a --preset given as well must describe the same size."""
    from ..bert import BertConfig

    dropout = dict(hidden_dropout_prob=settings.dropout, attention_probs_dropout_prob=settings.dropout)
    start = Path(settings.init_from) if settings.init_from else None
    if start is not None and not (start / "config.json").is_file() and (out / "config.json").is_file():
        start = out
    if start is None or not (start / "config.json").is_file():
        if settings.preset is None:
            raise CheckpointError(f"{settings.init_from}: no config.json to take the model's size from; "
                                  "give --preset")
        return BertConfig.preset(settings.preset, vocab_size=tok.vocab_size, pad_token_id=tok.pad_id, **dropout)
    try:
        config = BertConfig.from_dict({**read_json(start / "config.json"), **dropout})
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{start / 'config.json'}: {e}") from e
    if config.vocab_size != tok.vocab_size:
        raise CheckpointError(f"{start}: does not fit this model: its vocabulary has {config.vocab_size:,} pieces, "
                              f"the tokenizer {tok.vocab_size:,}; continue with the starting model's tokenizer "
                              "(leave --tokenizer out)")
    if settings.preset is not None:
        preset = BertConfig.preset(settings.preset, vocab_size=tok.vocab_size, **dropout)
        shape = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")
        if any(getattr(preset, f) != getattr(config, f) for f in shape):
            raise CheckpointError(
                f"{start}: does not fit --preset {settings.preset} ({config.num_hidden_layers} layers, hidden "
                f"{config.hidden_size}, not {preset.num_hidden_layers} / {preset.hidden_size}); leave --preset "
                "out to continue at the starting model's size")
    return config


def build_task(settings: BertSettings, out: str | Path, resume: bool = False
               ) -> tuple[BertPretrainingTask, TrainConfig]:
    """The task and trainer settings of a BERT run in ``out``, from :meth:`BertSettings.resolve`'s settings."""
    from ..bert import BertForPreTraining

    out = Path(out)
    info = setup_distributed()
    start = Path(settings.init_from) if settings.init_from else None
    if start is not None and settings.tokenizer is None and any((start / f).is_file() for f in TOKENIZER_FILES):
        settings.tokenizer = str(start)  # a pre-trained start is tied to its own vocabulary
    data = prepare_on_every_rank(out, settings, resume, info)

    tok = data.tokenizer
    vocab = VocabInfo.from_tokenizer(tok)
    common = dict(max_seq_len=settings.max_seq_len, max_predictions=settings.max_predictions,
                  batch_size=settings.batch_size, whole_word_masking=settings.whole_word_masking, seed=settings.seed,
                  mask_split=settings.mask_shares)
    train_name = Path(settings.corpus).name + (f" + {Path(settings.add_text).name}" if settings.add_text else "")
    train = PretrainingData(data.train, vocab, name=f"{train_name} (training documents)",
                            data_seed=settings.data_seed, **common)
    eval_data = None
    if data.heldout.n_tokens and settings.eval_sequences:
        held_docs = int(np.count_nonzero(np.diff(data.heldout.doc_offsets)))
        # With one held-out document, "random next" segments for NSP come from the training documents.
        pool = None if held_docs >= 2 else data.train
        eval_data = PretrainingData(data.heldout, vocab, random_pool=pool,
                                    name=f"{Path(settings.corpus).name} (held-out documents)", **common)

    config = model_config(settings, tok, Path(out))
    if settings.max_seq_len > config.max_position_embeddings:
        raise ValueError(f"--max-seq-len {settings.max_seq_len} exceeds the model's "
                         f"{config.max_position_embeddings} positions (max_position_embeddings)")
    torch.manual_seed(settings.seed)  # the same initial weights on every rank and every re-run
    model = BertForPreTraining(config)
    if settings.sinusoidal_positions:
        init_sinusoidal_positions(model.bert.embeddings.position_embeddings.weight, config.initializer_range)
    task = BertPretrainingTask(model, tok, train, eval_data, settings, data.meta)
    if settings.init_from and not resume:
        task.load_weights(Path(settings.init_from))  # same architecture and tokenizer, or a clear error
        task.start = describe_start(Path(settings.init_from))
        if info.is_main:  # what the card says about the start, also after --resume
            (out / START_FILE).write_text(json.dumps({"start": task.start, "fresh_heads": task.fresh_heads},
                                                     indent=1))
    elif settings.init_from and (out / START_FILE).is_file():
        record = read_json(out / START_FILE)
        task.start, task.fresh_heads = record.get("start", ""), record.get("fresh_heads", [])
    return task, settings.train_config()


def describe_start(folder: Path) -> str:
    """The starting model in words, for the card: the title and licence its README states (a Hugging Face model
    card: YAML front matter with ``license:``, then a ``# Title``), else the folder's name."""
    from huggingface_hub import metadata_load

    readme = folder / "README.md"
    if not readme.is_file():
        return folder.name
    text = readme.read_text(encoding="utf-8", errors="replace")
    title = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), "")
    try:
        licence = str((metadata_load(readme) or {}).get("license") or "")
    except ValueError:  # front matter that is not YAML: the card says nothing of a licence we can read
        licence = ""
    name = title or folder.name
    return f"{name} (licence {licence})" if licence else name
