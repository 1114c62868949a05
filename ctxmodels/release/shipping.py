"""Turn training runs into the shipped default models: ``assets/bert-eltec``, ``elmo-eltec``, ``static-eltec``.

``ctxmodels ship RUN_DIR ASSET_DIR`` copies what a user needs from a finished run (weights, config, tokenizer or
vocabulary, the training card and log, ELECTRA's ``generator/``, the run's settings without this machine's paths
as ``train_args.json``: what ``ctxmodels quality`` and the held-out sentence pairs draw the run's held-out text
with) and stores the weights as fp16, which halves the download (``--fp32``
keeps float32, for a model whose measured figures fp16 would move); every loader widens fp16 back to float32
(:func:`ctxmodels.checkpoint.load_tensors`). Optimizer state, data caches and the static model's context vectors
stay behind.

``ctxmodels ship --cards REPORT.json ASSET_DIR...`` then adds the measured figures of ``ctxmodels quality`` to
each model card, between two markers, so it can be re-run after another measurement without duplicating text.
The section names the weights' sha256; ``tests/test_shipped_models.py`` checks it and the figures against the
files.
"""

from __future__ import annotations

import glob
import json
import math
import shutil
from pathlib import Path
from typing import Any

import torch

from .. import kinds
from ..checkpoint import (
    TMP_SUFFIX,
    CheckpointError,
    DiskFullError,
    file_sha256,
    is_disk_full,
    new_tmp_dir,
    read_json,
    recover_dir,
    replace_dir_atomic,
    save_tensors,
    write_text_atomic,
)
from ..masking import MASK_SPLIT_TEXT
from ..training.run_lock import LOCK_NAME, hold_folder
from .quality import BERT_SEQUENCES, RANK_DEPTH

WEIGHTS = "model.safetensors"
LEFT_BEHIND = {"checkpoint", "data", "data_cache", "probes", "static-data.npz",  # training state and data caches
               # the settings --resume reads and the --init-from record, with this machine's paths (the card has both)
               "run.json", "start.json", LOCK_NAME}
DROPPED_TENSORS = {"output_embeddings.weight"}  # word2vec's context vectors: not used by anything we ship
SUBMODELS = ("generator",)  # a model's folders of further models, shipped the same way: ELECTRA's generator
SETTINGS_COPY = "train_args.json"  # the run's settings (run.json's), paths cut to file names
BEGIN, END = "<!-- measured: begin -->", "<!-- measured: end -->"


def ship(run_dir: str | Path, asset_dir: str | Path, half: bool = True) -> Path:
    """Copy a run's model files into ``asset_dir`` (replaced), weights as fp16 when ``half``.

    The new folder is built aside (a hidden temporary beside ``asset_dir``, on the same file system), checked (every
    weight finite, the folder loads with :func:`ctxmodels.load`) and only then swapped in for an earlier shipped
    model (:func:`~ctxmodels.checkpoint.replace_dir_atomic`). Damaged weights, a full disk or a kill at any point
    leave ``asset_dir`` as it was, or complete with the new model once the swap is done."""
    run_dir, asset_dir = Path(run_dir), Path(asset_dir)
    if not (run_dir / WEIGHTS).is_file():
        raise CheckpointError(f"{run_dir}: no {WEIGHTS}; is the training run finished?")
    with hold_folder(asset_dir, beside=True):  # one ship into a folder at a time
        return _ship(run_dir, asset_dir, half)


def _ship(run_dir: Path, asset_dir: Path, half: bool) -> Path:
    if asset_dir.exists():  # first: the current folder or one above it is refused before anything is renamed
        _check_replaceable(asset_dir, run_dir)
    recover_dir(asset_dir)  # a swap that a kill interrupted: the earlier model goes back in place
    parts = {part: _shipped_weights(run_dir / part, half, asset_dir)
             for part in [".", *(s for s in SUBMODELS if (run_dir / s / WEIGHTS).is_file())]}
    needed = sum(t.numel() * t.element_size() for tensors, _, _ in parts.values() for t in tensors.values()) + sum(
        f.stat().st_size for part in parts for f in _copied_files(run_dir / part))
    _remove_stale_builds(asset_dir)
    tmp: Path | None = None
    try:
        tmp = new_tmp_dir(asset_dir)
        for part, (tensors, metadata, dropped) in parts.items():
            (tmp / part).mkdir(exist_ok=True)
            _write_model(run_dir / part, tmp / part, tensors, metadata, dropped)
        _write_settings(run_dir, tmp)
        for part in parts:
            _check_loads(tmp / part, asset_dir)
        replace_dir_atomic(tmp, asset_dir)
    except OSError as e:
        if not is_disk_full(e):
            raise
        swapped = tmp is not None and not tmp.exists()  # what failed came after the swap (flushing the folder)
        kept = f"{asset_dir} holds the new model" if swapped else _unchanged(asset_dir)
        raise DiskFullError(needed, asset_dir.parent, note=f"{kept}; free some space and ship again") from e
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)  # gone already once swapped in
    return asset_dir


