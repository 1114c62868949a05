"""The explorer app: ``streamlit run app/Home.py`` from the repository root (app/kit/settings.py lists the
operator's settings).

This script only sets the page up and hands over to ``st.navigation``. Each page is a folder of ``app/views/``
named by its URL path: ``page.py`` (the only module that makes widgets) reads a frozen ``state.py`` value from the
widgets and the URL, calls ``compute.py`` (the core, ``ctxmodels.analysis``, cached by model names and state) and
draws with ``figures.py`` (data in, Plotly figure out); its words are in ``text.md``. What pages share is in
``app/kit/``. What exists once per server (the loaded models, the UMAP warm-up, the training job) sits behind
``st.cache_resource``; what belongs to one visitor sits in ``st.session_state`` and, where a shared link must
reproduce it, in the URL (``app/kit/url_state.py``).
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # Streamlit puts only app/ on the path; `from app import ...` needs the root
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

from app.kit.glossary import glossary_panel  # noqa: E402
from app.kit.pages import script  # noqa: E402
from app.kit.presentation import (  # noqa: E402
    APP_CSS,
    PRESENTATION_CSS,
    leave_button,
    present_to_url,
    presenting,
    start_presenting,
)
from app.kit.url_state import flush, history_steps, url_state  # noqa: E402
from app.kit.warm_up import lesson_warm_up, serving_threads, umap_warm_up  # noqa: E402

present = presenting()
st.set_page_config(page_title="ctxmodels explorer", page_icon="🔎", layout="wide",
                   initial_sidebar_state="collapsed" if present else "auto")
serving_threads()  # once per server: one torch thread per model call (app/kit/warm_up.py says why)
umap_warm_up()  # once per server, in the background: the first UMAP then takes a second, not half a minute
lesson_warm_up()  # with --warm-lesson: the lesson's pages visited once per server, in the background

# The default page is served at the root ("/"): Streamlit gives it the url_path "" whatever it is told, so
# "/overview" found no page. A hidden second entry for the same file answers there. (Streamlit tells pages apart
# by the url_path they were given, so the default's must differ: "home", never shown.)
OVERVIEW = dict(title="Overview", icon=":material/home:")
# On a projector the pages are a bar across the top, beside "Leave presentation": shorter names keep it on one
# 1280-pixel screen.
FINE_TUNING, FILL_IN, LEARN = (("Fine-tuning", "Fill in", "Learn") if present else
                                ("What fine-tuning changes", "Fill in the blank", "How they learn"))
PAGES = [
    st.Page(script("overview"), **OVERVIEW, url_path="home", default=True),
    st.Page(script("overview"), **OVERVIEW, url_path="overview", visibility="hidden"),
    st.Page(script("lesson"), title="Lesson", icon=":material/school:", url_path="lesson"),
    st.Page(script("word_senses"), title="Word senses", icon=":material/scatter_plot:", url_path="word_senses"),
    st.Page(script("elmo_layers"), title="ELMo layers", icon=":material/stacked_bar_chart:", url_path="elmo_layers"),
    st.Page(script("attention"), title="Attention", icon=":material/grid_on:", url_path="attention"),
    st.Page(script("fine_tuning"), title=FINE_TUNING, icon=":material/tune:", url_path="fine_tuning"),
    st.Page(script("fill_in"), title=FILL_IN, icon=":material/edit_note:", url_path="fill_in"),
    st.Page(script("how_they_learn"), title=LEARN, icon=":material/psychology:", url_path="how_they_learn"),
    # Left off the projector's bar (nine pages do not fit beside "Leave presentation" at 1280 pixels): what is
    # loaded and training a model are the operator's, not the class's; its address still opens it.
    st.Page(script("models"), title="Models", icon=":material/model_training:", url_path="models",
            visibility="hidden" if present else "visible"),
]
page = st.navigation(PAGES, position="top" if present else "sidebar")

st.markdown(APP_CSS + (PRESENTATION_CSS if present else ""), unsafe_allow_html=True)
if present:
    leave_button()
else:
    with st.sidebar:
        st.toggle("Presentation mode", value=False, key="present_toggle", on_change=start_presenting,
                  help="Larger text, no sidebar: for a projector. A link with ?present=1 opens in this mode.")
        url_state("image_format", "png", options=["png", "svg"])
        st.radio("Camera button saves", ["png", "svg"], key="image_format", horizontal=True,
                 help="The camera icon above each figure downloads it in this format.")
        glossary_panel()  # every word the pages use, explained

history_steps()  # one browser-history entry per step, not per parameter written
present_to_url()
try:
    page.run()
finally:
    flush()  # the run's URL changes as one address (one history entry at most)
