"""What *How they learn* computes, without Streamlit: which models can show each part, BERT's corruption draw and
the model's guesses, each model's attention mask and word-by-word guesses, a word's two vectors layer by layer (as
the Overview's *Try it*), a run's training curves, and the objectives compared per unit of compute (the shipped
copy of the bench's results). Which models can show a part is read from their files where they say it (a
config.json's architectures), so a part loads only the models it shows. Cached per server by the model's name and
the inputs (``app/kit/cache.py``); every result is a plain dict, as the figures take it."""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd

from app.kit.cache import memo
from app.kit.inputs import check_text
from app.kit.registry import get_model, label, peeked_kind
from app.views.how_they_learn.state import MAX_WORDS
from ctxmodels.analysis import compute_comparison, objectives, replaced_tokens, sentence_pairs, training_curves
from ctxmodels.analysis.word_senses import find_in_both, same_word
from ctxmodels.loading import LANGUAGE_MODEL, LEFT_TO_RIGHT, MASKED_LM, declares, resolve, successor_models, supports
from ctxmodels.text import tokenize


def checked(text: str, what: str = "sentence") -> str:
    """The sentence, checked (ValueError saying what is wrong): not empty, no control characters, at most
    ``MAX_WORDS`` words (every word is guessed once per model)."""
    text = check_text(text, what)
    n = len(tokenize(text))
    if n > MAX_WORDS:
        raise ValueError(f"the {what} has {n:,} words; this page reads at most {MAX_WORDS} (a sentence or two)")
    return text


def with_successors(ids: list[str]) -> list[str]:
    """The page's models: the app's, then the shipped successors (RoBERTa, ALBERT, ELECTRA, GPT trained here, kept
    in ``assets/successors/``), which the other pages list only when the operator adds them."""
    return ids + [name for name in successor_models() if name not in ids]


@memo(max_entries=256, ttl=60)
def file_heads(model_id: str) -> frozenset[str] | None:
    """The pre-training heads the model's config.json names (nothing loaded); None when only its weights tell."""
    try:
        path, _ = resolve(model_id, download=False)
    except Exception:  # noqa: BLE001 - not found now: its weights are asked, and that error is reported there
        return None
    return objectives.heads_on_file(path)


def has_head(model_id: str, head: str, loaded_check) -> bool:
    """Whether the model has ``head``: from its files when they say, else by loading it (``loaded_check``)."""
    heads = file_heads(model_id)
    return head in heads if heads is not None else loaded_says(model_id, loaded_check)


def loaded_says(model_id: str, check) -> bool:
    """``check`` of the loaded model (False for a model that does not load: that is reported where it is used)."""
    try:
        return bool(check(get_model(model_id)))
    except Exception:  # noqa: BLE001 - a model that does not load is reported where it is used
        return False


def masked_lms(ids: list[str]) -> list[str]:
    """The models with a masked-LM head (BERT and its kin): the kind from the files first, then the head."""
    out = []
    for m in ids:
        kind = peeked_kind(m)
        if kind is None or not declares(kind, MASKED_LM) or declares(kind, LEFT_TO_RIGHT):
            continue
        if has_head(m, "masked_lm", lambda model: supports(model, MASKED_LM)):
            out.append(m)
    return out


def left_to_right(ids: list[str]) -> list[str]:
    """The left-to-right language models (GPTs with their next-word head: one fine-tuned for a task guesses no
    words), by the kind and head their files say."""
    return [m for m in ids if (kind := peeked_kind(m)) is not None and declares(kind, LEFT_TO_RIGHT)
            and has_head(m, "next_word", lambda model: supports(model, LANGUAGE_MODEL))]


def electras(ids: list[str]) -> list[str]:
    """The ELECTRA discriminators with their generator beside them (read through transformers)."""
    return [m for m in ids if peeked_kind(m) == "transformers"
            and has_head(m, "replaced", replaced_tokens.is_discriminator)]


