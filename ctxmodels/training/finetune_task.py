"""Fine-tuning a pre-trained BERT, another encoder transformers reads, a GPT or ELMo on a labelled task, as a task of
the shared trainer.

The recipe is BERT's (Devlin et al. 2019, sec. 3.2 and A.3) and ELMo's (Peters et al. 2018, sec. 3.3):

* BERT, ``finetune``: every weight trains, with a task head (:mod:`ctxmodels.heads`): [CLS] -> pooler ->
  classifier for a sentence task; a classifier on each word's first piece for a token task (the other pieces,
  [CLS], [SEP] and padding get the label -100 that the loss skips, as in transformers); a word task ("the sense
  of *bank* here") is a token task with a label at its one target word. ``feature``: the encoder is frozen, only
  the head learns (a linear probe of the top layer).
* The other encoders (RoBERTa, DistilBERT, ALBERT, ELECTRA, DeBERTa-v2: kind "transformers"): the same recipe
  through transformers' own head classes (``AutoModelForTokenClassification`` /
  ``AutoModelForSequenceClassification`` on the base folder: ``RobertaForTokenClassification``, ...), labelled on
  each word's first piece as the model's tokenizer splits the words (WordPiece, byte-level BPE or SentencePiece).
  The learning rates are BERT's by hidden size (``Backend.default_lr``): these are BERT-shaped encoders, and 3e-5
  lies in the range their papers fine-tuned base-size models with (roughly 1e-5 to 5e-5; ELECTRA-base used 1e-4
  together with a layer-wise decay, which is not applied here).
* A GPT (kind "gpt", a left-to-right GPT-2 as ``ctxmodels train gpt`` writes it): the same recipe and rates through
  transformers' GPT-2 heads. Each piece has read only the pieces before it, so a word's label sits on a piece that
  has not seen the words after it, and a sentence (or pair) is read at its last piece, the only one that has read
  it all (``GPT2ForSequenceClassification``: the last piece that is not padding). No token types: GPT-2 would add
  them through its word embeddings, which it was not pre-trained with.
* ELMo, ``feature``: the biLM is frozen (no dropout inside it); the scalar mix s_j, gamma and the task layer
  learn (eq. 1 of the ELMo paper). ``finetune``: the biLM trains too.
* AdamW with weight decay 0.01 except biases, LayerNorms and the mix's scalars (the trainer's rule), linear
  warm-up over 2% of the steps (at least 3), then linear decay; batches of 32; 3 epochs unless ``steps`` is set.
  Learning rates (each backend's ``default_lr``): 3e-5 for BERT-base and larger (the paper's middle value); for
  the compact BERTs the grid Google published with them (Turc et al. 2019: 3e-4, 1e-4, 5e-5, 3e-5), from its
  top: 3e-4 up to hidden size 256 (our shipped 2 x 128 BERT reached 0.80 test accuracy on ``pos`` in 300 steps at
  3e-4, 0.67 at 1e-4; 0.84 at 1e-3, outside any published recipe), 1e-4 up to 512; 1e-3 wherever only a new layer
  learns (the probes' and AllenNLP's ELMo taggers' rate for freshly initialised layers); 5e-4 for a fine-tuned
  ELMo (the biLM moves; an LSTM language model pre-trained with ~1e-3 tolerates half of it, and the new task layer
  still learns within a few hundred steps).
* A sentence-pair task (kind "pair", a ``text_a<TAB>text_b<TAB>label`` file) is a sentence task on
  [CLS] A [SEP] B [SEP] (the model's own pair template; token types 0 and 1 where the model reads them), the
  longer text losing words first. Extractive question answering is :class:`~ctxmodels.training.finetune_qa.QaTask`,
  a subclass of the task here. ELMo takes neither (a GPT takes both).
* Words beyond the model's length limit (``max_length``: word pieces with the specials for BERT and the other
  encoders, words for ELMo) are cut off at a word boundary; their labels are not trained or scored, and the
  card says how many.

What differs between the kinds of backbone (building the model, its inputs, saving and restoring it, the learning
rate, the card's words) lives in one small class each (:mod:`ctxmodels.training.finetune_backends`), named by the
kind's entry in the registry (:mod:`ctxmodels.kinds`) and chosen in one place, :func:`backend_for`; the loop, the
batches, scoring, ``finetune.json`` and the card are shared.

Batches obey the trainer's rule (a pure function of seed, epoch and index), so ``--resume`` continues exactly.
The dev split is scored during training (accuracy, macro-F1, loss), dev and test at the end (plus F1 per class)
by :func:`final_metrics`, which also writes ``finetune.json`` and the model card.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .. import kinds
from ..bounds import MAX_SEED, Bound, float_range, int_range
from ..checkpoint import CheckpointError, read_json, write_json
from ..formats.finetuned import (
    FINETUNE_FILE,
    encode_words,
)
from ..heads import IGNORE_INDEX
from ..paths import assets_dir
from .settings import check_stored
from .trainer import Batch, TrainConfig, Trainer, TrainTask, hardware_description

if TYPE_CHECKING:
    from ..loading import LoadedModel

MODES = ("finetune", "feature")
RUN_FILE = "run.json"
KIND = "finetune"


@dataclass
class FinetuneSettings:
    """A fine-tuning run; stored in ``OUT/run.json`` so that ``--resume`` needs no options. None = default."""

    model: str = ""  # as the user gave it
    model_path: str = ""  # what it resolved to
    task: str = ""
    semcor_dir: str | None = None  # where pos/ner/wsd read SemCor (None: the default copy)
    corpus: str | None = None  # the novels of the period task (None: the shared corpus)
    mode: str = "finetune"
    epochs: int = 3
    steps: int | None = None  # None: epochs x batches per epoch
    lr: float | None = None  # None: default_lr
    batch_size: int = 32
    warmup: int | None = None  # None: 2% of the steps, at least 3
    weight_decay: float = 0.01
    max_length: int = 128
    max_examples: int | None = None
    max_answer_length: int = 30  # question answering: the longest answer predicted, in word pieces (BERT's 30)
    doc_stride: int | None = None  # question answering: pieces between window starts (None: half a window)
    seed: int = 0
    eval_every: int | None = None  # None: four times in the run
    save_every: int = 500
    log_every: int = 10

    #: what may differ from the stored settings on --resume (the others decide the numbers)
    CHANGEABLE = frozenset({"steps", "eval_every", "save_every", "log_every"})
    #: the range of each number, as the command line bounds its option (commands/finetune.py); a stored run's
    #: are checked against it (a run.json edited by hand)
    BOUNDS: ClassVar[dict[str, Bound]] = {
        "epochs": int_range(1, 1000), "steps": int_range(1, 10_000_000), "lr": float_range(0, 1, lo_open=True),
        "batch_size": int_range(1, 4096), "warmup": int_range(0, 10_000_000), "weight_decay": float_range(0, 1),
        "max_length": int_range(8, 4096), "max_examples": int_range(1, 10_000_000), "seed": int_range(0, MAX_SEED),
        "max_answer_length": int_range(1, 4096), "doc_stride": int_range(1, 4096),
        "eval_every": int_range(0, 10_000_000), "save_every": int_range(0, 10_000_000),
        "log_every": int_range(1, 10_000_000),
    }

    def save(self, out: Path) -> None:
        write_json(out / RUN_FILE, {"kind": KIND, "settings": dataclasses.asdict(self)})

    @classmethod
    def stored(cls, out: Path) -> FinetuneSettings:
        path = out / RUN_FILE
        d = read_json(path)
        if d.get("kind") != KIND or not isinstance(d.get("settings"), dict):
            raise CheckpointError(f"{path}: not the settings of a fine-tuning run (kind {d.get('kind')!r})")
        names = {f.name for f in dataclasses.fields(cls)}
        settings = check_stored(path, d["settings"], cls, cls.BOUNDS, names)
        if not settings.get("model_path") or not settings.get("task"):
            raise CheckpointError(f"{path}: damaged run settings: model_path and task must be set")
        return cls(**{k: v for k, v in settings.items() if k in names})

    @classmethod
    def resolve(cls, given: dict[str, Any], out: Path, resume: bool) -> FinetuneSettings:
        """The new run's settings (``given`` plus defaults), or the stored ones of the run being resumed with
        the changeable options applied; ValueError for an option that differs from the run's."""
        given = {k: v for k, v in given.items() if v is not None}
        if not resume:
            s = cls(**given)
        else:
            s = cls.stored(out)
            if given.get("model_path", s.model_path) != s.model_path:
                raise ValueError(f"{out}: --resume continues the fine-tuning of {s.model} ({s.model_path}), but "
                                 f"--model {given['model']} is {given['model_path']}; leave --model out to resume, "
                                 "or fine-tune into a new --out")
            differ = [f"--{k.replace('_', '-')} {v} (the run used {getattr(s, k)})" for k, v in given.items()
                      if k not in cls.CHANGEABLE and k not in ("model", "model_path") and v != getattr(s, k)]
            if differ:
                raise ValueError(f"{out}: --resume continues the run with its stored settings ({RUN_FILE}), but "
                                 f"these differ: {'; '.join(differ)}; leave them out or fine-tune into a new --out")
            s = dataclasses.replace(s, **{k: v for k, v in given.items() if k in cls.CHANGEABLE})
        if s.mode not in MODES:
            raise ValueError(f"--mode must be one of {', '.join(MODES)}, got {s.mode!r}")
        return s


