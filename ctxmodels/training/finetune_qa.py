"""Extractive question answering (SQuAD v1.1) as a fine-tuning task: BERT's recipe (Devlin et al. 2019, sec. 4.2).

* The input is [CLS] question [SEP] paragraph [SEP] (the model's own pair template); a paragraph longer than
  ``max_length`` is read in windows, each starting ``doc_stride`` pieces after the one before
  (:meth:`~ctxmodels.encoding.PieceTokenizer.encode_windows`; the question keeps its first 64 pieces).
* The head gives every piece a start and an end score (``qa_outputs``: our
  :class:`~ctxmodels.heads.BertForQuestionAnswering`, transformers' ``*ForQuestionAnswering`` for the other
  encoders). The loss is the mean of the cross-entropies of the answer's first and last piece, found from the fast
  tokenizer's character offsets; a window that does not hold the whole answer points both at [CLS] (position 0),
  as in BERT's code and transformers' example.
* The prediction for a question is the span with the highest start + end score over all its windows whose two
  ends are pieces of the paragraph, the end not before the start, at most ``max_answer_length`` pieces
  (:func:`~ctxmodels.tasks.squad.decode_answer`); its text is the paragraph's characters from the first piece's start
  to the last piece's end. Exact match and F1 are the official SQuAD v1.1 script's
  (:func:`~ctxmodels.tasks.squad.squad_scores`), written as fractions into metrics.jsonl and finetune.json.

Batches, checkpoints, resume, finetune.json and saving are :class:`~ctxmodels.training.finetune_task.FinetuneTask`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..encoding import Encoded as Window
from ..tasks.squad import QaExample, answer_positions, decode_answer, squad_scores
from .finetune_task import FinetuneSettings, FinetuneTask, backend_for
from .trainer import Batch

if TYPE_CHECKING:
    from ..loading import LoadedModel

SPAN_LABELS = ["start", "end"]  # what the span head's two outputs are (config.json's id2label)


@dataclass
class QaItem:
    """One window of one question, as the model reads it, and where the answer starts and ends in it (0, 0: not
    in this window)."""

    ids: list[int]
    types: list[int]
    example: int  # index of the question in its split
    window: Window
    start: int = 0
    end: int = 0


class QaTask(FinetuneTask):
    """Extractive question answering on a pre-trained encoder (our BERT or one transformers reads) or a GPT."""

    def __init__(self, backbone: LoadedModel, data, settings: FinetuneSettings):
        self.backend = backend_for(backbone, settings)
        if not data.train:
            raise ValueError(f"task {data.name}: no training examples")
        self.backbone, self.data, self.settings = backbone, data, settings
        self.labels, self.kind = list(SPAN_LABELS), "qa"
        torch.manual_seed(settings.seed)  # the same new head for the same seed (and on --resume)
        self.model = self.backend.build(self.labels, self.kind)  # ELMo refuses here
        self.tokenizer = self.backend.tokenizer
        self.max_length = self.backend.max_length
        self.name = f"{backbone.kind}-qa-{settings.mode}"
        n = settings.max_examples
        self.questions = {"train": data.train[:n] if n else data.train, "dev": data.dev, "test": data.test}
        self.train = self._windows(self.questions["train"], train=True)
        self.dev = self._windows(self.questions["dev"])
        self.test = self._windows(self.questions["test"])
        if not any(w.end for w in self.train):
            raise ValueError(f"task {data.name}: no training answer fits in a window of {self.max_length} word "
                             "pieces; raise --max-length")
        self.cut_words = self.cut_examples = 0  # long paragraphs are read in windows, never cut
        self._order_cache: dict[int, np.ndarray] = {}

    def _windows(self, questions: Sequence[QaExample], train: bool = False) -> list[QaItem]:
        out = []
        for k, q in enumerate(questions):
            text, start = q.answers[0]  # SQuAD's training questions have one answer; scoring takes them all
            for w in self.tokenizer.encode_windows(q.question, q.context, self.max_length, self.settings.doc_stride):
                first, last = answer_positions(w, start, start + len(text)) if train else (0, 0)
                out.append(QaItem(w.ids, w.type_ids, k, w, first, last))
        return out

    def sizes(self) -> str:
        return f"{len(self.questions['train']):,} training questions in {len(self.train):,} windows"

    # -- batches and the loss ---------------------------------------------------------------------------------------

    def collate(self, items: Sequence[QaItem]) -> Batch:
        return {**self.backend.inputs(items, self.model),
                "start_positions": torch.tensor([w.start for w in items], dtype=torch.long),
                "end_positions": torch.tensor([w.end for w in items], dtype=torch.long)}

    @staticmethod
    def spans(model: nn.Module, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        out = model(**{k: v for k, v in batch.items() if not k.endswith("_positions")})
        return out.start_logits.float(), out.end_logits.float()

    def loss(self, model: nn.Module, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]:
        start, end = self.spans(model, batch)
        loss = (F.cross_entropy(start, batch["start_positions"]) + F.cross_entropy(end, batch["end_positions"])) / 2
        return loss, {"tokens": int(batch["attention_mask"].sum()), "examples": float(len(start))}

    # -- scoring ------------------------------------------------------------------------------------------------

    @torch.no_grad()
    def predict(self, model: nn.Module, split: str, batch_size: int = 64) -> list[str]:
        """The predicted answer to every question of ``split``."""
        items = {"train": self.train, "dev": self.dev, "test": self.test}[split]
        was = model.training
        model.eval()
        device = next(model.parameters()).device
        starts: list[np.ndarray | None] = [None] * len(items)
        ends: list[np.ndarray | None] = [None] * len(items)
        order = sorted(range(len(items)), key=lambda i: len(items[i].ids))
        for b in range(0, len(order), batch_size):
            chunk = order[b : b + batch_size]
            batch = {k: v.to(device) for k, v in self.collate([items[i] for i in chunk]).items()}
            s, e = self.spans(model, batch)
            for row, i in enumerate(chunk):
                starts[i], ends[i] = s[row].cpu().numpy(), e[row].cpu().numpy()
        model.train(was)
        questions = self.questions[split]
        per_question: list[list[int]] = [[] for _ in questions]
        for i, item in enumerate(items):
            per_question[item.example].append(i)
        return [decode_answer(q.context, [items[i].window for i in idx], [starts[i] for i in idx],
                              [ends[i] for i in idx], self.settings.max_answer_length)[0]
                for q, idx in zip(questions, per_question)]

    def measure(self, model: nn.Module, split: str, per_class: bool = False) -> dict[str, Any]:
        """Exact match and F1 of the split's questions (``per_class`` has no meaning here)."""
        predicted = self.predict(model, split)
        return squad_scores(predicted, [[t for t, _ in q.answers] for q in self.questions[split]])

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        if not self.dev:
            return {}
        m = self.measure(model, "dev")
        return {"dev_exact_match": m["exact_match"], "dev_f1": m["f1"]}

    @staticmethod
    def shown(metrics: dict[str, Any]) -> str:
        return "; ".join(f"{split} exact match {m['exact_match']:.4f}, F1 {m['f1']:.4f}"
                         for split, m in metrics.items())

    # -- the card -----------------------------------------------------------------------------------------------

    def card(self, info: dict[str, Any], final: dict[str, Any] | None) -> str:
        s, d, b = self.settings, self.data, self.backend
        rows = [f"| {split} | {m['exact_match']:.4f} | {m['f1']:.4f} | {m['n']:,} |"
                for split in ("dev", "test") if (m := (final or {}).get(split))]
        if not rows and info.get("metrics"):
            m = info["metrics"]
            rows.append(f"| dev (during training) | {m.get('dev_exact_match', float('nan')):.4f} | "
                        f"{m.get('dev_f1', float('nan')):.4f} | |")
        cfg = info.get("train_config", {})
        stride = s.doc_stride or "half a window"
        return f"""# {b.title} fine-tuned on {d.name} (question answering, {s.mode})

Fine-tuned with ctxmodels from `{s.model}`: {b.trains(s.mode)}.
Task head: {b.head(self.kind)}. `ctxmodels.load(this folder)` gives the backbone (with `finetune_info`);
`ctxmodels.load(this folder).task_model().answer(question, context)` answers a question from a text.

## Task

`{s.task}`: {d.description}

Questions: {len(self.questions['train']):,} train ({len(self.train):,} windows), {len(self.questions['dev']):,} dev,
{len(self.questions['test']):,} test. Windows of {self.max_length} word pieces, {stride} apart; answers of at
most {s.max_answer_length} pieces.

Data: {d.source}

## Results

Exact match and F1 as the official SQuAD v1.1 script computes them (answers normalised; the best over the gold
answers), as fractions.

| split | exact match | F1 | questions |
|---|---|---|---|
{chr(10).join(rows) or '| (not evaluated yet) | | | |'}

## Settings

| | |
|---|---|
| command | `{info.get('command', '')}` |
| steps | {info.get('steps')} of {info.get('max_steps')}, batch {s.batch_size} windows |
| learning rate | {cfg.get('lr', s.lr)} (AdamW, weight decay {s.weight_decay} except biases/norms), \
warm-up {cfg.get('warmup_steps', s.warmup)} steps then linear decay |
| seed | {s.seed} |
| wall time | {info.get('wall_time_s', 0):.0f} s |
| hardware | {info.get('hardware', '')} |
"""
