"""The measured quality of trained models: the figures their model cards report.

``ctxmodels quality --model bert-eltec --model elmo-eltec --model static-eltec --out report.json`` measures

- **word senses on SemCor**: for each lemma of :data:`SENSE_LEMMAS`, its occurrences whose sense has at least
  ``min_per_sense`` tagged examples (at most ``max_per_sense`` of each, drawn with a fixed seed), and for every
  layer of every model the leave-one-out 1-nearest-neighbour (cosine) sense accuracy and macro-F1 over the
  occurrences the model has a vector for (``without_vector`` counts the others; the shipped models have one for
  every occurrence), next to the most-frequent-sense baseline (every occurrence given the lemma's commonest
  sense);
- **held-out language modelling** with the ``--corpus`` the models were trained on: BERT's masked-token
  top-1/top-5 accuracy, MLM perplexity and NSP accuracy; ELMo's forward and backward full-softmax perplexity;
  those of a model ``ctxmodels train roberta|albert|electra|gpt`` wrote (:mod:`.successors`);
- **the cloze check** (``assets/examples/cloze.tsv``): the share of sentences whose answer is among the top 5
  predictions for the masked word, and the same for **the classroom sentences** (``assets/examples/classroom.tsv``),
  with the rank of each answer;
- **static neighbours** of ten common words.

A static vector gives every occurrence of a word form the same vector, so its nearest neighbour is a tie between
all other occurrences of that form; ties go to the earlier occurrence in SemCor's order (the rule of
:func:`ctxmodels.analysis.senses.knn_sense_accuracy`), which makes the static rows a fair "context ignored"
baseline rather than a chance draw.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import kinds, text
from ..analysis.fill_in import fills_blanks
from ..analysis.metrics import macro_f1
from ..analysis.senses import knn_sense_accuracy
from ..paths import examples_dir

if TYPE_CHECKING:
    from ..loading import LoadedModel
    from ..semcor import SemCor

# bank and run as the issue asks, the other presets of the app, then common nouns and verbs of SemCor whose
# senses each have ten or more tagged examples.
SENSE_LEMMAS = ("bank", "run", "light", "play", "bear", "match", "line", "point", "interest", "plant", "field",
                "paper", "fire", "face", "serve", "table")
MFS = "most frequent sense"
BERT_SEQUENCES = 2048  # held-out BERT sequences measured by default (``ctxmodels quality --bert-sequences``)


# ----------------------------------------------------------------------------------------------------------
# word senses


def sense_items(semcor: SemCor, lemmas: Sequence[str] = SENSE_LEMMAS, min_per_sense: int = 10,
                max_per_sense: int = 60, seed: int = 0):
    """The SemCor occurrences to classify, as :class:`ctxmodels.analysis.probes.ProbeData` (groups = lemmas)."""
    from ..analysis.probes import ProbeSettings, wsd_data

    # n_sentences is the probes' embedding budget; here every chosen occurrence is kept.
    settings = ProbeSettings(lemmas=tuple(lemmas), min_per_sense=min_per_sense, max_per_sense=max_per_sense,
                             n_sentences=len(semcor.sentences), seed=seed)
    return wsd_data(semcor, settings)


def sense_records(models: Sequence[LoadedModel], data, pooling: str = "mean") -> list[dict[str, Any]]:
    """One record per (model, layer, lemma): n, senses, LOO 1-NN accuracy and macro-F1; plus MFS records."""
    from ..analysis.probes import embed_items

    labels = np.asarray(data.labels)
    groups = np.asarray(data.groups)
    records = []
    for g, lemma in enumerate(data.group_names):
        y = labels[groups == g]
        majority = Counter(y.tolist()).most_common(1)[0][0]
        records.append(_record(MFS, "-", lemma, y, np.full_like(y, majority)))
    for model in models:
        feats = embed_items(model, data, pooling=pooling)  # [n_items, n_layers, dim]
        for layer, name in enumerate(model.layer_names):
            for g, lemma in enumerate(data.group_names):
                rows = groups == g
                records.append(_knn_record(model.name, name, layer, lemma, feats[rows, layer], labels[rows]))
    return records


def _knn_record(model: str, layer: str, layer_index: int, lemma: str, X: np.ndarray, y: np.ndarray) -> dict:
    """LOO 1-NN over the occurrences with a vector. One without (a word the static model never saw, a word cut
    off by BERT's length limit) is left out of the figures, never guessed for the model: accuracy and macro-F1
    are over the covered occurrences (None when fewer than two are), ``n`` counts them all and
    ``without_vector`` the ones left out."""
    finite = np.isfinite(X).all(axis=1)
    gold, pred = y[finite], None
    if finite.sum() >= 2:
        pred = np.asarray(knn_sense_accuracy(X[finite], gold.tolist(), k=1).predictions, dtype=y.dtype)
    return {"model": model, "layer": layer, "layer_index": layer_index, "lemma": lemma, "n": int(len(y)),
            "senses": int(len(set(y.tolist()))),
            "accuracy": float(np.mean(gold == pred)) if pred is not None else None,
            "macro_f1": macro_f1(gold.tolist(), pred.tolist()) if pred is not None else None,
            "without_vector": int((~finite).sum())}


def _record(model: str, layer: str, lemma: str, gold: np.ndarray, pred: np.ndarray) -> dict[str, Any]:
    return {"model": model, "layer": layer, "layer_index": 0, "lemma": lemma, "n": int(len(gold)),
            "senses": int(len(set(gold.tolist()))), "accuracy": float(np.mean(gold == pred)),
            "macro_f1": macro_f1(gold.tolist(), pred.tolist())}


def sense_summary(records: list[dict[str, Any]], static_layers: dict[str, int]) -> dict[str, dict[str, Any]]:
    """Per model: mean accuracy and macro-F1 over the lemmas for each layer, the best contextual layer, and its
    macro-F1 gain over the model's static layer (``static_layers[model]``, usually 0) in points."""
    by_model: dict[str, dict[str, list[dict]]] = {}
    for r in records:
        by_model.setdefault(r["model"], {}).setdefault(r["layer"], []).append(r)
    out = {}
    for model, layers in by_model.items():
        table = {layer: {"layer_index": rs[0]["layer_index"], "accuracy": _mean([r["accuracy"] for r in rs]),
                         "macro_f1": _mean([r["macro_f1"] for r in rs])} for layer, rs in layers.items()}
        summary: dict[str, Any] = {"layers": table}
        static = static_layers.get(model)
        if static is not None:
            contextual = {k: v for k, v in table.items() if v["layer_index"] != static and v["macro_f1"] is not None}
            base = next((k for k, v in table.items() if v["layer_index"] == static), None)
            if contextual and base is not None and table[base]["macro_f1"] is not None:
                best = max(contextual, key=lambda k: contextual[k]["macro_f1"])
                summary.update(static_layer=base, best_layer=best,
                               gain_macro_f1_points=100 * (table[best]["macro_f1"] - table[base]["macro_f1"]))
        out[model] = summary
    return out


def _mean(values: list[float | None]) -> float | None:
    """The mean over the lemmas that have a figure (a lemma none of whose occurrences has a vector has none)."""
    known = [v for v in values if v is not None]
    return float(np.mean(known)) if known else None


# ----------------------------------------------------------------------------------------------------------
# cloze


#: the first sentences a class tries (issue 13): money in a bank, a river's banks, a capital
CLASSROOM_FILE = "classroom.tsv"


def read_cloze(path: str | Path | None = None) -> list[tuple[str, list[str]]]:
    """:func:`ctxmodels.text.read_cloze` of ``path``, by default the shipped ``assets/examples/cloze.tsv``."""
    return text.read_cloze(examples_dir() / "cloze.tsv" if path is None else path)


RANK_DEPTH = 1000  # the deepest rank of an answer a cloze row records (None: further down)


def cloze_check(model: LoadedModel, items: Sequence[tuple[str, list[str]]], top_k: int = 5) -> dict[str, Any]:
    """Share of cloze sentences whose answer is among the model's ``top_k`` predictions (and top 1); each row also
    has the ``rank`` (1 = first) of its best-placed answer among the first :data:`RANK_DEPTH` predictions."""
    from ..analysis.fill_in import fill_mask

    rows = []
    for sentence, answers in items:
        # lower-cased: ELMo's vocabulary is cased (Paris), the answers are not
        ranked = [p["token"].lower() for p in fill_mask(model, None, sentence, top_k=RANK_DEPTH)[0]]
        top = ranked[:top_k]
        rank = min((ranked.index(a) + 1 for a in answers if a in ranked), default=None)
        rows.append({"sentence": sentence, "answers": answers, "top": top, "rank": rank,
                     "in_top_k": any(a in top for a in answers), "top1": top[0] in answers})
    n = len(rows)
    return {"n": n, "top_k": top_k, "share_in_top_k": sum(r["in_top_k"] for r in rows) / max(n, 1),
            "share_top1": sum(r["top1"] for r in rows) / max(n, 1), "rows": rows}


# ----------------------------------------------------------------------------------------------------------
# each kind's own figures, named by its registry entry (Release.measure)


def bert_heldout(m: LoadedModel, corpus: str | Path | None = None, bert_sequences: int = BERT_SEQUENCES, log=print,
                 **_: Any) -> dict[str, Any]:
    """A BERT's masked LM on the corpus's held-out documents; nothing without a corpus or a masked-LM head."""
    if corpus is None or not kinds.supports(m, kinds.MASKED_LM):
        return {}
    from ..training import bert_task

    log(f"{m.name}: held-out masked LM on {bert_sequences} sequences")
    return {"heldout": bert_task.heldout_metrics(m.model, m.tokenizer, corpus, n_sequences=bert_sequences),
            "heldout_sequences": bert_sequences}


def elmo_heldout(m: LoadedModel, corpus: str | Path | None = None, elmo_tokens: int = 100_000, log=print,
                 **_: Any) -> dict[str, Any]:
    """An ELMo's perplexity on the corpus's held-out documents; nothing without a corpus or language models."""
    if corpus is None or not kinds.supports(m, kinds.LANGUAGE_MODEL):
        return {}
    from ..training import elmo_task

    log(f"{m.name}: held-out perplexity on {elmo_tokens} tokens")
    return {"heldout": elmo_task.heldout_metrics(m.model, m.model.vocab, corpus, eval_tokens=elmo_tokens)}


def static_neighbours(m: LoadedModel, **_: Any) -> dict[str, Any]:
    """Static vectors' nearest neighbours of a few probe words."""
    from ..static import probe_words

    return {"neighbours": {w: m.model.most_similar(w, 8) for w in probe_words(m.model)}}


# ----------------------------------------------------------------------------------------------------------
# one report for several models


def measure(models: Sequence[LoadedModel], semcor: SemCor | None = None, corpus: str | Path | None = None,
            bert_sequences: int = BERT_SEQUENCES, elmo_tokens: int = 100_000, lemmas: Sequence[str] = SENSE_LEMMAS,
            probes: bool = True, log=print) -> dict[str, Any]:
    """Everything above for ``models``; parts whose data is not given (SemCor, corpus) are left out."""
    report: dict[str, Any] = {"models": {}}
    if corpus is not None:
        report["corpus"] = corpus_info(corpus)
    for m in models:
        entry: dict[str, Any] = {"kind": m.kind, "layers": list(m.layer_names)}
        if m.path is not None:
            entry["weights_sha256"] = weights_sha256(m.path)
            entry["weights_dtype"] = weights_dtype(m.path)
        release = kind.release if (kind := kinds.kind_of(m)) is not None else None
        if release is not None and release.measure:  # the kind's own figures (held-out corpus, neighbours)
            entry.update(kinds.named(release.measure)(m, corpus=corpus, bert_sequences=bert_sequences,
                                                      elmo_tokens=elmo_tokens, log=log))
        if fills_blanks(m):  # a masked LM, or an ELMo reading the blank from both sides
            log(f"{m.name}: cloze check")
            entry["cloze"] = cloze_check(m, read_cloze())
            entry["classroom"] = cloze_check(m, read_cloze(examples_dir() / CLASSROOM_FILE))
        report["models"][m.name] = entry
    if semcor is not None and probes:
        report["probes"] = {}
        for m in models:
            if len(m.layer_names) > 1:
                report["probes"][m.name] = {task: probe_summary(m, task, semcor, log) for task in ("pos", "wsd")}
    if semcor is not None:
        log(f"word senses: {len(lemmas)} SemCor lemmas")
        data = sense_items(semcor, lemmas)
        records = sense_records(models, data)
        report["senses"] = {"lemmas": list(data.group_names), "records": records,
                            "summary": sense_summary(records, {m.name: m.static_layer for m in models})}
    return report


def probe_summary(model: LoadedModel, task: str, semcor: SemCor, log=print) -> dict[str, Any]:
    """The scalar-mix probe of ``task`` with default settings (cached beside the model, where the app finds it)."""
    from ..analysis.probes import run_probe

    log(f"{model.name}: {task} probe")
    r = run_probe(model, task, semcor=semcor)
    return {"layers": list(r.layer_names), "layer_accuracy": list(r.layer_accuracies),
            "mix_accuracy": r.mix_accuracy, "mix_weights": list(r.mix_weights), "gamma": r.gamma,
            "baseline_accuracy": r.baseline_accuracy, "n_train": r.n_train, "n_test": r.n_test}


def corpus_info(corpus: str | Path, heldout_docs: int | None = None, seed: int = 0) -> dict[str, Any]:
    """The corpus file, its hash, and the held-out documents (the trainers' default split) with their titles and
    authors when a ``<name>-metadata.tsv`` (columns file, blob, title, author, …; one row per document, in
    order) lies beside it."""
    from ..checkpoint import file_sha256
    from ..training.corpus import heldout_documents

    corpus = Path(corpus)
    docs, held = heldout_documents(corpus, heldout_docs, seed)
    n_docs = len(docs)
    rows: list[dict[str, str]] = []
    meta = corpus.with_name(f"{corpus.stem}-metadata.tsv")
    if meta.exists():
        lines = text.read_text_file(meta, "metadata file", pipes=False).splitlines()
        header = lines[0].split("\t")
        rows = [dict(zip(header, line.split("\t"))) for line in lines[1:] if line.strip()]
    heldout = []
    for i in held:
        entry: dict[str, Any] = {"index": i}
        if len(rows) == n_docs:
            entry.update(title=rows[i].get("title", "").replace(" : ELTeC edition", ""),
                         author=rows[i].get("author", ""), file=rows[i].get("file", ""))
        heldout.append(entry)
    return {"file": corpus.name, "sha256": file_sha256(corpus), "documents": n_docs, "heldout": heldout}


def weights_file(directory: str | Path) -> Path | None:
    """The folder's weights file: model.safetensors, else the first *.safetensors or *.hdf5 (or the file given)."""
    d = Path(directory)
    if d.is_file():
        return d
    for pattern in ("model.safetensors", "*.safetensors", "*.hdf5"):
        found = sorted(d.glob(pattern))
        if found:
            return found[0]
    return None


def weights_sha256(directory: str | Path) -> str | None:
    from ..checkpoint import file_sha256

    path = weights_file(directory)
    return file_sha256(path) if path else None


def weights_dtype(directory: str | Path) -> str | None:
    """How the weights are stored ("fp16", "fp32", "bf16"), from a safetensors file's header (None for others)."""
    from safetensors import safe_open

    path = weights_file(directory)
    if path is None or path.suffix != ".safetensors":
        return None
    names = {"F16": "fp16", "F32": "fp32", "BF16": "bf16", "F64": "fp64"}
    with safe_open(str(path), framework="pt") as f:
        for key in f.keys():
            dtype = f.get_slice(key).get_dtype()
            if dtype in names:
                return names[dtype]
    return None


def format_summary(report: dict[str, Any]) -> str:
    lines = []
    for name, entry in report["models"].items():
        held = entry.get("heldout", {})
        figures = ", ".join(f"{k} {v:.4g}" for k, v in held.items() if isinstance(v, float))
        cloze = entry.get("cloze")
        if cloze:
            figures += f"{', ' if figures else ''}cloze top-{cloze['top_k']} {cloze['share_in_top_k']:.0%}"
        classroom = entry.get("classroom")
        if classroom:
            ranks = ", ".join(f"{r['answers'][0]} {r['rank'] or '-'}" for r in classroom["rows"])
            figures += f"; classroom sentences, rank of the answer: {ranks}"
        lines.append(f"{name}: {figures or '-'}")
    for model, s in report.get("senses", {}).get("summary", {}).items():
        if "best_layer" in s:
            lines.append(f"{model}: senses best layer {s['best_layer']!r} macro-F1 "
                         f"{s['layers'][s['best_layer']]['macro_f1']:.3f}, static {s['static_layer']!r} "
                         f"{s['layers'][s['static_layer']]['macro_f1']:.3f} (+{s['gain_macro_f1_points']:.1f} points)")
        else:
            for layer, v in s["layers"].items():
                if v["macro_f1"] is None:
                    lines.append(f"{model} {layer}: senses: no occurrence has a vector")
                else:
                    lines.append(f"{model} {layer}: senses macro-F1 {v['macro_f1']:.3f}, accuracy "
                                 f"{v['accuracy']:.3f}")
    return "\n".join(lines)
