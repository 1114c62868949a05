"""``ctxmodels train electra``: ELECTRA's replaced-token detection (Clark et al. 2020; the notes' eqs. 7.1, 7.2)
trained by the shared trainer on whole sentences packed across documents, dynamically masked (:mod:`.lm_data`).

Two transformers models are trained together, in one forward (:class:`ElectraPair`):

- the **generator**, ``ElectraForMaskedLM``, a fraction of the discriminator's width (``--generator-fraction``,
  default 1/4: the paper found 1/4 to 1/2 best; hidden size, feed-forward size and heads scaled, at least one head,
  the same depth), is a masked LM on 15% of the pieces (80% [MASK] / 10% random / 10% kept by default, as every
  masked LM here; ``--mask-split 85/0/15`` is what the paper's released code feeds its generator);
- its **samples** from its softmax at those positions (no gradient flows through the sampling) replace the
  original pieces, and the **discriminator**, ``ElectraForPreTraining``, says for every real (non-pad) piece
  whether it was replaced; a sample that happens to be the original word counts as original, as in the paper.

The loss is the generator's masked-LM loss plus ``--disc-weight`` (λ, default 50 as in the paper) times the
discriminator's (mean binary cross-entropy over the real pieces). The embeddings (word, position and segment
tables and their LayerNorm) are one module shared by the two, as the paper's code shares them; the generator,
narrower than the embeddings, reads them through its ``embeddings_project``, and its output layer is tied to the
shared word table.

Saved: the discriminator in the run folder and the generator in ``generator/``, each in transformers' own layout
with the run's tokenizer, so that ``from_pretrained`` reads each with nothing missing; ``ctxmodels.load`` opens the
discriminator as an encoder that does not fill in blanks and the generator as one that does. The checkpoint holds
both, and the optimizer over their parameters (the shared ones once).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..bounds import Bound, float_range
from ..masking import describe_mask_split
from .bert_corpus import prepare_on_every_rank
from .bert_data import IGNORE_INDEX
from .lm_task import (
    LanguageModelTask,
    PackedSettings,
    check_sequence_length,
    load_pretrained_weights,
    packed_datasets,
    save_pretrained_folder,
    summed_scores,
)
from .trainer import Batch, TrainConfig, default_model_card, setup_distributed

#: the generator's folder inside the run's
GENERATOR = "generator"
#: the generator's width as a fraction of the discriminator's: above 0, at most 1 (as wide)
FRACTION = float_range(0, 1, lo_open=True)
#: a seed of its own for the held-out samples, so that evaluating never moves the training's random state
_EVAL_SAMPLES = 12


def fraction_problem(value: Any, name: str = "--generator-fraction") -> str | None:
    """Why ``value`` is no generator fraction (None when it is one), in one line that starts with ``name`` (""
    where the command-line parser names the option itself)."""
    if FRACTION.contains(value):
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 1:
        return (f"{name} {value:g} would make the generator wider than its discriminator (at 1 it is as wide); "
                "ELECTRA's generator is smaller: the paper found 1/4 to 1/2 of the width best").strip()
    return FRACTION.error(name, value).strip()


@dataclass
class ElectraSettings(PackedSettings):
    """An ELECTRA run: the model size (the discriminator's), vocabulary, sequences and schedule of ``train
    roberta``, the generator's width as a fraction of the discriminator's and the weight λ of the discriminator's
    loss."""

    KIND: ClassVar[str] = "electra"
    TITLE: ClassVar[str] = "ELECTRA"
    BOUNDS: ClassVar[dict[str, Bound]] = {"generator_fraction": FRACTION, "disc_weight": float_range(0, 10_000)}

    generator_fraction: float = 0.25
    disc_weight: float = 50.0

    def check(self) -> None:
        problem = fraction_problem(self.generator_fraction)
        if problem:  # before the generic range check: the reason, not only the range
            raise ValueError(problem)
        super().check()


def electra_configs(settings: PackedSettings, tok: Any, fraction: float) -> tuple[Any, Any]:
    """(discriminator, generator) transformers configs: the discriminator at the size of BERT's ``--preset``, the
    generator ``fraction`` as wide with the same depth and the discriminator's embedding width."""
    import transformers

    from ..bert import BertConfig

    size = BertConfig.preset(settings.preset, vocab_size=tok.vocab_size)
    # type_vocab_size 2 as ELECTRA's: its tokenizer gives the second text of a pair segment 1 (fine-tuning pairs)
    common = dict(vocab_size=tok.vocab_size, embedding_size=size.hidden_size, num_hidden_layers=size.num_hidden_layers,
                  max_position_embeddings=size.max_position_embeddings, type_vocab_size=2,
                  hidden_dropout_prob=settings.dropout, attention_probs_dropout_prob=settings.dropout,
                  pad_token_id=tok.pad_id, bos_token_id=tok.cls_id, eos_token_id=tok.sep_id)
    discriminator = transformers.ElectraConfig(
        hidden_size=size.hidden_size, num_attention_heads=size.num_attention_heads,
        intermediate_size=size.intermediate_size, architectures=["ElectraForPreTraining"], **common)
    heads = max(1, int(size.num_attention_heads * fraction))
    hidden = max(heads, round(size.hidden_size * fraction / heads) * heads)  # heads share the width equally
    generator = transformers.ElectraConfig(
        hidden_size=hidden, num_attention_heads=heads,
        intermediate_size=max(1, round(size.intermediate_size * fraction)),
        architectures=["ElectraForMaskedLM"], **common)
    return discriminator, generator


class PairScores(NamedTuple):
    """Sums and counts of one batch (sums, so that held-out figures add up over batches)."""

    gen_total: torch.Tensor  # the generator's cross-entropy summed over the masked positions
    masked: torch.Tensor  # their number
    gen_right: torch.Tensor  # the generator's top-1 guesses there that are right
    disc_total: torch.Tensor  # the discriminator's binary cross-entropy summed over the real pieces
    real: torch.Tensor  # their number
    disc_right: torch.Tensor  # its right calls (replaced or original) among them
    replaced: torch.Tensor  # the pieces really replaced
    spotted: torch.Tensor  # those the discriminator called replaced


def replaced_token_labels(input_ids: torch.Tensor, labels: torch.Tensor, attention_mask: torch.Tensor,
                          sampled: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(the discriminator's input, its labels): the original pieces with the generator's ``sampled`` ones (in
    order of the masked positions, ``labels`` != -100) put in at the masked positions; 1 where the piece is not
    the original (a sample equal to the original is 0), -100 at padding."""
    chosen = labels != IGNORE_INDEX
    original = torch.where(chosen, labels, input_ids)
    corrupted = original.masked_scatter(chosen, sampled)
    target = (corrupted != original).long()
    return corrupted, target.masked_fill(attention_mask == 0, IGNORE_INDEX)


class ElectraPair(nn.Module):
    """The generator and the discriminator with shared embeddings, and their scores in one forward: the trainer
    wraps this module in DDP, which synchronises the gradients of everything its forward ran."""

    def __init__(self, generator: nn.Module, discriminator: nn.Module, disc_weight: float):
        super().__init__()
        self.generator, self.discriminator, self.disc_weight = generator, discriminator, disc_weight
        self.share_embeddings()

    def share_embeddings(self) -> None:
        """One embeddings module for both (the paper's code), the generator's output layer tied to its words."""
        self.generator.electra.embeddings = self.discriminator.electra.embeddings
        self.generator.tie_weights()

    def forward(self, batch: Batch, sampler: torch.Generator | None = None) -> PairScores:
        """Scores of a masked batch; the generator's samples drawn from ``sampler`` (None: torch's own random
        state, which the trainer saves with each checkpoint, so a resumed run draws what it would have)."""
        ids, attention, labels = batch["input_ids"], batch["attention_mask"], batch["labels"]
        chosen = labels != IGNORE_INDEX
        gen = self.generator
        hidden = gen.electra(input_ids=ids, attention_mask=attention).last_hidden_state
        # The vocabulary projection only at the masked positions: 15% of the cost of scoring every position.
        logits = gen.generator_lm_head(gen.generator_predictions(hidden[chosen])).float()  # bf16 CE is too coarse
        targets = labels[chosen]
        gen_total = F.cross_entropy(logits, targets, reduction="sum")
        with torch.no_grad():
            sampled = torch.multinomial(logits.softmax(-1), 1, generator=sampler).squeeze(-1)
        corrupted, target = replaced_token_labels(ids, labels, attention, sampled)
        scores = self.discriminator(input_ids=corrupted, attention_mask=attention).logits.float()
        real = target != IGNORE_INDEX
        truth = target[real].float()
        disc_total = F.binary_cross_entropy_with_logits(scores[real], truth, reduction="sum")
        called = (scores[real] > 0).float()
        return PairScores(gen_total, chosen.sum(), (logits.argmax(-1) == targets).sum(), disc_total, real.sum(),
                          (called == truth).sum(), truth.sum(), (called * truth).sum())

    def loss(self, scores: PairScores) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(generator MLM + λ · discriminator loss, the generator's mean loss, the discriminator's mean loss)."""
        gen = scores.gen_total / scores.masked.clamp(min=1)
        disc = scores.disc_total / scores.real.clamp(min=1)
        return gen + self.disc_weight * disc, gen, disc


class ElectraTask(LanguageModelTask):
    """The trainer's side of ELECTRA: ``lm`` is the :class:`ElectraPair`, ``model`` the same behind the shared
    :class:`~.lm_task.ScoredModel`."""

    name = "electra"
    TITLE = "ELECTRA"
    ARCHITECTURE = "ElectraForPreTraining (discriminator) + ElectraForMaskedLM (generator, in generator/)"

    @staticmethod
    def score(lm: nn.Module, batch: Batch) -> PairScores:
        return lm(batch)

    def loss(self, model: nn.Module, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]:
        scores = model(batch)
        loss, gen, disc = self.lm.loss(scores)
        real = max(int(scores.real), 1)
        return loss, {"tokens": int(batch["attention_mask"].sum()), "gen_loss": gen.item(), "disc_loss": disc.item(),
                      "disc_accuracy": int(scores.disc_right) / real, "replaced": int(scores.replaced) / real}

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        """Held-out figures on a fixed set with fixed samples (:meth:`heldout_scores`, :meth:`figures`)."""
        if self.eval_data is None or self.settings.eval_sequences == 0:
            return {}
        return self.figures(self.heldout_scores())

    @torch.no_grad()
    def heldout_scores(self) -> PairScores:
        """The scores of the fixed held-out set summed over its batches, the generator's samples drawn from a
        seed of their own (the same at every evaluation, and when ``ctxmodels quality`` measures the model
        again)."""
        device = next(self.lm.parameters()).device
        sampler = torch.Generator(device=device).manual_seed(self.settings.seed * 1000 + _EVAL_SAMPLES)
        return PairScores(*summed_scores(self.lm, self.eval_batches(), len(PairScores._fields), sampler=sampler))

    @staticmethod
    def figures(s: PairScores) -> dict[str, float]:
        """The generator's top-1 and perplexity at the masked pieces; the discriminator's loss, accuracy over
        every real piece and share of the replaced ones it spots; the share of pieces replaced."""
        masked, real = max(s.masked, 1), max(s.real, 1)
        return {"gen_top1": s.gen_right / masked, "gen_ppl": float(np.exp(s.gen_total / masked)),
                "disc_loss": s.disc_total / real, "disc_accuracy": s.disc_right / real,
                "disc_recall": s.spotted / max(s.replaced, 1), "replaced": s.replaced / real}

    def save_model(self, directory: Path) -> None:
        save_pretrained_folder(self.lm.discriminator, self.tokenizer, directory)
        save_pretrained_folder(self.lm.generator, self.tokenizer, Path(directory) / GENERATOR)

    def load_weights(self, directory: Path) -> None:
        load_pretrained_weights(self.lm.generator, Path(directory) / GENERATOR)
        load_pretrained_weights(self.lm.discriminator, directory)  # the shared embeddings: the same values
        self.lm.share_embeddings()

    def objective(self) -> str:
        s = self.settings
        return (f"replaced-token detection: a generator {s.generator_fraction:g} as wide fills in 15% of pieces "
                f"({describe_mask_split(s.mask_shares)}, at most {s.max_predictions}; dynamic masking), its samples "
                f"replace them, and the discriminator tells every piece replaced or original; loss = generator MLM "
                f"+ {s.disc_weight:g} x discriminator loss; embeddings shared")

    def model_card(self, info: dict[str, Any]) -> str:
        s, m = self.settings, self.data_meta
        disc, gen = self.lm.discriminator.config, self.lm.generator.config
        n_disc = sum(p.numel() for p in self.lm.discriminator.parameters())
        n_gen = sum(p.numel() for p in self.lm.generator.parameters())
        return default_model_card(self.TITLE, info) + f"""
## Model

| | |
|---|---|
| architecture | {self.ARCHITECTURE} |
| discriminator | {s.preset}: {_size(disc)}, {n_disc:,} parameters |
| generator (`{GENERATOR}/`) | {_size(gen)}, {n_gen:,} parameters (the embeddings shared with the \
discriminator included) |
| dropout while training | {s.dropout:g} |
| tokenizer | {m['tokenizer']}; {m['vocab_size']:,} pieces |

## Training data

| | |
|---|---|
| corpus | `{m['corpus']}` ({m['documents']} documents, blank-line separated) |
| held-out documents | {', '.join(map(str, m['heldout_indices'])) or 'none'} (0-based, in corpus order) |
| sequences | whole sentences packed across documents up to {s.max_seq_len} pieces, batch {s.batch_size} |
| objective | {self.objective()} |
"""


def _size(config: Any) -> str:
    heads = config.num_attention_heads
    return (f"{config.num_hidden_layers} layers, hidden {config.hidden_size}, {heads} head{'s' * (heads != 1)}, "
            f"feed-forward {config.intermediate_size}")


def build_task(settings: ElectraSettings, out: str | Path, resume: bool = False) -> tuple[ElectraTask, TrainConfig]:
    """The task and trainer settings of a run in ``out``: data prepared (and cached) as for BERT, the two models
    built with their embeddings shared."""
    import transformers

    out = Path(out)
    data = prepare_on_every_rank(out, settings, resume, setup_distributed())
    disc_config, gen_config = electra_configs(settings, data.tokenizer, settings.generator_fraction)
    check_sequence_length(settings.max_seq_len, disc_config)
    train, eval_data = packed_datasets(settings, data, mlm=True)
    torch.manual_seed(settings.seed)  # the same initial weights on every rank and every re-run
    pair = ElectraPair(transformers.ElectraForMaskedLM(gen_config), transformers.ElectraForPreTraining(disc_config),
                       settings.disc_weight)
    return ElectraTask(pair, data.tokenizer, train, eval_data, settings, data.meta), settings.train_config()