def pair_models(ids: list[str]) -> list[str]:
    """The models with a next-sentence (BERT) or sentence-order (ALBERT) head. A BERT saved as a masked LM alone may
    still hold NSP's weights (Google's checkpoints do): that one is loaded to see."""
    out = []
    for m in ids:
        if peeked_kind(m) not in ("bert", "transformers"):
            continue
        heads = file_heads(m)
        if heads is not None and heads & {"next_sentence", "sentence_order"}:
            out.append(m)
        elif ((heads is None or (peeked_kind(m) == "bert" and "masked_lm" in heads))
              and loaded_says(m, lambda model: sentence_pairs.pair_head(model) is not None)):
            out.append(m)
    return out


def head_of(model_id: str) -> str | None:
    return sentence_pairs.pair_head(get_model(model_id))


@memo(max_entries=256)
def typed_pairs(model_id: str, a: str, b: str, other: str) -> dict:
    """The model's probability that B follows A for the typed pair, swapped, and with the other sentence as B."""
    probs = sentence_pairs.follows(get_model(model_id), [(a, b), (b, a), (a, other)])
    return {g: {"mean": p, "sem": float("nan"), "n": 1, "probs": [p]} for g, p in zip(sentence_pairs.GROUPS, probs)}


def heldout_problem(model_id: str) -> str:
    return sentence_pairs.heldout_problem(get_model(model_id))


@memo(max_entries=8, spinner="Reading the text the model did not train on …")
def heldout_sentences(model_id: str) -> dict:
    held = sentence_pairs.heldout_text(get_model(model_id))
    return {"documents": held.documents, "source": held.source}


@memo(max_entries=64, spinner="Measuring on held-out pairs …")
def heldout_pairs(model_id: str, n: int, seed: int) -> dict:
    held = heldout_sentences(model_id)
    pairs = sentence_pairs.draw_pairs(held["documents"], n, seed)
    return {"source": held["source"], "groups": sentence_pairs.pair_test(get_model(model_id), pairs)}


def pairs_frame(results: dict[str, dict]) -> pd.DataFrame:
    return pd.DataFrame([dict(model=name, pairs=group, p_follows_mean=r["mean"], standard_error=r["sem"], n=r["n"])
                         for name, groups in results.items() for group, r in groups.items()])


def with_curves(ids: list[str]) -> list[str]:
    """The models whose folder holds the metrics their training wrote."""
    out = []
    for m in ids:
        try:
            path, _ = resolve(m, download=False)
        except Exception:  # noqa: BLE001 - not found now: not offered
            continue
        if training_curves.metrics_file(path) is not None:
            out.append(m)
    return out


@memo(max_entries=256)
def corruption(model_id: str, text: str, seed: int, whole_words: bool) -> dict:
    return objectives.corruption(get_model(model_id), text, seed, whole_words).to_dict()


@memo(max_entries=256)
def reading_mask(model_id: str, text: str) -> dict:
    return objectives.reading_mask(get_model(model_id), text)


def any_gpt_mask(pieces: list[str]) -> dict:
    """The mask every left-to-right model has, over ``pieces``: for the page when no GPT is here to draw its own."""
    return {"pieces": pieces, "allowed": objectives.causal_mask(len(pieces)), "left_to_right": True}


@memo(max_entries=256)
def guesses(model_id: str, text: str) -> dict:
    return objectives.word_guesses(get_model(model_id), text).to_dict()


@memo(max_entries=256)
def replacements(model_id: str, text: str, seed: int, whole_words: bool) -> dict:
    discriminator = get_model(model_id)
    generator = get_model(str(replaced_tokens.generator_folder(discriminator)))
    return replaced_tokens.replacements(discriminator, generator, text, seed, whole_words).to_dict()


def replacements_frame(r: dict, name: str) -> pd.DataFrame:
    return pd.DataFrame(dict(piece=range(len(r["pieces"])), original=r["pieces"], discriminator_read=r["reads"],
                             replaced=r["replaced"], p_replaced=r["p_replaced"])).assign(model=name, seed=r["seed"])


