"""The explorer app: ``streamlit run app/Home.py`` from the repository root (app/settings.py lists the operator's
settings).

This script only sets the page up and hands over to ``st.navigation``; each page lives in ``app/views/``. Pages
stay thin: they read widgets, call the core (``ctxmodels.analysis``) and draw with ``app/figures.py``. What exists
once per server (the loaded models, the UMAP warm-up, the training job) sits behind ``st.cache_resource``; what
belongs to one visitor sits in ``st.session_state`` and, where a shared link must reproduce it, in the URL
(``app/url_state.py``).
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # Streamlit puts only app/ on the path; `from app import ...` needs the root
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

from app.presentation import PRESENTATION_CSS, presenting, start_presenting  # noqa: E402
from app.url_state import to_url, url_state  # noqa: E402
from app.warm_up import umap_warm_up  # noqa: E402

present = presenting()
st.set_page_config(page_title="ctxmodels explorer", page_icon="🔎", layout="wide",
                   initial_sidebar_state="collapsed" if present else "auto")
umap_warm_up()  # once per server, in the background: the first UMAP then takes a second, not half a minute

PAGES = [
    st.Page("views/overview.py", title="Overview", icon=":material/home:", url_path="overview", default=True),
    st.Page("views/word_senses.py", title="Word senses", icon=":material/scatter_plot:", url_path="word_senses"),
    st.Page("views/elmo_layers.py", title="ELMo layers", icon=":material/stacked_bar_chart:", url_path="elmo_layers"),
    st.Page("views/attention.py", title="Attention", icon=":material/grid_on:", url_path="attention"),
    st.Page("views/fill_in.py", title="Fill in the blank", icon=":material/edit_note:", url_path="fill_in"),
    st.Page("views/models.py", title="Models", icon=":material/model_training:", url_path="models"),
]
page = st.navigation(PAGES, position="top" if present else "sidebar")

if present:
    st.markdown(PRESENTATION_CSS, unsafe_allow_html=True)
else:
    with st.sidebar:
        st.toggle("Presentation mode", value=False, key="present_toggle", on_change=start_presenting,
                  help="Larger text, no sidebar: for a projector. A link with ?present=1 opens in this mode.")
        url_state("image_format", "png", options=["png", "svg"])
        st.radio("Camera button saves", ["png", "svg"], key="image_format", horizontal=True,
                 help="The camera icon above each figure downloads it in this format.")

to_url("present")
page.run()

if present and st.button("Leave presentation mode", type="tertiary"):
    st.session_state["present"] = False
    st.session_state["present_toggle"] = False
    to_url("present")
    st.rerun()