# ----------------------------------------------------------------------------------------------------------
# encoding the examples


@dataclass
class Encoded:
    """One example as the model reads it: word piece ids or ELMo words, and label ids (-100 = not scored)."""

    ids: list[int] | None  # word pieces with the specials ([CLS]/[SEP], <s>/</s>); None for ELMo
    words: list[str] | None  # ELMo's words; None for BERT
    labels: list[int] | int  # per position (token/word tasks) or one (sentence and pair tasks)
    cut: int = 0  # words cut off by the length limit
    types: list[int] | None = None  # token type ids of a pair (0 for the first text, 1 for the second)


def _label_ids(example, kind: str, index: dict[str, int], n_words: int) -> list[int] | int:
    """Label ids per word (-100 for unlabelled words and words beyond ``n_words``), or the sentence's id."""
    if kind in ("sentence", "pair"):
        return index.get(str(example.label), IGNORE_INDEX)
    ids = [IGNORE_INDEX] * len(example.words)
    if kind == "word":
        t = example.target
        if t is not None and 0 <= t < n_words:
            ids[t] = index.get(str(example.label), IGNORE_INDEX)
        return ids
    for w, lab in enumerate(example.label[:n_words]):
        if lab:
            ids[w] = index.get(lab, IGNORE_INDEX)
    return ids


