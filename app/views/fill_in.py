"""Fill in the blank: what each masked language model guesses for every [MASK], side by side."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from st_keyup import st_keyup

from app import figures, limits
from app.errors import guard
from app.explanations import explain, page_header
from app.inputs import MAX_TEXT_CHARS, check_masks, check_text, last_good, md, quoted, remember
from app.plots import plot
from app.registry import get_model, label, require_models
from app.url_state import to_url, url_state, url_value
from ctxmodels.analysis import fill_in

page_header(
    "Fill in the blank",
    "Write `[MASK]` where a word is missing; every loaded BERT with its masked-LM head guesses the word. "
    "Or write a whole sentence and pick a word to hide: you then see how likely the model finds the real word.",
)
explain(
    "BERT was trained to restore hidden words: 15% of the pieces of each training text were replaced (mostly by "
    "`[MASK]`) and the model learned to predict the originals from both sides of the context. The bars are the "
    "model's softmax probabilities over its vocabulary at the masked position. A word the tokenizer splits into "
    "pieces is hidden whole; its probability is the product of its pieces' (each predicted independently) and "
    "its rank the worst of its pieces' ranks.",
    ["mlm"],
)

ids = require_models(kinds=["bert"], what="filling in blanks")
mlm_ids = [m for m in ids if get_model(m).can_fill_mask]
no_head = [m for m in ids if m not in mlm_ids]

url_state("text", "The boat drifted slowly towards the far [MASK] of the river.", max_chars=MAX_TEXT_CHARS)
TOP_K = dict(min_value=1, max_value=20)

# st_keyup reports every keystroke (after a short pause), so the guesses follow the typing; st.text_input would
# wait for Enter. Its own state lives under another key; "text" mirrors it for the URL.
text = st_keyup("Sentence (updates as you type)", value=st.session_state["text"], key="text_live", debounce=150)
st.session_state["text"] = text
c1, c2 = st.columns([3, 1])
# Widgets below a keystroke box start from their own value/default, not from session state (see url_value).
chosen = c1.multiselect("Models", mlm_ids, key="fill_models", format_func=label,
                        default=url_value("fill_models", mlm_ids, options=mlm_ids, many=True, names=label))
top_k = c2.slider("Guesses per mask", **TOP_K, value=url_value("k", 5, kind=int, **TOP_K), key="k")
to_url("text", "k", "fill_models")
if no_head:
    st.caption("No masked-LM head (cannot fill in; attention and vectors still work): "
               + ", ".join(md(label(m)) for m in no_head))
if not mlm_ids:
    st.warning("None of the loaded BERT models has its masked-LM head, so none can fill in blanks. Load a "
               "checkpoint saved with its MLM head (ours always are) on the **Models** page.")
    st.stop()


@st.cache_data(max_entries=512, show_spinner=False)
def guesses(model_id: str, text: str, k: int) -> list:
    m = get_model(model_id)
    return fill_in.fill_mask(m.model, m.tokenizer, text, top_k=k)


@st.cache_data(max_entries=512, show_spinner=False)
def score(model_id: str, text: str, word: str, occurrence: int, k: int) -> dict:
    m = get_model(model_id)
    return fill_in.mask_word(m.model, m.tokenizer, text, word, occurrence=occurrence, top_k=k).to_dict()


checked = None
with guard("The sentence"):
    checked = check_masks(check_text(text, "sentence"))
    remember("fill_in", checked)
if checked is None and last_good("fill_in") is not None:  # keep showing the last sentence until this one is fixed
    checked = last_good("fill_in")
    st.info(f"Below: the last sentence that worked, {quoted(checked)}.")
if checked is None or not chosen:
    if checked is not None:
        st.info("Choose at least one model.")
    st.stop()

has_mask = fill_in.MASK in checked
to_mask = None
if not has_mask:
    st.warning("The sentence has no `[MASK]`. Write `[MASK]` where the model should guess a word, or pick a word "
               "of the sentence to hide:")
    words = []
    with guard("The sentence"):
        words = get_model(chosen[0]).tokenizer.encode(checked).words
    options = [None] + list(range(len(words)))
    pick = st.selectbox("Word to hide", options, key="mask_word",
                        format_func=lambda i: "(none)" if i is None else f"{words[i]}  (word {i + 1})")
    if pick is not None:
        to_mask = (words[pick], sum(1 for w in words[:pick] if w.lower() == words[pick].lower()))

if not has_mask and to_mask is None:
    st.stop()

cols = st.columns(len(chosen))
for col, model_id in zip(cols, chosen):
    name = label(model_id)
    with col:
        st.subheader(md(name))
        with guard(name), limits.heavy(f"{name}'s guesses"):
            if has_mask:
                results = guesses(model_id, checked, int(top_k))
                for i, preds in enumerate(results, 1):
                    title = f"[MASK] {i}" if len(results) > 1 else "[MASK]"
                    data = pd.DataFrame(preds).assign(mask=i, model=name)
                    plot(figures.fill_bars(preds, title=title), f"fill-{name}-{i}", key=f"fill::{model_id}::{i}",
                                data=data)
            else:
                word, occurrence = to_mask
                s = score(model_id, checked, word, occurrence, int(top_k))
                st.metric(f"P({md(s['word'])})", f"{s['prob']:.2%}", help="product of its pieces' probabilities")
                st.metric("rank", f"{s['rank']:,}", help="1 = the model's first guess (the worst piece's rank)")
                if len(s["pieces"]) > 1:
                    st.caption("pieces: " + ", ".join(f"{md(p)} ({q:.1%}, rank {r})" for p, q, r in
                                                      zip(s["pieces"], s["piece_probs"], s["piece_ranks"])))
                for j, (piece, preds) in enumerate(zip(s["pieces"], s["top"])):
                    data = pd.DataFrame(preds).assign(piece=piece, model=name)
                    plot(figures.fill_bars(preds, title=f"guesses for “{piece}”", truth=piece),
                                f"mask-{name}-{piece}", key=f"mask::{model_id}::{j}", data=data)
