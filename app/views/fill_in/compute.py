"""What Fill in the blank computes, without Streamlit: each model's guesses at the blanks (or for a hidden word),
what an answer rests on (hiding each word, or integrated gradients), the guesses read from every layer, and how a
second sentence moves them; a left-to-right model's (a GPT's) guesses from the words before a blank, and the word
after the sentence. Cached per server by the model's name and the text (``app/kit/cache.py``); every result
is a plain dict, as the figures take it."""

from __future__ import annotations

from collections import Counter

import pandas as pd

from app.kit.cache import memo
from app.kit.figures import percent
from app.kit.inputs import check_masks, check_text, md
from app.kit.registry import get_model, peeked_kind
from app.views.fill_in.figures import times
from app.views.fill_in.state import LENS_GUESSES
from ctxmodels.analysis import fill_in, next_word, objectives
from ctxmodels.analysis.blanks import check_comparable, rank_agreement
from ctxmodels.loading import FILL_IN, LEFT_TO_RIGHT, MASKED_LM, declares, supports

Hidden = tuple[str, int]  # a word of the sentence and which of its occurrences


def offered(ids: list[str]) -> tuple[list[str], list[str]]:
    """From the models' files (nothing loaded): those whose kind fills in blanks, and the left-to-right ones (a
    GPT guesses a blank from the words before it)."""
    kinds = {m: peeked_kind(m) for m in ids}
    return ([m for m in ids if kinds[m] is not None and declares(kinds[m], FILL_IN)],
            [m for m in ids if kinds[m] is not None and declares(kinds[m], LEFT_TO_RIGHT)])


def left_to_right(model_id: str) -> bool:
    """Whether the model guesses from the words before a position only (a GPT)."""
    return next_word.reads_left_to_right(get_model(model_id))


def fillers(ids: list[str]) -> tuple[list[str], dict[str, str]]:
    """The models that fill in blanks, and why each of the others cannot."""
    can = [m for m in ids if fill_in.fills_blanks(get_model(m))]
    return can, {m: fill_in.why_no_fill(get_model(m)) for m in ids if m not in can}


def checked(text: str) -> str:
    """The sentence with its blanks normalised, checked (ValueError saying what is wrong)."""
    return check_masks(check_text(fill_in.normalize_masks(text), "sentence"))


def checked_pair(text_a: str, text_b: str) -> str:
    """Sentence B, checked, and checked against A: one blank each, a word or two apart."""
    text_b = check_masks(check_text(text_b, "sentence B"))
    check_comparable(text_a, text_b)
    return text_b


@memo(max_entries=512)
def guesses(model_id: str, text: str, k: int, whole_words: bool) -> list:
    m = get_model(model_id)
    return fill_in.fill_mask(m, m.tokenizer, text, top_k=k, whole_words=whole_words)


@memo(max_entries=512)
def score(model_id: str, text: str, word: str, occurrence: int, k: int, whole_words: bool) -> dict:
    m = get_model(model_id)
    return fill_in.mask_word(m, m.tokenizer, text, word, occurrence=occurrence, top_k=k,
                             whole_words=whole_words).to_dict()


@memo(max_entries=256)
def rests_on(model_id: str, text: str, blank: int, guess: str | None, whole_words: bool) -> dict:
    m = get_model(model_id)
    return fill_in.guess_effects(m, m.tokenizer, text, blank=blank, guess=guess, whole_words=whole_words).to_dict()


@memo(max_entries=256)
def hidden_rests_on(model_id: str, text: str, word: str, occurrence: int, whole_words: bool) -> dict:
    m = get_model(model_id)
    return fill_in.word_effects(m, m.tokenizer, text, word, occurrence=occurrence,
                                whole_words=whole_words).to_dict()


@memo(max_entries=256)
def gradients(model_id: str, text: str, blank: int, guess: str | None, whole_words: bool) -> dict:
    m = get_model(model_id)
    return fill_in.guess_attributions(m, m.tokenizer, text, blank=blank, guess=guess,
                                      whole_words=whole_words).to_dict()


@memo(max_entries=256)
def hidden_gradients(model_id: str, text: str, word: str, occurrence: int) -> dict:
    m = get_model(model_id)
    return fill_in.word_attributions(m, m.tokenizer, text, word, occurrence=occurrence).to_dict()