def portable_base_path(settings: FinetuneSettings) -> str:
    """The base model's path as finetune.json and the card record it: "" for a shipped model named by its short
    name (the name finds it on any machine; this machine's path would only mislead elsewhere), else the path."""
    name, path = settings.model, Path(settings.model_path) if settings.model_path else None
    if path is not None and "/" not in name and path.parent == assets_dir().resolve() and path.name == name:
        return ""
    return settings.model_path


def encode_examples(examples: Sequence, kind: str, labels: Sequence[str], tokenizer=None,
                    max_length: int = 128) -> list[Encoded]:
    """Encode task examples for an encoder (``tokenizer`` given: labels on each word's first piece) or ELMo
    (words)."""
    index = {lab: i for i, lab in enumerate(labels)}
    out = []
    for ex in examples:
        words = [str(w) for w in ex.words]
        if kind == "pair":  # [CLS] A [SEP] B [SEP]: the longer text loses words first
            enc, cut = tokenizer.encode_word_pair(words, [str(w) for w in ex.pair], max_length)
            out.append(Encoded(enc.ids, None, _label_ids(ex, kind, index, 0), cut, enc.type_ids))
        elif tokenizer is not None:
            enc, kept = encode_words(tokenizer, words, max_length)
            per_word = _label_ids(ex, kind, index, kept)
            if kind == "sentence":
                lab: list[int] | int = per_word
            else:
                lab, seen = [], set()
                for w in enc.word_ids:
                    first = w is not None and w not in seen
                    lab.append(per_word[w] if first else IGNORE_INDEX)
                    if w is not None:
                        seen.add(w)
            out.append(Encoded(enc.ids, None, lab, len(words) - kept))
        else:
            kept = min(len(words), max_length)
            lab = _label_ids(ex, kind, index, kept)
            out.append(Encoded(None, words[:kept], lab if kind == "sentence" else lab[:kept], len(words) - kept))
    return out


