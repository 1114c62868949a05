"""``ctxmodels train albert``: transformers' ``AlbertForPreTraining`` trained by the shared trainer on a masked LM
(15%, 80/10/10 as BERT, or the run's ``--mask-split``) plus sentence-order prediction (SOP): two consecutive
segments of one document, in their order (label 0) or swapped (label 1), 50/50 — BERT's sentence pairs
(:class:`.bert_data.PretrainingData` with ``sentence_order``) with the swap in place of the random second segment.

ALBERT's two savings are settings: ``--embedding-size E`` (factorised embeddings: word pieces are E wide and
projected to the hidden size, V·E + E·H weights instead of V·H; default half the hidden size, at most 128, as
ALBERT's 128 for its base and large) and ``--hidden-groups G`` (cross-layer sharing: the layers are G groups of
one shared layer each; default 1, ALBERT's: every layer the same weights).

The folder is transformers' ALBERT layout (config.json with model_type albert, model.safetensors, the run's
WordPiece tokenizer), which ``AlbertForPreTraining.from_pretrained`` reads with nothing missing and
``ctxmodels.load`` opens as a transformers encoder that fills in blanks (``AlbertForMaskedLM`` reads the same
weights). The task's loop side and saving are :mod:`.lm_task`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..bounds import Bound, int_range
from ..masking import describe_mask_split
from .bert_corpus import prepare_on_every_rank
from .bert_data import IGNORE_INDEX, MLM_PROBABILITY, PretrainingData, VocabInfo
from .lm_task import LanguageModelTask, PackedSettings, check_sequence_length, summed_scores
from .trainer import Batch, TrainConfig, setup_distributed


def default_embedding_size(hidden_size: int) -> int:
    """Half the hidden size, at most 128 (ALBERT's for every published size): 64 for tiny, 128 from mini on."""
    return min(128, hidden_size // 2)


@dataclass
class AlbertSettings(PackedSettings):
    """An ALBERT run: BERT's sizes by preset, vocabulary, sequences and schedule (its sentence pairs ordered, not
    drawn at random), plus the factorised embedding width and the number of layer groups sharing weights."""

    KIND: ClassVar[str] = "albert"
    TITLE: ClassVar[str] = "ALBERT"
    BOUNDS: ClassVar[dict[str, Bound]] = {"embedding_size": int_range(1, 4096), "hidden_groups": int_range(1, 64)}

    embedding_size: int | None = None  # default_embedding_size of the preset's hidden size
    hidden_groups: int = 1

    def check(self) -> None:
        from ..bert import BertConfig

        super().check()
        size = BertConfig.preset(self.preset)
        if self.embedding_size is None:
            self.embedding_size = default_embedding_size(size.hidden_size)
        if self.embedding_size > size.hidden_size:
            raise ValueError(f"--embedding-size {self.embedding_size} is larger than the hidden size "
                             f"{size.hidden_size} of --preset {self.preset}: factorised embeddings are narrower "
                             f"than the layers they feed (default {default_embedding_size(size.hidden_size)})")
        if size.num_hidden_layers % self.hidden_groups:
            raise ValueError(f"--hidden-groups {self.hidden_groups} does not divide the {size.num_hidden_layers} "
                             f"layers of --preset {self.preset}: each group shares one layer's weights among as "
                             "many layers as the others")


def albert_config(settings: AlbertSettings, tok: Any) -> Any:
    """transformers' AlbertConfig at the size of BERT's ``--preset``, with the run's embedding width and groups."""
    import transformers

    from ..bert import BertConfig

    size = BertConfig.preset(settings.preset, vocab_size=tok.vocab_size)
    return transformers.AlbertConfig(
        vocab_size=tok.vocab_size, embedding_size=settings.embedding_size, hidden_size=size.hidden_size,
        num_hidden_layers=size.num_hidden_layers, num_hidden_groups=settings.hidden_groups,
        num_attention_heads=size.num_attention_heads, intermediate_size=size.intermediate_size, inner_group_num=1,
        max_position_embeddings=size.max_position_embeddings, type_vocab_size=2,
        hidden_dropout_prob=settings.dropout, attention_probs_dropout_prob=settings.dropout,
        pad_token_id=tok.pad_id, bos_token_id=tok.cls_id, eos_token_id=tok.sep_id,
        architectures=["AlbertForPreTraining"])


class AlbertTask(LanguageModelTask):
    name = "albert"
    TITLE = "ALBERT"
    ARCHITECTURE = ("AlbertForPreTraining (masked LM + sentence-order prediction; factorised embeddings, layers "
                    "sharing weights)")

    def objective(self) -> str:
        s = self.settings
        return (f"{MLM_PROBABILITY:.0%} of pieces masked ({describe_mask_split(s.mask_shares)}, at most "
                f"{s.max_predictions}{', whole words' * s.whole_word_masking}), a new draw every epoch; plus "
                "sentence order: segment A then its continuation B (label 0) or the two swapped (label 1), 50/50")

    def sequences(self) -> str:
        return (f"[CLS] A [SEP] B [SEP] from consecutive sentences of one document, up to "
                f"{self.settings.max_seq_len} pieces")

    @staticmethod
    def score(lm: nn.Module, batch: Batch) -> tuple[torch.Tensor, ...]:
        """(masked LM: summed cross-entropy, predicted pieces, right top-1 guesses; sentence order: summed
        cross-entropy, right guesses). The vocabulary projection runs at the masked positions only."""
        out = lm.albert(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"],
                        attention_mask=batch["attention_mask"])
        labels = batch["mlm_labels"]
        chosen = labels != IGNORE_INDEX
        rows = torch.arange(len(labels), device=labels.device)[:, None]
        hidden = out.last_hidden_state[rows, batch["mlm_positions"]][chosen]
        logits = lm.predictions(hidden).float()  # bf16 cross-entropy is too coarse
        labels = labels[chosen]
        order, order_logits = batch["sentence_order_label"], lm.sop_classifier(out.pooler_output).float()
        return (F.cross_entropy(logits, labels, reduction="sum"), chosen.sum(), (logits.argmax(-1) == labels).sum(),
                F.cross_entropy(order_logits, order, reduction="sum"), (order_logits.argmax(-1) == order).sum())

    def loss(self, model: nn.Module, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]:
        mlm_total, n, _, sop_total, _ = model(batch)
        mlm, sop = mlm_total / n.clamp(min=1), sop_total / len(batch["sentence_order_label"])
        return mlm + sop, {"tokens": int(batch["attention_mask"].sum()), "mlm_loss": mlm.item(),
                           "sop_loss": sop.item()}

    @torch.no_grad()
    def evaluate(self, model: nn.Module) -> dict[str, float]:
        """Held-out masked-piece top-1 accuracy and perplexity, and sentence-order accuracy, on a fixed set."""
        if self.eval_data is None or self.settings.eval_sequences == 0:
            return {}
        total, count, right, _, order_right = summed_scores(model, self.eval_batches(), 5)
        pairs = sum(len(b["sentence_order_label"]) for b in self.eval_batches())
        return {"top1": right / max(count, 1), "ppl": float(np.exp(total / max(count, 1))),
                "sop_accuracy": order_right / max(pairs, 1)}

    def model_card(self, info: dict[str, Any]) -> str:
        cfg = self.lm.config
        E, H, V, L, G = (cfg.embedding_size, cfg.hidden_size, cfg.vocab_size, cfg.num_hidden_layers,
                         cfg.num_hidden_groups)
        return super().model_card(info) + f"""
## ALBERT's savings

| | |
|---|---|
| factorised embeddings | pieces {E} wide, projected to the hidden {H}: {V * E + E * H:,} weights instead of \
{V * H:,} |
| cross-layer sharing | {L} layers in {G} group{'s' * (G > 1)} of shared weights ({L // G} layer{'s' * (L // G > 1)} \
a group) |
"""


def pair_options(settings: AlbertSettings) -> dict[str, Any]:
    """How a run's sentence-order pairs are cut and masked: what its training and held-out
    :class:`~.bert_data.PretrainingData` share (and what ``ctxmodels quality`` draws a shipped model's held-out
    pairs with)."""
    return dict(max_seq_len=settings.max_seq_len, max_predictions=settings.max_predictions,
                batch_size=settings.batch_size, whole_word_masking=settings.whole_word_masking, seed=settings.seed,
                sentence_order=True, mask_split=settings.mask_shares)


def build_task(settings: AlbertSettings, out: str | Path, resume: bool = False) -> tuple[AlbertTask, TrainConfig]:
    """The task and trainer settings of an ALBERT run in ``out``: data prepared (and cached) as for BERT, sentence
    -order pairs of it, the model at the preset's size."""
    import transformers

    out = Path(out)
    data = prepare_on_every_rank(out, settings, resume, setup_distributed())
    tok = data.tokenizer
    config = albert_config(settings, tok)
    check_sequence_length(settings.max_seq_len, config)
    vocab = VocabInfo.from_tokenizer(tok)
    common = pair_options(settings)
    corpus = Path(settings.corpus).name
    train = PretrainingData(data.train, vocab, data_seed=settings.data_seed, name=f"{corpus} (training documents)",
                            **common)
    eval_data = (PretrainingData(data.heldout, vocab, name=f"{corpus} (held-out documents)", **common)
                 if data.heldout.n_tokens and settings.eval_sequences else None)
    torch.manual_seed(settings.seed)  # the same initial weights on every rank and every re-run
    model = transformers.AlbertForPreTraining(config)
    return AlbertTask(model, tok, train, eval_data, settings, data.meta), settings.train_config()
