"""Small slips a class would trip on, each as a visitor meets it (AppTest on the tiny models, tests/app_fixtures.py):
numbers that count from the same place, whole sentences, a warning said once, no error
before anything is typed, a clicked point that travels with the link, and figure labels that do not run together."""

from __future__ import annotations

import numpy as np
import pytest

from app.views.word_senses import figures as senses_figures
from ctxmodels.analysis import concordance, vectors
from tests.app_fixtures import assert_clean, page, texts, write_semcor

pytest.importorskip("streamlit.testing.v1")
pytestmark = pytest.mark.usefixtures("app_env")

LONG = ("On a grey morning late in the autumn of that year the old ferryman tied his boat to the bank of the river "
        "and walked slowly up the lane towards the village, where nobody expected him. | river")
OWN = "\n".join([LONG, "The bank lent her the money. | money", "We sat on the bank of the river. | river",
                 "The bank raised its interest rates. | money"])


def test_the_concordance_counts_occurrences_from_one_as_the_occurrence_list_does():
    found = vectors.find_occurrences(["The bank.", "A bank and a bank."], "bank")
    assert list(concordance.concordance(found)["occurrence"]) == [0, 1, 2]  # the library's own default stays
    assert list(concordance.concordance(found, first=1)["occurrence"]) == [1, 2, 3]
    at = page("word_senses", projection="pca", models="bert-eltec")
    at.session_state["kwic_open"] = True
    at.run()
    assert_clean(at)
    table = at.dataframe[-1].value
    assert table["occurrence"].min() == 1 and table["occurrence"].max() == len(table)


def test_a_linked_point_is_shown_with_whole_sentences_among_its_neighbours():
    """point=N:MODEL:LAYER (what a click on a 2-D scatter writes) shows that occurrence's details under that panel,
    and its neighbours' sentences whole (a static table wraps them; the data grid cut them at its column's width)."""
    at = page("word_senses", projection="pca", models="bert-eltec", source="own", word="bank", sentences=OWN,
              point="2:bert-eltec:2")
    assert_clean(at)
    assert any(m.startswith("**Occurrence 2**") for m in texts(at.markdown)), texts(at.markdown)
    shown = [s for t in at.table for s in t.value["sentence"]]
    assert LONG.split(" | ")[0] in shown
    other = page("word_senses", projection="pca", models="bert-eltec", source="own", word="bank", sentences=OWN,
                 point="2:elmo-eltec:2")  # a model not shown: nothing is opened
    assert not any(m.startswith("**Occurrence") for m in texts(other.markdown))
    assert at.query_params["point"] == "2:bert-eltec:2"  # kept in the link


def test_my_own_sentences_start_with_a_hint_not_an_error():
    at = page("word_senses", projection="pca", models="bert-eltec", source="own")
    assert_clean(at)
    assert any("Type a few sentences" in i for i in texts(at.info)), texts(at.info)


def test_a_semcor_lemma_warns_once_about_its_missing_vectors_and_never_about_punctuation(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXMODELS_DATA", str(write_semcor(tmp_path / "data")))
    at = page("word_senses", projection="pca", source="semcor", lemma="bank.n")
    assert not at.exception, texts(at.exception)
    warned = texts(at.warning)
    assert len(warned) == len(set(warned)), warned
    assert not any("word(s) have no vector" in w for w in warned), warned  # other words of the sentences


def test_the_dictionary_sense_map_puts_a_word_a_line_in_its_column_heads():
    guesses = {"elmo-eltec": dict(senses=["sloping land beside a body of water, where the grass grows long",
                                          "a financial institution"],
                                  cosines=np.array([[0.9, 0.8], [0.7, 0.95], [0.6, 0.9]]),
                                  layer_names=["layer 0 (char CNN)", "layer 1 (LSTM)", "layer 2 (LSTM)"],
                                  accuracy=[0.5, 0.7, 0.8], nearest=[0, 1, 1], tagged=1)}
    fig = senses_figures.dictionary_sense_map(guesses)
    heads = list(fig.data[0].x)
    assert heads == ["char<br>CNN<br>50%", "LSTM<br>1<br>70%", "LSTM<br>2<br>80%"]
    assert all(" " not in h for h in heads)
    assert all(len(line) <= 40 for row in fig.data[0].y for line in row.replace("<b>", "").split("<br>"))