def _scored(e: Encoded) -> bool:
    return (e.labels != IGNORE_INDEX) if isinstance(e.labels, int) else any(x != IGNORE_INDEX for x in e.labels)


# ----------------------------------------------------------------------------------------------------------
# scoring


def scores(gold: np.ndarray, pred: np.ndarray, labels: Sequence[str], per_class: bool = False) -> dict[str, Any]:
    """Accuracy and macro-F1 (over the classes in gold or predicted, scikit-learn's convention); with
    ``per_class`` the F1 and support of every class that occurs in gold."""
    from sklearn.metrics import f1_score

    if len(gold) == 0:
        return {"accuracy": float("nan"), "macro_f1": float("nan"), "n": 0}
    out: dict[str, Any] = {"accuracy": float((gold == pred).mean()),
                           "macro_f1": float(f1_score(gold, pred, average="macro", zero_division=0)),
                           "n": int(len(gold))}
    if per_class:
        present = sorted(set(gold.tolist()))
        f1 = f1_score(gold, pred, labels=present, average=None, zero_division=0)
        support = np.bincount(gold, minlength=len(labels))
        out["per_class"] = {labels[c]: {"f1": float(v), "support": int(support[c])} for c, v in zip(present, f1)}
    return out


# ----------------------------------------------------------------------------------------------------------
# the trainer's task


def backend_for(backbone: LoadedModel, settings: FinetuneSettings) -> Any:
    """The backend (a :class:`~ctxmodels.training.finetune_backends.Backend`) that the registry names for a loaded
    model's kind; ValueError for a kind without one."""
    kind = kinds.kind_of(backbone)
    if kind is None or not kind.finetune:
        able = ", ".join(kinds.get(k).title for k in kinds.with_capability(kinds.FINETUNE))
        raise ValueError(f"{settings.model} is a {backbone.kind} model: only {able} models have weights and layers "
                         "to fine-tune (static vectors have no context)")
    return kinds.named(kind.finetune)(backbone, settings)


