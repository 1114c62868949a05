"""What the Models page computes, without Streamlit: the models found on this server, what each one is, a model
loaded from a path, the corpus a training job reads, and a preview of the model in training."""

from __future__ import annotations

import time
from pathlib import Path

from app.kit import training
from app.kit.cache import memo
from app.kit.figures import highlight
from app.kit.places import source_of
from app.kit.presets import preset_sentences, preset_words
from app.kit.registry import get_model, label, offered_as, registry
from app.views.models.state import TrainRun
from ctxmodels.analysis import fill_in, next_word, projections, vectors
from ctxmodels.loading import ATTENTION, MASKED_LM, declares, found_models, supports
from ctxmodels.paths import assets_dir, cache_dir, hf_cache_dirs


@memo(max_entries=None, ttl=60)
def found_entries(places: tuple[str, ...]) -> list[dict]:
    """Everything found on this server without a path: shipped, packaged, Hugging Face cache, project cache.
    ``places`` (the folders searched) is only the cache key: a listing made for other folders is not reused."""
    return found_models()


def found_here() -> list[dict]:
    """The models found on this server, listed for the folders searched now."""
    return found_entries(tuple(str(d) for d in (assets_dir(), cache_dir(), *hf_cache_dirs())))


def addable(found: list[dict], known: list[str]) -> list[str]:
    """The loadable models found here that no page offers yet."""
    return [row["name"] for row in found if row["loadable"] and row["name"] not in known and row["path"] not in known]


def facts(model) -> str:
    """One line of what a model is: parameters, layers x heads, width, vocabulary, licence, which code reads it."""
    d = model.describe()
    parts = [f"{d['parameters'] / 1e6:,.1f} M parameters" if d["parameters"] >= 1e5 else f"{d['parameters']:,} "
             "parameters"]
    # an attention encoder's layer 0 is its input embeddings, not one of its layers
    n = len(d["layers"]) - 1 if declares(model, ATTENTION) else len(d["layers"])
    parts.append(f"{n} layers × {d['heads']} heads" if d["heads"] else f"{len(d['layers'])} layer(s)")
    parts.append(f"width {d['dim']}")
    if d.get("vocab_size"):
        parts.append(f"vocabulary {d['vocab_size']:,}")
    parts.append(f"licence {d['licence']}" if d.get("licence") else "licence not stated in the files")
    if d["kind"] == "transformers":
        parts.append(f"read by transformers ({d.get('model_type')})")
    if declares(model, MASKED_LM) and not supports(model, MASKED_LM):
        parts.append("no fill-in: " + (model.no_fill_reason or "no masked-LM head"))
    if next_word.reads_left_to_right(model):
        parts.append("reads left to right: fills in a blank from the words before it only")
    return " · ".join(parts)


def summary_row(model_id: str, found: list[dict]) -> dict:
    """The model's row in the table of available models (loading it)."""
    m = get_model(model_id)
    d = m.describe()
    kind = f"{d['model_type']} (transformers)" if d["kind"] == "transformers" else d["kind"]
    return {"model": label(model_id), "kind": kind, "layers": len(d["layers"]), "dim": d["dim"],
            "parameters": f"{d['parameters']:,}",
            "fill in": fill_in.fills_blanks(m) or next_word.reads_left_to_right(m),  # a GPT: from the words before
            "attention": d["has_attention"], "language model": d["has_lm"], "from": source_of(d["path"], found)}


def load_path(source: str) -> tuple[str | None, object | None]:
    """Load the model at ``source`` (a path or a name in the caches) and offer it on every page: (the selectable
    model it already is, None) or (None, the model loaded)."""
    import ctxmodels
    from ctxmodels.loading import resolve

    path, _ = resolve(source)
    same = offered_as(path)
    if same is not None:
        return same, None
    model = ctxmodels.load(str(path), download=False)
    registry().add(str(path))
    return None, model


# -- training -----------------------------------------------------------------------------------------------------


def run_folder(runs: Path, run: TrainRun) -> Path:
    return runs / f"{run.kind}-{time.strftime('%Y%m%d-%H%M%S')}"


def corpus_for(out: Path, run: TrainRun, upload, upload_mb: float) -> Path:
    """Write the chosen corpus into the run folder and return its path (ValueError with what is wrong).
    ``upload``: the uploaded file (its ``name``, ``size`` and ``getvalue()``), or None."""
    from ctxmodels.text import read_documents

    path = out / "corpus.txt"
    if run.corpus == "upload":
        if upload is None:
            raise ValueError("choose a text file to upload first")
        if upload.size > upload_mb * 2**20:
            raise ValueError(f"{upload.name} is {upload.size / 2**20:.1f} MB; the limit is {upload_mb:g} MB")
        try:
            text = upload.getvalue().decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{upload.name} is not UTF-8 text ({e}); save it as UTF-8 plain text") from e
        text = training.check_corpus(text, upload.name)
    else:
        docs = ["\n".join(vectors.parse_labelled(s)[0] for s in preset_sentences(w))
                for w in preset_words()]
        text = "\n\n".join(docs) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    read_documents(path)  # the trainers' own check: empty documents, unreadable text
    return path


@memo(max_entries=32)
def preview(out: str, stamp: float, word: str) -> dict:
    """PCA of the top layer of the model in training, for one preset word (recomputed when the files change)."""
    import ctxmodels

    model = ctxmodels.load(out, download=False)
    ov = vectors.word_vectors(model, preset_sentences(word), word, inflections=True)
    proj = projections.project(ov.layer(-1), method="pca", seed=0)
    return {"coords": proj.coords, "labels": ov.labels,
            "hover": [highlight(o.sentence, o.char_span) for o in ov.occurrences],
            "layer": model.layer_names[-1]}


def model_stamp(out: Path) -> float:
    """When the model in ``out`` last changed (its files, not the log and the metrics)."""
    files = [p for p in out.glob("*") if p.is_file() and p.name not in ("metrics.jsonl", "train.log")]
    return max((p.stat().st_mtime for p in files), default=0.0)