def _unchanged(asset_dir: Path) -> str:
    return f"{asset_dir} is unchanged" if asset_dir.exists() else "nothing was shipped"


def _copied_files(run_dir: Path) -> list[Path]:
    """The run's files a shipped model carries besides its weights."""
    return [item for item in sorted(run_dir.iterdir())
            if item.name not in LEFT_BEHIND and item.name != WEIGHTS and item.is_file()]


def _shipped_weights(run_dir: Path, half: bool,
                     asset_dir: Path) -> tuple[dict[str, torch.Tensor], dict[str, str], set[str]]:
    """(the tensors to ship, the file's metadata, the names left out); CheckpointError for an unreadable file or a
    weight that is NaN or infinite (in fp16: beyond its range)."""
    from safetensors import safe_open

    path = run_dir / WEIGHTS
    try:
        with safe_open(str(path), framework="pt") as f:
            metadata = f.metadata() or {}
            tensors = {k: f.get_tensor(k) for k in f.keys() if k not in DROPPED_TENSORS}
            dropped = set(f.keys()) & DROPPED_TENSORS
    except Exception as e:  # safetensors reports a damaged file in several exception types
        raise CheckpointError(f"{path}: not a readable weights file ({type(e).__name__}: "
                              f"{str(e).splitlines()[0] if str(e) else ''}); {_unchanged(asset_dir)}") from e
    for name, t in tensors.items():
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise CheckpointError(f"{path}: the weight {name} holds NaN or infinite values; {_unchanged(asset_dir)}")
    if half:
        tensors = {k: v.half() if v.dtype == torch.float32 else v for k, v in tensors.items()}
        for name, t in tensors.items():
            if t.is_floating_point() and not bool(torch.isfinite(t).all()):
                raise CheckpointError(f"{path}: the weight {name} is beyond fp16's range; ship it with --fp32 "
                                      f"({_unchanged(asset_dir)})")
    return tensors, metadata, dropped


def _write_model(run_dir: Path, folder: Path, tensors: dict[str, torch.Tensor], metadata: dict[str, str],
                 dropped: set[str]) -> None:
    for item in _copied_files(run_dir):
        shutil.copy2(item, folder / item.name)
    save_tensors(folder / WEIGHTS, tensors, metadata=metadata)
    card = folder / "README.md"
    if card.is_file() and dropped:  # the static trainer's card says whether the context vectors are there
        text = card.read_text(encoding="utf-8")
        write_text_atomic(card, text.replace("Output (context) vectors included.",
                                             "Output (context) vectors not included (left out when shipped)."))


def _write_settings(run_dir: Path, folder: Path) -> None:
    """The run's settings (``run.json``, left behind for its paths) as :data:`SETTINGS_COPY`, each path cut to its
    file name: the held-out documents, sequence length and seeds stay known to whoever measures the model again."""
    record = run_dir / "run.json"
    if (folder / SETTINGS_COPY).exists() or not record.is_file():
        return
    try:
        stored = read_json(record)
        settings = {k: Path(v).name if isinstance(v, str) and Path(v).is_absolute() else v
                    for k, v in stored["settings"].items()}
    except (CheckpointError, KeyError, AttributeError, TypeError):
        return  # a damaged record: the model ships without it, as before there was one
    write_text_atomic(folder / SETTINGS_COPY, json.dumps({"kind": stored.get("kind"), "settings": settings},
                                                         indent=2) + "\n")