@memo(max_entries=256)
def by_layer(model_id: str, text: str, blank: int, whole_words: bool) -> dict:
    m = get_model(model_id)
    return fill_in.guesses_by_layer(m, getattr(m, "tokenizer", None), text, blank=blank, top_k=LENS_GUESSES,
                                    whole_words=whole_words).to_dict()


@memo(max_entries=256)
def hidden_by_layer(model_id: str, text: str, word: str, occurrence: int, whole_words: bool) -> dict:
    m = get_model(model_id)
    return fill_in.hidden_by_layer(m, getattr(m, "tokenizer", None), text, word, occurrence=occurrence,
                                   top_k=LENS_GUESSES, whole_words=whole_words).to_dict()


@memo(max_entries=256)
def changed(model_id: str, text_a: str, text_b: str, k: int, whole_words: bool) -> dict:
    return fill_in.compare_blanks(get_model(model_id), text_a, text_b, top_k=k, whole_words=whole_words).to_dict()


def predicts_each_word(model_id: str) -> bool:
    """Whether :func:`each_word` reads the model: a left-to-right model, or one with a masked-LM head."""
    m = get_model(model_id)
    return next_word.reads_left_to_right(m) or supports(m, MASKED_LM)


@memo(max_entries=512)
def before_blank(model_id: str, text: str, k: int, whole_words: bool) -> list:
    """A left-to-right model's guesses for the first blank, from the words before it (one list)."""
    return next_word.blank_guesses(get_model(model_id), text, top_k=k, whole_words=whole_words)


@memo(max_entries=512)
def before_word(model_id: str, text: str, word: str, occurrence: int, k: int, whole_words: bool) -> dict:
    """A left-to-right model's probability, rank and guesses of a word of the sentence, from the words before it."""
    return next_word.word_score(get_model(model_id), text, word, occurrence=occurrence, top_k=k,
                                whole_words=whole_words).to_dict()


@memo(max_entries=512)
def after_sentence(model_id: str, text: str, k: int, whole_words: bool) -> list:
    """A left-to-right model's guesses for the word after the sentence."""
    return next_word.next_guesses(get_model(model_id), text, top_k=k, whole_words=whole_words)


@memo(max_entries=256)
def each_word(model_id: str, text: str) -> dict:
    """Every word of the sentence as the model predicts it: a GPT from the words before it, a masked LM with the
    word hidden (:func:`ctxmodels.analysis.objectives.word_guesses`)."""
    return objectives.word_guesses(get_model(model_id), text).to_dict()


def answers(model_id: str, text: str, hidden: Hidden | None, k: int, whole_words: bool):
    """The guesses at every blank (a list per blank; a left-to-right model: the first blank only, from the words
    before it), or the hidden word's probability, rank and guesses (a dict)."""
    if left_to_right(model_id):
        if hidden is None:
            return [before_blank(model_id, text, k, whole_words)[0]]
        return before_word(model_id, text, *hidden, k, whole_words)
    return guesses(model_id, text, k, whole_words) if hidden is None else score(model_id, text, *hidden, k, whole_words)


@memo(max_entries=256)
def before_blank_by_layer(model_id: str, text: str, whole_words: bool) -> dict:
    return next_word.blank_by_layer(get_model(model_id), text, top_k=LENS_GUESSES, whole_words=whole_words).to_dict()


@memo(max_entries=256)
def before_word_by_layer(model_id: str, text: str, word: str, occurrence: int, whole_words: bool) -> dict:
    return next_word.word_by_layer(get_model(model_id), text, word, occurrence=occurrence, top_k=LENS_GUESSES,
                                   whole_words=whole_words).to_dict()


def layers_read(model_id: str, text: str, hidden: Hidden | None, blank: int, whole_words: bool) -> dict:
    """The guesses the head reads from every layer at the blank (or at the hidden word; a left-to-right model: at
    the word before it)."""
    if left_to_right(model_id):
        if hidden is None:
            return before_blank_by_layer(model_id, text, whole_words)
        return before_word_by_layer(model_id, text, *hidden, whole_words)
    if hidden is not None:
        return hidden_by_layer(model_id, text, *hidden, whole_words)
    return by_layer(model_id, text, blank, whole_words)


