"""Overview: what the explorer shows, a first try (one word in two sentences), and which models are here."""

import streamlit as st

from app.kit import limits
from app.kit.errors import guard
from app.kit.explanations import explain, page_header
from app.kit.inputs import MAX_TEXT_CHARS, md
from app.kit.pages import script
from app.kit.plots import plot
from app.kit.presentation import controls
from app.kit.registry import default_models, label, model_ids, no_models_message
from app.kit.text import page_text
from app.kit.url_state import to_url, url_state
from app.views.overview import compute
from app.views.overview import figures as page_figures
from app.views.overview.state import MAX_WORD_CHARS, SENTENCE_A, SENTENCE_B, WORD, TryState

TEXT = page_text(__file__)
page_header("ctxmodels explorer", TEXT["intro"])

ids = model_ids()


def page_links() -> None:
    """A link to each page, with what it shows (under the first try, which comes first when it is on)."""
    cols = st.columns(3)
    cols[0].page_link(script("word_senses"), label="**Word senses** — watch the senses of a word fall apart into "
                      "clouds, layer by layer, find the sentences with a word of your choice among them, see which "
                      "words move them and which dictionary sense each model reads", icon=":material/scatter_plot:")
    cols[1].page_link(script("fill_in"), label="**Fill in the blank** — what BERT and ELMo guess for a [MASK], "
                      "layer by layer, and which words the guess rests on, by hiding them or by their gradients",
                      icon=":material/edit_note:")
    cols[2].page_link(script("attention"), label="**Attention** — which words each head looks at, and how its "
                      "queries and keys decide it",
                      icon=":material/grid_on:")
    cols[0].page_link(script("elmo_layers"), label="**ELMo layers** — which layers a task wants",
                      icon=":material/stacked_bar_chart:")
    cols[1].page_link(script("lesson"), label="**Lesson** — eight steps for a class: a question, what the models "
                      "answer, the page that shows it", icon=":material/school:")
    cols[2].page_link(script("models"), label="**Models** — what is loaded; train a small one",
                      icon=":material/model_training:")
    cols[1].page_link(script("fine_tuning"), label="**What fine-tuning changes** — a model before and after, layer "
                      "by layer", icon=":material/tune:")


def name_senses(s: TryState, text_a: str, text_b: str, shown: list[str]) -> None:
    """A line per model: the dictionary sense its best layer on SemCor reads in sentence A and in sentence B."""
    lemma = compute.lemma_of(s.word)
    if lemma is None:
        st.info(f"SemCor tags no sense of “{md(s.word)}” (it tags nouns, verbs, adjectives and adverbs), so there is "
                "no dictionary sense to name.")
        return
    lines = []
    for model_id in shown:
        with guard(f"The dictionary senses in {label(model_id)}"), limits.heavy(f"{label(model_id)}: senses"):
            lines.append(compute.senses_line(model_id, lemma, text_a, text_b, s.word))
    if lines:
        st.markdown(f"**Which dictionary sense of *{md(lemma)}*** each model reads, in its layer that reads SemCor "
                    "best:\n\n" + "\n".join(f"- {line}" for line in lines))  # a line each


# -- a first try: off until asked, so the first page stays light ------------------------------------------------
url_state("try", False, kind=bool)
url_state("try_a", SENTENCE_A, max_chars=MAX_TEXT_CHARS)
url_state("try_b", SENTENCE_B, max_chars=MAX_TEXT_CHARS)
url_state("try_word", WORD, max_chars=MAX_WORD_CHARS)
url_state("try_models", default_models(ids), options=ids, many=True, names=label)
url_state("try_senses", False, kind=bool)
if ids and st.toggle("Try it: one word in two sentences", key="try", persist_state="session",
                     help="How alike a word's two vectors are, layer by layer, in each model."):
    c1, c2, c3 = st.columns([5, 5, 2])
    a = c1.text_input("Sentence A", key="try_a", persist_state="session")
    b = c2.text_input("Sentence B", key="try_b", persist_state="session")
    word = c3.text_input("The word", key="try_word", persist_state="session")
    box = controls(summary=", ".join(label(m) for m in st.session_state["try_models"]), key="controls_try")
    chosen = box.multiselect("Models", ids, key="try_models", persist_state="session", format_func=label)
    senses = box.checkbox("Name the dictionary sense in each sentence", key="try_senses", persist_state="session",
                          help="Each model reads the word in A and in B as the WordNet sense whose average over "
                               "SemCor's tagged occurrences is nearest, in its layer that reads SemCor best (the "
                               "first time, SemCor is read and the word's occurrences embedded: a few seconds).")
    to_url("try", "try_a", "try_b", "try_word", "try_models", "try_senses")
    s = TryState(a, b, word, tuple(chosen), senses)
    if not s.models:
        st.info("Choose at least one model.")
    results, checked = {}, None
    with guard("The sentences"):
        checked = compute.checked(s)
    for model_id in s.models if checked else []:
        with guard(label(model_id)), limits.heavy(f"{label(model_id)}: the two sentences"):
            results[label(model_id)] = compute.same_word_in(model_id, *checked, s.word)
    if results:
        plot(page_figures.same_word_lines(results, s.word, title=f"“{s.word}” in sentence A and in sentence B"),
             f"same-word-{s.word}", key="try::lines")
        st.caption(TEXT["reading"])
    if results and s.senses:
        name_senses(s, *checked, [m for m in s.models if label(m) in results])
    st.divider()

page_links()
st.subheader("Models available")
if not ids:
    no_models_message()
else:
    st.markdown(", ".join(f"**{md(label(i))}**" for i in ids) +
                ". They load on first use and are shared by everyone using this server.")

explain(TEXT["explain"], ["mlm", "bilm"])