def _check_loads(folder: Path, asset_dir: Path) -> None:
    """CheckpointError unless the model built in ``folder`` loads as every user will load it."""
    from ..loading import load
    from ..loading.cache import forget

    try:
        load(folder, reload=True)
    except CheckpointError as e:
        raise CheckpointError(f"the shipped model would not load ({e}); {_unchanged(asset_dir)}") from e
    finally:
        forget(folder)


def _remove_stale_builds(asset_dir: Path) -> None:
    """Remove the half-built folders that killed ships into ``asset_dir`` left beside it."""
    for stale in asset_dir.parent.glob(f".{glob.escape(asset_dir.name)}.*{TMP_SUFFIX}") \
            if asset_dir.parent.is_dir() else ():
        if stale.is_dir() and not stale.is_symlink():
            shutil.rmtree(stale, ignore_errors=True)


def _check_replaceable(asset_dir: Path, run_dir: Path) -> None:
    """ValueError unless ``asset_dir`` is an earlier shipped model (or empty) that may be removed and rewritten:
    never a file, a folder with subfolders, the current folder or one above it, or the run itself."""
    where = asset_dir.resolve()
    if not asset_dir.is_dir():
        raise ValueError(f"{asset_dir}: not a folder; give a folder for the shipped model")
    if where in (Path.cwd().resolve(), *Path.cwd().resolve().parents) or where == run_dir.resolve() \
            or where in run_dir.resolve().parents:
        raise ValueError(f"{asset_dir}: is the current folder, the run, or a folder above them; shipping would "
                         "replace it. Give the model's own folder, e.g. assets/NAME")
    entries = list(asset_dir.iterdir())
    # its folders: a further model (SUBMODELS) and the probes' cache of the model being replaced
    if entries and (any(not e.is_file() and e.name not in (*SUBMODELS, "probes") for e in entries)
                    or not (asset_dir / "config.json").is_file()):
        raise ValueError(f"{asset_dir}: holds files that are not a shipped model's; shipping replaces the whole "
                         "folder, so give a new folder or an earlier shipped model's")


# ----------------------------------------------------------------------------------------------------------
# the measured section of a model card


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"  # None: no occurrence had a vector


def training_evaluation(asset_dir: str | Path) -> dict[str, Any] | None:
    """The training run's own last held-out evaluation, as its card's *Held-out metrics* table shows it: the
    ``eval`` of the last evaluation record in ``metrics.jsonl`` and the run's settings (``train_args.json``), or
    None when the folder has neither."""
    asset_dir = Path(asset_dir)
    metrics, args = asset_dir / "metrics.jsonl", asset_dir / "train_args.json"
    if not metrics.is_file() or not args.is_file():
        return None
    last = None
    for line in metrics.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("eval"), dict):
            last = record
    if last is None:
        return None
    return {"step": last.get("step"), "metrics": last["eval"], "settings": read_json(args).get("settings", {})}


