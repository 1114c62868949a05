"""Next-sentence prediction (BERT) against sentence-order prediction (ALBERT), measured: each model's probability
that sentence B follows sentence A, on a pair a visitor types and on pairs drawn from text the model never trained
on, in three groups:

- **consecutive**: two sentences that follow each other in a book;
- **swapped**: the same two, in the other order;
- **random**: a sentence, then one from another book.

BERT's NSP was trained on consecutive pairs against random ones; ALBERT's SOP on consecutive pairs against swapped
ones. A model that learned the order of sentences tells the consecutive from the swapped; one that learned only
whether the two share a topic tells the consecutive from the random, and barely the swapped (the notes' point,
after the ALBERT and RoBERTa papers).

The held-out text is the documents the model's own training run held out (its ``train_args.json`` or ``run.json``
names the corpus, ``heldout_docs`` and the seed; :func:`ctxmodels.heldout.heldout_indices` finds them again).
"""

from __future__ import annotations

import json
import random
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..checkpoint import CheckpointError
from ..heldout import heldout_indices
from ..model_files import is_dir
from ..paths import data_dir
from ..text import read_documents, sentence_spans, tokenize

GROUPS = ("consecutive", "swapped", "random")
WORDS = (4, 40)  # a held-out sentence is drawn only with this many words: not a heading, not a page-long one
BATCH = 32

_SOP: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # loaded model -> AlbertForPreTraining


def _folder(model: Any) -> Path | None:
    path = getattr(model, "path", None)
    if path is None:
        return None
    return Path(path) if is_dir(Path(path)) else Path(path).parent


def pair_head(model: Any) -> str | None:
    """Which sentence-pair head ``model`` has: "nsp" (our BERT with its next-sentence head), "sop" (an ALBERT
    saved with its pre-training heads), or None."""
    if getattr(model, "kind", "") == "bert" and getattr(model.model, "has_nsp_head", False):
        return "nsp"
    folder = _folder(model)
    if getattr(model, "model_type", "") == "albert" and folder is not None:
        try:
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if "AlbertForPreTraining" in (config.get("architectures") or []):
            return "sop"
    return None


def _albert_head(model: Any) -> Any:
    if model not in _SOP:
        import transformers

        from ..formats.transformers_models import _quiet

        try:
            with _quiet():
                head, info = transformers.AlbertForPreTraining.from_pretrained(
                    _folder(model), local_files_only=True, output_loading_info=True)
        except Exception as e:  # noqa: BLE001 - safetensors, torch and transformers each raise their own errors
            raise CheckpointError(f"{model.name}: the sentence-order head does not load ({type(e).__name__})") from None
        if any("sop" in k for k in info.get("missing_keys", [])):
            raise CheckpointError(f"{model.name}: its weights hold no sentence-order head")
        _SOP[model] = head.float().to(model.device).eval()
    return _SOP[model]


def follows(model: Any, pairs: list[tuple[str, str]]) -> list[float]:
    """For each (A, B), the model's probability that B follows A (NSP: "B is the next sentence"; SOP: "A and B are
    in their order")."""
    head = pair_head(model)
    if head is None:
        raise ValueError(f"{model.name} has no next-sentence or sentence-order head")
    tok = model.tokenizer
    out: list[float] = []
    for start in range(0, len(pairs), BATCH):
        chunk = pairs[start:start + BATCH]
        encs = [tok.encode(a, pair=b) for a, b in chunk]
        batch = tok.collate(encs, device=model.device)
        with torch.inference_mode():
            if head == "nsp":
                logits = model.model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"]
                                     ).seq_relationship_logits
            else:
                logits = _albert_head(model)(**batch).sop_logits
        out += logits.float().softmax(-1)[:, 0].tolist()  # label 0: B follows A (NSP), in order (SOP)
    return out


# -- held-out pairs -------------------------------------------------------------------------------------------------


@dataclass
class HeldOut:
    """The documents a model's training run held out, as sentences, and where they come from (in words)."""

    documents: list[list[str]]
    source: str


def _run_settings(model: Any) -> dict:
    folder = _folder(model)
    for name in ("train_args.json", "run.json"):
        path = folder / name if folder is not None else None
        if path is not None and path.is_file():
            try:
                return dict(json.loads(path.read_text(encoding="utf-8")).get("settings") or {})
            except (OSError, ValueError, AttributeError):
                continue
    return {}


