"""Overview: what the explorer shows and which models are here."""

import streamlit as st

from app.explanations import explain, page_header
from app.inputs import md
from app.registry import label, model_ids, no_models_message

page_header(
    "ctxmodels explorer",
    "See how **contextual word representations** work. A static word vector gives *bank* one point, whether "
    "it is a river bank or the bank that holds money; **ELMo** and **BERT** give every occurrence its own "
    "vector, shaped by the sentence around it. The pages below put them side by side.",
)

cols = st.columns(3)
cols[0].page_link("views/word_senses.py", label="**Word senses** — watch the senses of a word fall apart into "
                  "clouds, layer by layer, and see which words move them", icon=":material/scatter_plot:")
cols[1].page_link("views/fill_in.py", label="**Fill in the blank** — what BERT and ELMo guess for a [MASK], "
                  "and which words the guess rests on",
                  icon=":material/edit_note:")
cols[2].page_link("views/attention.py", label="**Attention** — which words each head looks at, and how its "
                  "queries and keys decide it",
                  icon=":material/grid_on:")
cols[0].page_link("views/elmo_layers.py", label="**ELMo layers** — which layers a task wants",
                  icon=":material/stacked_bar_chart:")
cols[1].page_link("views/models.py", label="**Models** — what is loaded; train a small one",
                  icon=":material/model_training:")
cols[2].page_link("views/fine_tuning.py", label="**What fine-tuning changes** — a model before and after, layer "
                  "by layer", icon=":material/tune:")

st.subheader("Models available")
ids = model_ids()
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