def _two_top1(entry: dict[str, Any], training: dict[str, Any] | None, corpus: dict[str, Any] | None) -> list[str]:
    """Why the masked-token top-1 here differs from the training card's (the run's last evaluation): which
    sequences each was measured on. Nothing when the run's evaluation is not known."""
    held = entry["heldout"]
    train = (training or {}).get("metrics", {})
    if "mlm_accuracy" not in train:
        return []
    s = training.get("settings", {})
    n, n_train = entry.get("heldout_sequences", BERT_SEQUENCES), s.get("eval_sequences")
    step = training.get("step")
    # ctxmodels quality draws its sequences as a training run with these settings draws its evaluation set
    # (BertPretrainingTask.evaluate and bert_task.heldout_metrics: PretrainingData.fixed_batches), so the run's
    # n_train sequences are then the first n_train of the n measured here.
    same_draw = (isinstance(n_train, int) and 0 < n_train <= n and s.get("seed") == 0 and s.get("max_seq_len") == 128
                 and not s.get("whole_word_masking") and s.get("max_predictions") == math.ceil(0.15 * 128)
                 and s.get("mask_split", MASK_SPLIT_TEXT) == MASK_SPLIT_TEXT
                 and corpus is not None and s.get("heldout_docs") == len(corpus.get("heldout", ())))
    weights = "the same weights" if entry.get("weights_dtype") == "fp32" else "the same weights in fp32"
    lines = [f"**Two top-1 figures.** The training card above (*Held-out metrics*, `mlm_accuracy` "
             f"{train['mlm_accuracy']:.4f}) gives {_pct(train['mlm_accuracy'])}, this table "
             f"{_pct(held['mlm_accuracy'])}. The first is the training run's last evaluation"
             + (f" (step {step:,})" if isinstance(step, int) else "")]
    if same_draw:
        lines[0] += (f", on {n_train:,} held-out sequences; the second is measured on {n:,}, whose first {n_train:,} "
                     f"are those same sequences with the same masks. Same documents, {weights}, the same scoring "
                     "(every masked word piece): the two differ by the sample alone, and the figure on "
                     f"{n:,} sequences" + (f" ({n // n_train} times the sample)" if n // n_train > 1 else "")
                     + " is the one to quote.")
    else:
        lines[0] += ((f", on {n_train:,} held-out sequences" if isinstance(n_train, int) else "")
                     + f" drawn with that run's own settings; the second is measured on {n:,} others. Both score "
                     "every masked word piece of the held-out documents: they differ by the sample.")
    lines[0] += " Perplexity and next-sentence accuracy differ for the same reason."
    return lines + [""]


# The measured targets a shipped model was trained to: by name (issue 13's better defaults), else its kind's (the
# first shipped models: the registry's Release.targets). A card says of each whether it is met.
TARGETS: dict[str, dict[str, float]] = {
    "minilm-eltec": {"top1": 0.45, "cloze": 0.70, "classroom": 1.0, "senses_gain": 25},
    "elmo-eltec": {"ppl": 60, "senses_best": 0.65, "senses_gain": 10},
}


# The held-out part of a measured card section, one function per kind (named by the kind's Release.card):
# (report entry, its held-out figures, the fp32 run's or None, the weights' dtype, the targets, the training run's
# own evaluation, the corpus) -> lines.


def bert_heldout_part(entry: dict[str, Any], held: dict[str, Any], fp32: dict[str, Any] | None, dtype: str,
                      target: dict[str, float], training: dict[str, Any] | None,
                      corpus: dict[str, Any] | None) -> list[str]:
    parts = ["### Held-out novels: masked language model", "",
              "Fixed held-out sequences of up to 128 pieces, masked as in training (15% of the pieces; 80% "
              "[MASK], 10% random, 10% kept).", "",
              *_columns(dtype, fp32)]
    for key, label in (("mlm_accuracy", "masked-token top-1"), ("mlm_top5_accuracy", "masked-token top-5"),
                       ("mlm_perplexity", "MLM perplexity"), ("nsp_accuracy", "next-sentence accuracy")):
        fmt = (lambda v: f"{v:.1f}") if key == "mlm_perplexity" else _pct
        parts.append(f"| {label} | {fmt(held[key])} |" + (f" {fmt(fp32[key])} |" if fp32 else ""))
    parts += [""] + _two_top1(entry, training, corpus)
    wanted = [(f"top-1 at least {_pct(target[k])}" if k == "top1" else f"top-5 at least {_pct(target[k])}",
               held["mlm_accuracy" if k == "top1" else "mlm_top5_accuracy"] >= target[k])
              for k in ("top1", "top5") if k in target]
    if wanted:
        parts += [f"The target for this model, {' and '.join(w for w, _ in wanted)}, is "
                  f"{_verdict(all(ok for _, ok in wanted))}.", ""]
    return parts


def elmo_heldout_part(entry: dict[str, Any], held: dict[str, Any], fp32: dict[str, Any] | None, dtype: str,
                      target: dict[str, float], training: dict[str, Any] | None,
                      corpus: dict[str, Any] | None) -> list[str]:
    parts = ["### Held-out novels: language model perplexity (full softmax)", "",
              f"{held['eval_tokens']:,} held-out positions in windows of 20 words; "
              f"{_pct(held['oov_rate'])} of the held-out words are outside the output vocabulary "
              "(scored as `<UNK>`).", "",
              *_columns(dtype, fp32)]
    for key, label in (("fwd_ppl", "forward"), ("bwd_ppl", "backward")):
        parts.append(f"| {label} | {held[key]:.1f} |" + (f" {fp32[key]:.1f} |" if fp32 else ""))
    if "ppl" in target:
        parts += ["", f"The target for this model, at most {target['ppl']:g} in each direction, is "
                  f"{_verdict(max(held['fwd_ppl'], held['bwd_ppl']) <= target['ppl'])}."]
    parts.append("")
    return parts


def _verdict(met: bool) -> str:
    return "met" if met else "**not met**"


def measured_section(name: str, report: dict[str, Any], command: str,
                     training: dict[str, Any] | None = None) -> str:
    """Markdown with the figures ``report`` (from ``ctxmodels quality``) holds for model ``name``; ``training``
    (:func:`training_evaluation`) is the training run's own evaluation, which a BERT card's figures are set
    against."""
    entry = report["models"][name]
    kind = kinds.kind_of(entry["kind"])
    release = kind.release if kind is not None else None
    target = TARGETS.get(name, release.targets if release is not None else {})
    dtype = entry.get("weights_dtype") or "fp16"  # reports written before the field existed measured fp16
    parts = [BEGIN, "## Measured quality", "",
             f"Measured on the shipped {dtype} weights (sha256 `{entry['weights_sha256']}`) with", "",
             f"    {command}", ""]
    corpus = report.get("corpus")
    if corpus:
        parts += [f"Held-out novels of `{corpus['file']}` (sha256 `{corpus['sha256'][:16]}…`, {corpus['documents']} "
                  "documents), never trained on by any of the shipped models measured here:", ""]
        parts += [f"- document {d['index']}: " + (f"*{d['title']}*, {d['author']}" if d.get("title") else "(untitled)")
                  for d in corpus["heldout"]]
        parts.append("")
    held = entry.get("heldout")
    fp32 = report.get("fp32", {}).get(name, {}).get("heldout")
    if held and release is not None and release.card:  # the kind's own held-out figures
        parts += kinds.named(release.card)(entry, held, fp32, dtype, target, training, corpus)
    cloze = entry.get("cloze")
    fp32_cloze = report.get("fp32", {}).get(name, {}).get("cloze")
    if cloze:
        hits = sum(r["in_top_k"] for r in cloze["rows"])
        parts += ["### Cloze check", "",
                  f"{cloze['n']} sentences written for this project (`assets/examples/cloze.tsv`), each with one "
                  f"masked content word that context makes clear: the answer is in the top {cloze['top_k']} for "
                  f"**{hits} of {cloze['n']} ({_pct(cloze['share_in_top_k'])})**, first for "
                  f"{_pct(cloze['share_top1'])}" + (f" (fp32 training run: {_pct(fp32_cloze['share_in_top_k'])} in the "
                                                     f"top {cloze['top_k']})" if fp32_cloze else "") + "."
                  + (f" The target for this model, at least {_pct(target['cloze'])} in the top {cloze['top_k']}, is "
                     f"{_verdict(cloze['share_in_top_k'] >= target['cloze'])}." if "cloze" in target else ""), ""]
    parts += _classroom_part(entry.get("classroom"), target)
    neighbours = entry.get("neighbours")
    if neighbours:
        parts += ["### Nearest neighbours (cosine)", "", "| word | neighbours |", "|---|---|"]
        for word, near in neighbours.items():
            parts.append(f"| {word} | {', '.join(f'{w} ({s:.2f})' for w, s in near)} |")
        parts.append("")
    senses = report.get("senses")
    if senses:
        parts += _senses_part(name, senses, target)
    probes = report.get("probes", {}).get(name)
    if probes:
        parts += _probes_part(probes)
    parts.append(END)
    return "\n".join(parts) + "\n"


def _classroom_part(classroom: dict[str, Any] | None, target: dict[str, float]) -> list[str]:
    """The first sentences a class tries, with the model's top 5 and where the expected word ranks."""
    if not classroom:
        return []
    k = classroom["top_k"]
    parts = ["### The classroom sentences", "",
             f"The first things a class types (`assets/examples/classroom.tsv`): the model's top {k}, and where the "
             f"expected word ranks among its first {RANK_DEPTH:,} guesses.", "",
             f"| sentence | expected | top {k} | rank |", "|---|---|---|---:|"]
    for r in classroom["rows"]:
        rank = r.get("rank")
        parts.append(f"| {r['sentence']} | {' / '.join(r['answers'])} | {', '.join(r['top'])} | "
                     f"{rank if rank is not None else f'below {RANK_DEPTH:,}'} |")
    if "classroom" in target:
        parts += ["", f"The target for this model, every expected word in the top {k}, is "
                  f"{_verdict(classroom['share_in_top_k'] >= target['classroom'])}."]
    return parts + [""]


def _columns(dtype: str, fp32: dict[str, Any] | None) -> list[str]:
    """A figures table's header: the shipped weights, and the training run's fp32 weights where measured."""
    if fp32:
        return [f"| | {dtype} (shipped) | fp32 (training run) |", "|---|---:|---:|"]
    return [f"| | {dtype} (shipped) |", "|---|---:|"]


def _senses_part(name: str, senses: dict[str, Any], target: dict[str, float]) -> list[str]:
    summary = senses["summary"]
    mine = summary.get(name)
    if mine is None:
        return []
    lemmas = senses["lemmas"]
    n = sum(r["n"] for r in senses["records"] if r["model"] == name and r["layer_index"] == 0)
    lines = ["### Word senses on SemCor", "",
             f"Leave-one-out 1-nearest-neighbour (cosine) sense classification of {n:,} tagged occurrences of "
             f"{len(lemmas)} polysemous lemmas ({', '.join(lemmas)}; senses with at least 10 examples, at most 60 "
             "each), averaged over the lemmas. The static rows give every occurrence of a word form one vector.", "",
             "| model | layer | accuracy | macro-F1 |", "|---|---|---:|---:|"]
    order = [name] + [m for m in summary if m != name]
    for model in order:
        for layer, v in summary[model]["layers"].items():
            mark = " **(best)**" if model == name and layer == mine.get("best_layer") else ""
            lines.append(f"| {model} | {layer}{mark} | {_pct(v['accuracy'])} | {_pct(v['macro_f1'])} |")
    if "best_layer" in mine:
        gain = mine["gain_macro_f1_points"]
        best = mine["layers"][mine["best_layer"]]["macro_f1"]
        wanted = ([f"at least {target['senses_gain']:+g}: {_verdict(gain >= target['senses_gain'])}"]
                  if "senses_gain" in target else [])
        if "senses_best" in target:
            wanted.append(f"a best layer of at least {_pct(target['senses_best'])} macro-F1: "
                          f"{_verdict(best >= target['senses_best'])}")
        lines += ["", f"Best contextual layer ({mine['best_layer']}, {_pct(best)}) minus the static layer "
                      f"({mine['static_layer']}): **{gain:+.1f} macro-F1 points** on average over the lemmas"
                      + (f" (the target for this model: {'; '.join(wanted)})" if wanted else "") + "."]
    lines.append("")
    return lines


def _probes_part(probes: dict[str, Any]) -> list[str]:
    lines = ["### Probes: learned scalar-mix weights and per-layer accuracy (SemCor)", "",
             "A linear probe on each layer alone, and one on the scalar mix v = γ Σ s_j h_j with learned s_j and γ "
             "(`ctxmodels probe`).", "",
             "| task | | " + " | ".join(probes[next(iter(probes))]["layers"]) + " | mix |",
             "|---|---|" + "---:|" * (len(probes[next(iter(probes))]["layers"]) + 1)]
    for task, p in probes.items():
        lines.append(f"| {task} | accuracy | " + " | ".join(_pct(a) for a in p["layer_accuracy"]) +
                     f" | {_pct(p['mix_accuracy'])} |")
        lines.append(f"| {task} | weight s_j (γ = {p['gamma']:.2f}) | " +
                     " | ".join(f"{w:.2f}" for w in p["mix_weights"]) + " | |")
    lines.append("")
    return lines


def write_card(asset_dir: str | Path, report: dict[str, Any], command: str) -> str:
    """Put the measured section into ``asset_dir/README.md`` (replacing an earlier one); returns the card."""
    asset_dir = Path(asset_dir)
    card_path = asset_dir / "README.md"
    card = card_path.read_text(encoding="utf-8") if card_path.is_file() else f"# {asset_dir.name}\n"
    if BEGIN in card and END in card:
        card = card[: card.index(BEGIN)] + card[card.index(END) + len(END) + 1:]
    section = measured_section(asset_dir.name, report, command, training_evaluation(asset_dir))
    expected = report["models"][asset_dir.name]["weights_sha256"]
    if file_sha256(asset_dir / WEIGHTS) != expected:
        raise CheckpointError(f"{asset_dir}: the report measured other weights (sha256 {expected[:12]}…); "
                              "run ctxmodels quality on these files again")
    card = card.rstrip("\n") + "\n\n" + section
    write_text_atomic(card_path, card)
    return card
