"""What the Overview computes, without Streamlit: one word's two vectors in each model, layer by layer, and the
dictionary sense each model reads in each sentence (``app/kit/dictionary.py``)."""

from __future__ import annotations

from dataclasses import asdict

from app.kit.dictionary import both_line, read_in_both
from app.kit.inputs import check_text
from app.kit.registry import get_model
from app.views.overview.state import TryState
from ctxmodels.analysis import dictionary_senses as ds
from ctxmodels.analysis.word_senses import find_in_both, same_word


def checked(s: TryState) -> tuple[str, str]:
    """The two sentences, checked (ValueError saying what is wrong, also when the word is not in both)."""
    text_a, text_b = check_text(s.a, "sentence A"), check_text(s.b, "sentence B")
    find_in_both(text_a, text_b, s.word)
    return text_a, text_b


def same_word_in(model_id: str, text_a: str, text_b: str, word: str) -> dict:
    """The cosine of the word's two vectors in each layer of the model, and the layer's baseline."""
    return asdict(same_word(get_model(model_id), text_a, text_b, word))


def lemma_of(word: str) -> str | None:
    """The SemCor lemma of ``word``; None when SemCor tags no sense of it."""
    return ds.lemma_of(word)


def senses_line(model_id: str, lemma: str, text_a: str, text_b: str, word: str) -> str:
    """One Markdown line: the dictionary sense the model's best layer on SemCor reads in A and in B."""
    return both_line(model_id, read_in_both(model_id, lemma, text_a, text_b, word))