class FinetuneTask(TrainTask):
    """A labelled task on a pre-trained backbone (a :class:`~ctxmodels.loading.LoadedModel` of kind bert,
    transformers, gpt or elmo)."""

    name = "finetune"

    def __init__(self, backbone: LoadedModel, data, settings: FinetuneSettings):
        self.backend = backend_for(backbone, settings)
        if data.kind not in ("sentence", "token", "word", "pair"):
            raise ValueError(f"task kind {data.kind!r} is not sentence, token, word or pair (question answering is "
                             "finetune_qa.QaTask)")
        if not data.train:
            raise ValueError(f"task {data.name}: no training examples")
        self.backbone, self.data, self.settings = backbone, data, settings
        self.labels = list(data.labels)
        self.kind = data.kind
        torch.manual_seed(settings.seed)  # the same new head for the same seed (and on --resume)
        self.model = self.backend.build(self.labels, self.kind)
        self.tokenizer = self.backend.tokenizer
        self.max_length = self.backend.max_length
        self.name = f"{backbone.kind}-{settings.mode}"
        n = settings.max_examples
        self.train = [e for e in self._encode(data.train[:n] if n else data.train) if _scored(e)]
        self.dev = self._encode(data.dev)
        self.test = self._encode(data.test)
        if not self.train:
            raise ValueError(f"task {data.name}: no training example has a label the model can learn")
        self.cut_words = sum(e.cut for e in self.train + self.dev + self.test)
        self.cut_examples = sum(e.cut > 0 for e in self.train + self.dev + self.test)
        self._order_cache: dict[int, np.ndarray] = {}

    def _encode(self, examples) -> list[Encoded]:
        return encode_examples(examples, self.kind, self.labels, self.tokenizer, self.max_length)

    # -- batches ----------------------------------------------------------------------------------------------

    def num_batches(self, epoch: int) -> int:
        return math.ceil(len(self.train) / self.settings.batch_size)

    def _order(self, epoch: int) -> np.ndarray:
        if epoch not in self._order_cache:
            self._order_cache = {epoch: np.random.default_rng([self.settings.seed, epoch]).permutation(len(self.train))}
        return self._order_cache[epoch]

    def get_batch(self, epoch: int, index: int) -> Batch:
        bs = self.settings.batch_size
        return self.collate([self.train[i] for i in self._order(epoch)[index * bs : (index + 1) * bs]])

    def examples_seen(self, steps: int) -> int:
        """Training examples in the first ``steps`` batches (the last batch of an epoch may be short)."""
        n, bs = len(self.train), self.settings.batch_size
        per_epoch = self.num_batches(0)
        full, rest = divmod(steps, per_epoch)
        return full * n + min(rest * bs, n)

    def collate(self, items: Sequence[Encoded]) -> Batch:
        if self.kind in ("sentence", "pair"):
            labels = torch.tensor([e.labels for e in items], dtype=torch.long)
        else:
            T = max(len(e.labels) for e in items)
            labels = torch.full((len(items), T), IGNORE_INDEX, dtype=torch.long)
            for i, e in enumerate(items):
                labels[i, : len(e.labels)] = torch.tensor(e.labels, dtype=torch.long)
        return {**self.backend.inputs(items, self.model), "labels": labels}

    # -- the model ------------------------------------------------------------------------------------------

    @staticmethod
    def logits(model: nn.Module, batch: Batch) -> torch.Tensor:
        if "char_ids" in batch:
            return model(batch["char_ids"], batch["mask"]).logits
        return model(**{k: v for k, v in batch.items() if k != "labels"}).logits  # our heads and transformers'


    def loss(self, model: nn.Module, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]:
        logits = self.logits(model, batch).float()
        labels = batch["labels"]
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=IGNORE_INDEX)
        tokens = batch["attention_mask"].sum() if "attention_mask" in batch else batch["mask"].sum()
        return loss, {"tokens": int(tokens), "examples": float(len(labels))}

    @torch.no_grad()
    def predictions(self, model: nn.Module, items: Sequence[Encoded], batch_size: int = 64
                    ) -> tuple[np.ndarray, np.ndarray, float]:
        """(gold ids, predicted ids, mean loss) over the scored positions of ``items``."""
        was = model.training
        model.eval()
        device = next(model.parameters()).device
        order = sorted(range(len(items)), key=lambda i: len(items[i].labels) if not isinstance(items[i].labels, int)
                       else len(items[i].ids or items[i].words))
        gold, pred, loss_sum = [], [], 0.0
        for start in range(0, len(order), batch_size):
            batch = self.collate([items[i] for i in order[start : start + batch_size]])
            batch = {k: v.to(device) for k, v in batch.items()}
            logits = self.logits(model, batch).float()
            labels = batch["labels"]
            keep = labels != IGNORE_INDEX
            loss_sum += F.cross_entropy(logits[keep], labels[keep], reduction="sum").item() if keep.any() else 0.0
            gold.append(labels[keep].cpu().numpy())
            pred.append(logits.argmax(-1)[keep].cpu().numpy())
        model.train(was)
        g = np.concatenate(gold) if gold else np.zeros(0, np.int64)
        p = np.concatenate(pred) if pred else np.zeros(0, np.int64)
        return g, p, loss_sum / max(len(g), 1)

    def measure(self, model: nn.Module, split: str, per_class: bool = False) -> dict[str, Any]:
        items = {"train": self.train, "dev": self.dev, "test": self.test}[split]
        gold, pred, loss = self.predictions(model, items)
        out = scores(gold, pred, self.labels, per_class)
        out["loss"] = loss
        return out

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        if not self.dev:
            return {}
        m = self.measure(model, "dev")
        return {"dev_accuracy": m["accuracy"], "dev_macro_f1": m["macro_f1"], "dev_loss": m["loss"]}

    def sizes(self) -> str:
        """How much there is to learn from, for the command's first words."""
        return f"{len(self.train):,} training examples, {len(self.labels)} labels"

    @staticmethod
    def shown(metrics: dict[str, Any]) -> str:
        """The final figures in one line, for the command's last words."""
        return "; ".join(f"{split} accuracy {m['accuracy']:.4f}, macro-F1 {m['macro_f1']:.4f}"
                         for split, m in metrics.items())

    # -- files ----------------------------------------------------------------------------------------------

    def save_model(self, directory: Path) -> None:
        directory = Path(directory)
        self.backend.save(self.model, directory, self.labels)
        # While training, finetune.json names the base model (so the folder loads as a fine-tune); the measured
        # figures join it at the end (final_metrics).
        write_json(directory / FINETUNE_FILE, self.info())

    def load_weights(self, directory: Path) -> None:
        self.backend.load_weights(self.model, Path(directory))

    def info(self, metrics: dict[str, Any] | None = None, steps: int | None = None,
             train_seconds: float | None = None) -> dict[str, Any]:
        """The contents of finetune.json."""
        s = self.settings
        d: dict[str, Any] = {
            "base_model": s.model, "base_path": portable_base_path(s), "base_kind": self.backbone.kind,
            "base_type": self.backend.base_type,
            "task": s.task, "task_name": self.data.name, "task_kind": self.kind, "labels": self.labels,
            "mode": s.mode, "steps": steps, "metrics": metrics or {},
        }
        d.update(self.backend.learned(self.model))
        if train_seconds is not None and steps is not None:
            d["train_seconds"] = round(train_seconds, 2)
            d["examples_per_second"] = round(self.examples_seen(steps) / max(train_seconds, 1e-9), 2)
        d["settings"] = dataclasses.asdict(s) | {"model_path": portable_base_path(s)}
        return d

    def model_card(self, info: dict[str, Any]) -> str:
        return self.card(info, getattr(self, "final", None))

    def card(self, info: dict[str, Any], final: dict[str, Any] | None) -> str:
        s, d, b = self.settings, self.data, self.backend
        rows = []
        for split in ("dev", "test"):
            m = (final or {}).get(split)
            if m:
                rows.append(f"| {split} | {m['accuracy']:.4f} | {m['macro_f1']:.4f} | {m['n']:,} |")
        if not rows and info.get("metrics"):
            m = info["metrics"]
            rows.append(f"| dev (during training) | {m.get('dev_accuracy', float('nan')):.4f} | "
                        f"{m.get('dev_macro_f1', float('nan')):.4f} | |")
        per_class = ""
        test = (final or {}).get("test") or {}
        if test.get("per_class"):
            per_class = "\n### Test F1 per class\n\n| class | F1 | support |\n|---|---|---|\n" + "".join(
                f"| {c} | {v['f1']:.3f} | {v['support']} |\n" for c, v in test["per_class"].items())
        cut = (f"{self.cut_examples} example(s) were longer than {self.max_length} {b.unit} and were cut at a "
               f"word boundary ({self.cut_words} words not trained or scored)." if self.cut_words else
               f"No example was longer than {self.max_length} {b.unit}.")
        cfg = info.get("train_config", {})
        where = f" (`{portable_base_path(s)}`)" if portable_base_path(s) else ""
        mix = b.card_note(self.model)
        return f"""# {b.title} fine-tuned on {d.name} ({s.mode})

Fine-tuned with ctxmodels from `{s.model}`{where}: {b.trains(s.mode)}.
Task head: {b.head(self.kind)}. `ctxmodels.load(this folder)` gives the backbone (with `finetune_info`);
`ctxmodels.load(this folder).task_model().predict(words)` labels text.

## Task

`{s.task}`: {d.description}

Labels ({len(self.labels)}): {', '.join(self.labels[:40])}{' ...' if len(self.labels) > 40 else ''}.
Examples: {len(self.train):,} train (labelled), {len(self.dev):,} dev, {len(self.test):,} test. {cut}

Data: {d.source}

## Results

| split | accuracy | macro-F1 | scored |
|---|---|---|---|
{chr(10).join(rows) or '| (not evaluated yet) | | | |'}
{per_class}{mix}
## Settings

| | |
|---|---|
| command | `{info.get('command', '')}` |
| mode | {s.mode} |
| steps | {info.get('steps')} of {info.get('max_steps')}, batch {s.batch_size} |
| learning rate | {cfg.get('lr', s.lr)} (AdamW, weight decay {s.weight_decay} except biases/norms/scalars), \
warm-up {cfg.get('warmup_steps', s.warmup)} steps then linear decay |
| max length | {self.max_length} {b.unit} |
| seed | {s.seed} |
| wall time | {info.get('wall_time_s', 0):.0f} s |
| hardware | {info.get('hardware', '')} |
"""


