"""Overview: what the explorer shows, a first try (one word in two sentences), and which models are here."""

from dataclasses import asdict

import streamlit as st

from app import figures
from app.kit import limits
from app.kit.dictionary import both_line, read_in_both
from app.kit.errors import guard
from app.kit.explanations import explain, page_header
from app.kit.inputs import MAX_TEXT_CHARS, check_text, md
from app.kit.plots import plot
from app.kit.registry import default_models, get_model, label, model_ids, no_models_message
from app.kit.url_state import to_url, url_state
from ctxmodels.analysis import dictionary_senses as ds
from ctxmodels.analysis.word_senses import find_in_both, same_word

page_header(
    "ctxmodels explorer",
    "See how **contextual word representations** work. A static word vector gives *bank* one point, whether "
    "it is a river bank or the bank that holds money; **ELMo** and **BERT** give every occurrence its own "
    "vector, shaped by the sentence around it. The pages below put them side by side.",
)

cols = st.columns(3)
cols[0].page_link("views/word_senses.py", label="**Word senses** — watch the senses of a word fall apart into "
                  "clouds, layer by layer, find the sentences with a word of your choice among them, see which "
                  "words move them and which dictionary sense each model reads", icon=":material/scatter_plot:")
cols[1].page_link("views/fill_in.py", label="**Fill in the blank** — what BERT and ELMo guess for a [MASK], "
                  "layer by layer, and which words the guess rests on, by hiding them or by their gradients",
                  icon=":material/edit_note:")
cols[2].page_link("views/attention.py", label="**Attention** — which words each head looks at, and how its "
                  "queries and keys decide it",
                  icon=":material/grid_on:")
cols[0].page_link("views/elmo_layers.py", label="**ELMo layers** — which layers a task wants",
                  icon=":material/stacked_bar_chart:")
cols[1].page_link("views/lesson.py", label="**Lesson** — seven steps for a class: a question, what the models "
                  "answer, the page that shows it", icon=":material/school:")
cols[2].page_link("views/models.py", label="**Models** — what is loaded; train a small one",
                  icon=":material/model_training:")
cols[1].page_link("views/fine_tuning.py", label="**What fine-tuning changes** — a model before and after, layer "
                  "by layer", icon=":material/tune:")

ids = model_ids()


def name_senses(model_ids: list[str], text_a: str, text_b: str, word: str) -> None:
    """A line per model: the dictionary sense its best layer on SemCor reads in sentence A and in sentence B."""
    lemma = ds.lemma_of(word)
    if lemma is None:
        st.info(f"SemCor tags no sense of “{md(word)}” (it tags nouns, verbs, adjectives and adverbs), so there is "
                "no dictionary sense to name.")
        return
    lines = []
    for model_id in model_ids:
        with guard(f"The dictionary senses in {label(model_id)}"), limits.heavy(f"{label(model_id)}: senses"):
            lines.append(both_line(model_id, read_in_both(model_id, lemma, text_a, text_b, word)))
    if lines:
        st.markdown(f"**Which dictionary sense of *{md(lemma)}*** each model reads, in its layer that reads SemCor "
                    "best:\n" + "\n".join(lines))


# -- a first try: off until asked, so the first page stays light ------------------------------------------------
url_state("try", False, kind=bool)
url_state("try_a", "We sat on the bank of the river and watched the boats.", max_chars=MAX_TEXT_CHARS)
url_state("try_b", "She paid the money into her account at the bank.", max_chars=MAX_TEXT_CHARS)
url_state("try_word", "bank", max_chars=100)
url_state("try_models", default_models(ids), options=ids, many=True, names=label)
url_state("try_senses", False, kind=bool)
if ids and st.toggle("Try it: one word in two sentences", key="try", persist_state="session",
                     help="How alike a word's two vectors are, layer by layer, in each model."):
    c1, c2, c3 = st.columns([5, 5, 2])
    a = c1.text_input("Sentence A", key="try_a", persist_state="session")
    b = c2.text_input("Sentence B", key="try_b", persist_state="session")
    word = c3.text_input("The word", key="try_word", persist_state="session")
    chosen = st.multiselect("Models", ids, key="try_models", persist_state="session", format_func=label)
    senses = st.checkbox("Name the dictionary sense in each sentence", key="try_senses", persist_state="session",
                         help="Each model reads the word in A and in B as the WordNet sense whose average over "
                              "SemCor's tagged occurrences is nearest, in its layer that reads SemCor best (the "
                              "first time, SemCor is read and the word's occurrences embedded: a few seconds).")
    to_url("try", "try_a", "try_b", "try_word", "try_models", "try_senses")
    if not chosen:
        st.info("Choose at least one model.")
    results, checked = {}, False
    with guard("The sentences"):
        text_a, text_b = check_text(a, "sentence A"), check_text(b, "sentence B")
        find_in_both(text_a, text_b, word)
        checked = True
    for model_id in chosen if checked else []:
        with guard(label(model_id)), limits.heavy(f"{label(model_id)}: the two sentences"):
            results[label(model_id)] = asdict(same_word(get_model(model_id), text_a, text_b, word))
    if results:
        plot(figures.same_word_lines(results, word, title=f"“{word}” in sentence A and in sentence B"),
             f"same-word-{word}", key="try::lines")
        st.caption("Each solid line is the cosine between the word's vector in A and its vector in B, in each "
                   "layer (1: the same vector). A static model gives a word one vector whatever its sentence, and "
                   "so do ELMo's character layer and, nearly, BERT's input embeddings (only the position differs); "
                   "the contextual layers move the two apart by as much as their sentences differ. The dotted line "
                   "is how alike any two words of the two sentences are in that layer: a layer where every pair "
                   "is close says less with a high cosine. Try a B where the word means the same as in A.")
    if results and senses:
        name_senses([m for m in chosen if label(m) in results], text_a, text_b, word)
    st.divider()

st.subheader("Models available")
if not ids:
    no_models_message()
else:
    st.markdown(", ".join(f"**{md(label(i))}**" for i in ids) +
                ". They load on first use and are shared by everyone using this server.")

explain(
    "Each page says what it shows and the formulas behind it. The state that matters (page, word, models, "
    "layer, projection) is in the address bar: copy the link to share the view. Every figure's camera icon "
    "saves it as PNG or SVG; the buttons below a figure give it as HTML and its data as CSV.",
    ["mlm", "bilm"],
)
