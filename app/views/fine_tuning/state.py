"""What the What fine-tuning changes page shows, as one frozen value read from its widgets and the URL: the
fine-tuned model, the model it is compared with, and the task's sentences it is compared on."""

from __future__ import annotations

from dataclasses import dataclass

AUTO = "(its base, from finetune.json)"
SPLITS = ["dev", "test"]
SENTENCES = dict(min_value=20, max_value=500)
DETAIL_WORDS = 30  # the head detail runs on one sentence of at most this many words
TASKS = ["pos", "ner", "wsd:bank", "period"]  # the built-in tasks, when they cannot be listed
MODES = {"finetune": "fine-tune every weight", "feature": "feature-based (frozen model)"}
KINDS = {"token": "a label for each word", "word": "a label for one word of each sentence",
         "sentence": "one label for each sentence", "pair": "one label for each pair of sentences",
         "qa": "the answer to a question, found in a paragraph"}  # a task's kind, in words
COMPARED_KINDS = ("token", "word", "sentence")  # the kinds whose sentences the comparison runs on


@dataclass(frozen=True)
class TuningState:
    model: str  # the fine-tuned model
    base: str  # the model it is compared with: AUTO (its base, from finetune.json) or a model's name
    split: str
    n_sentences: int

    def key(self, task: str) -> tuple:
        """The comparison's key in the shared store: names and settings, never objects."""
        return ("finetuning", self.model, self.base, task, self.split, self.n_sentences)
