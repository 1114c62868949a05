"""Entry page of the explorer app (placeholder until the app issue lands)."""

import streamlit as st

st.set_page_config(page_title="ctxmodels explorer", page_icon="🔎", layout="wide")
st.title("ctxmodels explorer")
st.write(
    "See how contextual word representations work: ELMo, BERT and static word vectors side by side. "
    "The explorer pages are being built; the model core is available from the `ctxmodels` command line."
)