def explanation(model_id: str, text: str, hidden: Hidden | None, blank: int, guess: str | None, whole_words: bool,
                method: str) -> dict:
    """What one answer rests on by one method: the hidden word (``hidden``), or the guess at blank ``blank``."""
    if hidden is not None:
        if method == "gradients":
            return hidden_gradients(model_id, text, *hidden)
        return hidden_rests_on(model_id, text, *hidden, whole_words)
    return (gradients if method == "gradients" else rests_on)(model_id, text, blank, guess, whole_words)


def hideable(text: str, model_id: str) -> dict[str, tuple[str, int, int]]:
    """The words of ``text`` one can hide (with a letter or digit; not a blank already there), by their name in the
    list and the link: the word as written, then " (2)", " (3)" for its later occurrences. Values: (word, its
    occurrence as the model finds it, its position in the sentence)."""
    model = get_model(model_id)
    norm = str.lower if getattr(model.tokenizer, "lowercase", False) else str
    seen: Counter[str] = Counter()
    out = {}
    words = next_word.words_of(model, text) if next_word.reads_left_to_right(model) else \
        fill_in.sentence_words(model, text)
    for i, word in enumerate(words):
        n = seen[norm(word)]
        seen[norm(word)] += 1
        if word == fill_in.MASK or not any(c.isalnum() for c in word):
            continue
        out[word if n == 0 else f"{word} ({n + 1})"] = (word, n, i)
    return out


# -- the tables behind the charts, and what the page says about them --------------------------------------------


def effects_frame(results: dict, name: str) -> pd.DataFrame:
    """What one answer rests on (``results``: "hiding" and/or "gradients"), as a table (its CSV download)."""
    hiding, grads = results.get("hiding"), results.get("gradients")
    data = pd.DataFrame({"word": (hiding or grads)["words"]}).assign(answer=(hiding or grads)["answer"], model=name)
    if hiding is not None:
        data = data.assign(p_hidden=hiding["hidden_probs"], first_guess_then=hiding["top_when_hidden"],
                           p_all_words=hiding["prob"])
    if grads is not None:
        data = data.assign(nats=grads["scores"], p_every_word_hidden=grads["baseline_prob"])
    return data


def agreement_note(hiding: dict | None, grads: dict | None) -> str | None:
    """How alike the two methods rank the words (Spearman's ρ), in Markdown; None unless both ran."""
    rho = rank_agreement(hiding, grads) if hiding is not None and grads is not None else None
    if rho is None:
        return None
    alike = "alike" if rho >= 0.7 else "partly alike" if rho >= 0.3 else "differently"
    return (f"The two methods rank these words {alike} (Spearman ρ = {rho:.2f}, 1: the same order). Where "
            "they differ, words act together, and each method shares out their joint effect its own way.")


def gradients_note(grads: dict) -> str:
    """What the scored words account for together, in Markdown."""
    answer = grads["answer"]
    rise = grads["prob"] / grads["baseline_prob"] if grads["baseline_prob"] > 0 else float("inf")
    return (f"Together the scored words account for a factor of {times(rise)}: "
            f"P({md(answer)}) is {percent(grads['baseline_prob'])} with every scored word hidden "
            f"and {percent(grads['prob'])} as written ({grads['steps']} steps of the "
            f"integral; the scores add up to within {abs(grads['gap']):.2g} nats).")


def layers_frame(result: dict, name: str, blank: int) -> pd.DataFrame:
    """The guesses read from every layer, as a table (its CSV download)."""
    return pd.DataFrame([dict(layer=layer, rank=j + 1, guess=g["token"], prob=g["prob"])
                         for layer, row in zip(result["layer_names"], result["top"])
                         for j, g in enumerate(row)]).assign(model=name, blank=blank)


def layers_answer(result: dict, hidden: Hidden | None) -> str:
    """What the layers' ranks are of, in Markdown: the model's answer, the hidden word, or its first piece."""
    if hidden is None:
        return f"The model's answer “{md(result['answer'])}”"
    if result["answer"].casefold() == hidden[0].casefold():
        return f"The hidden word “{md(result['answer'])}”"
    return f"The hidden word's first piece “{md(result['answer'])}”"  # a word the tokenizer splits