def checked_pair(a: str, b: str, word: str) -> tuple[str, str, str]:
    """The two sentences and the word, checked (ValueError when the word is not in both)."""
    a, b = checked(a, "sentence A"), checked(b, "sentence B")
    word = (word or "").strip()
    if not word or len(word.split()) > 1:
        raise ValueError("type one word that both sentences hold")
    find_in_both(a, b, word)
    return a, b, word


@memo(max_entries=256)
def same_word_in(model_id: str, a: str, b: str, word: str) -> dict:
    return asdict(same_word(get_model(model_id), a, b, word))


@memo(max_entries=32, ttl=60)
def curves(model_id: str) -> dict:
    path = training_curves.metrics_file(get_model(model_id))
    if path is None:
        raise ValueError(f"{label(model_id)} has no record of its training beside it")
    return training_curves.loss_curves(training_curves.read_records(path))


MEASURE_AXES = compute_comparison.MEASURES  # each measure's words on the figure's axis
not_measured = compute_comparison.not_measured


def comparison() -> dict | None:
    """The objectives compared per unit of compute, as shipped (``assets/successors/compute.json``); None when the
    file is not there, ValueError (CheckpointError) naming what is wrong with a damaged one. Read again when the
    file changes (the bench's report rewrites it)."""
    path = compute_comparison.shipped_file()
    return _comparison(str(path), path.stat().st_mtime_ns if path.is_file() else None)


@memo(max_entries=4)
def _comparison(path: str, changed: int | None) -> dict | None:
    found = compute_comparison.load_comparison(path)
    return None if found is None else found.to_dict()


def comparison_at_end(c: dict, measure: str) -> list[tuple[str, float, float | None]]:
    """Each objective's ``measure`` at its last snapshot that has one (the whole budget), best first, with its value
    at compute 0 (the run's random weights) where that was measured."""
    last, start = {}, {}
    for r in sorted(c["rows"], key=lambda r: r["tflop"]):
        if r[measure] is not None:
            last[r["kind"]] = r[measure]
            if r["tflop"] == 0:
                start[r["kind"]] = r[measure]
    return sorted(((k, v, start.get(k)) for k, v in last.items()), key=lambda t: -t[1])


# -- the tables behind the figures (their CSV downloads) ------------------------------------------------------------


def comparison_frame(c: dict) -> pd.DataFrame:
    return pd.DataFrame([dict(objective=r["kind"], step=r["step"], of_steps=r["steps"], tflop=r["tflop"],
                              pieces_seen=r["tokens_seen"], guessing=r["guess_task"], held_out_guesses=r["guesses"],
                              part_of_speech=r["pos"], word_senses_best_layer=r["senses"],
                              senses_layer=r["senses_layer"]) for r in c["rows"]])


def corruption_frame(c: dict, name: str) -> pd.DataFrame:
    rows = []
    for j, p in enumerate(c["positions"]):
        rows.append(dict(piece=p, original=c["pieces"][p], outcome=c["fates"][p], model_read=c["reads"][p],
                         first_guess=c["guesses"][j][0]["token"] if c["guesses"][j] else "",
                         p_original=c["prob"][j], loss_nats=c["loss"][j], p_original_nothing_hidden=c["plain_prob"][j],
                         first_guess_nothing_hidden=c["plain_guess"][j]))
    return pd.DataFrame(rows).assign(model=name, seed=c["seed"], whole_words=c["whole_words"])


def guesses_frame(results: dict[str, dict]) -> pd.DataFrame:
    return pd.DataFrame([dict(model=name, word=w, position=i, probability=p, first_guess=g,
                              reads="left to right" if r["left_to_right"] else "both ways")
                         for name, r in results.items()
                         for i, (w, p, g) in enumerate(zip(r["words"], r["prob"], r["guess"]))])


def curves_frame(c: dict, name: str) -> pd.DataFrame:
    return pd.DataFrame([dict(model=name, part=part["label"], step=s, loss=v)
                         for group in ("train", "eval") for part in c[group].values()
                         for s, v in zip(part["steps"], part["values"])])