def _corpus(model: Any) -> tuple[Path | None, dict, str]:
    """(the corpus file the model's run trained on, the run's settings, why there is none: "" when there is)."""
    settings = _run_settings(model)
    corpus, held = settings.get("corpus"), settings.get("heldout_docs")
    if not corpus or not held:
        return None, settings, (f"{model.name} has no record of the text it did not train on (its training settings "
                                "name no corpus with held-out documents)")
    path = Path(str(corpus))
    if not path.is_file():  # trained on another machine: the same file in this machine's shared data
        path = data_dir() / "corpus" / path.name
    if not path.is_file():
        return None, settings, (f"the corpus {Path(str(corpus)).name} that {model.name} was trained on is not on "
                                "this machine (set CTXMODELS_DATA to the shared data folder)")
    return path, settings, ""


def heldout_problem(model: Any) -> str:
    """Why the model's held-out text cannot be read here ("" when it can), without reading it."""
    return _corpus(model)[2]


def heldout_text(model: Any) -> HeldOut:
    """The sentences of the documents the model's training run held out (ValueError saying why there are none:
    no record of its run, or its corpus is not on this machine)."""
    path, settings, problem = _corpus(model)
    if path is None:
        raise ValueError(problem)
    held = settings["heldout_docs"]
    docs = read_documents(path)
    chosen = heldout_indices(len(docs), held if isinstance(held, (int, list)) else int(held),
                             int(settings.get("seed", 0)))
    documents = []
    for i in chosen:
        sentences = [p[s:e].strip() for p in docs[i] for s, e in sentence_spans(p)]
        documents.append([s for s in sentences if WORDS[0] <= len(tokenize(s)) <= WORDS[1]])
    return HeldOut(documents, f"{len(chosen)} of the {len(docs)} documents of {path.name} that its training held "
                              "out")


def draw_pairs(documents: list[list[str]], n: int, seed: int = 0) -> dict[str, list[tuple[str, str]]]:
    """``n`` pairs per group (:data:`GROUPS`) from ``documents`` (each a list of sentences in order): consecutive
    sentences, the same pairs swapped, and each first sentence with one from another document (or, with a single
    document, from at least 50 sentences away)."""
    rng = random.Random(seed)
    starts = [(d, i) for d, doc in enumerate(documents) for i in range(len(doc) - 1)]
    if not starts:
        raise ValueError("the held-out text has no two consecutive sentences")
    picked = rng.sample(starts, min(n, len(starts)))
    out: dict[str, list[tuple[str, str]]] = {g: [] for g in GROUPS}
    for d, i in picked:
        a, b = documents[d][i], documents[d][i + 1]
        out["consecutive"].append((a, b))
        out["swapped"].append((b, a))
        e, j = _elsewhere(documents, d, i, rng)
        out["random"].append((a, documents[e][j]))
    return out


def _elsewhere(documents: list[list[str]], d: int, i: int, rng: random.Random) -> tuple[int, int]:
    """A sentence of another document than ``d`` (with one document: at least 50 sentences from ``i``, where there
    are such)."""
    others = [e for e in range(len(documents)) if e != d and documents[e]]
    if others:
        e = others[rng.randrange(len(others))]
        return e, rng.randrange(len(documents[e]))
    far = [j for j in range(len(documents[d])) if abs(j - i) > 50]
    return d, (far[rng.randrange(len(far))] if far else (i + len(documents[d]) // 2) % len(documents[d]))


def pair_test(model: Any, pairs: dict[str, list[tuple[str, str]]]) -> dict:
    """The model's probability that B follows A on each group of pairs: {group: {"mean", "sem", "n", "probs"}}
    (``sem``: the standard error of the mean)."""
    out = {}
    for group, group_pairs in pairs.items():
        probs = follows(model, group_pairs)
        arr = np.asarray(probs, dtype=float)
        sem = float(arr.std(ddof=1) / np.sqrt(len(arr))) if len(arr) > 1 else float("nan")
        out[group] = {"mean": float(arr.mean()) if len(arr) else float("nan"), "sem": sem, "n": len(arr),
                      "probs": probs}
    return out