def build_task(backbone: LoadedModel, data, settings: FinetuneSettings,
               task_class: type[FinetuneTask] = FinetuneTask) -> tuple[FinetuneTask, TrainConfig]:
    """The task (``task_class``: :class:`~ctxmodels.training.finetune_qa.QaTask` for question answering) and the
    trainer's settings of a fine-tuning run (defaults filled into ``settings``)."""
    task = task_class(backbone, data, settings)
    s = settings
    if s.steps is None:
        s.steps = max(1, s.epochs * task.num_batches(0))
    if s.lr is None:
        s.lr = task.backend.default_lr(s.mode)
    if s.warmup is None:
        s.warmup = min(max(3, round(0.02 * s.steps)), max(s.steps - 1, 0))
    if s.eval_every is None:
        s.eval_every = max(1, s.steps // 4)
    cfg = TrainConfig(max_steps=s.steps, lr=s.lr, warmup_steps=s.warmup, weight_decay=s.weight_decay,
                      save_every=s.save_every, eval_every=s.eval_every, log_every=s.log_every, seed=s.seed)
    return task, cfg


def final_metrics(task: FinetuneTask, trainer: Trainer) -> dict[str, Any]:
    """Dev and test figures of the trained model (F1 per class included), written into finetune.json and the
    model card of the run's folder; returns finetune.json's contents."""
    out = trainer.out
    metrics = {split: task.measure(task.model, split, per_class=True)
               for split in ("dev", "test") if getattr(task, split)}
    task.final = metrics
    info = task.info(metrics, trainer.step, trainer.train_seconds)
    info["hardware"] = hardware_description(trainer.info)
    info["threads"] = torch.get_num_threads()
    info["cpu_count"] = os.cpu_count()
    write_json(out / FINETUNE_FILE, info)
    trainer._write_card()  # the card now carries the dev/test figures
    return info

