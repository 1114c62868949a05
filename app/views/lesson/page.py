"""Lesson: eight steps for a class, each a question, what the models here answer, and the page that shows it
(the steps and their answers: ``compute.py``)."""

from datetime import date

import streamlit as st

from app.kit import limits
from app.kit.errors import guard
from app.kit.explanations import explain, page_header
from app.kit.pages import script
from app.kit.plots import plot
from app.kit.registry import model_ids, no_models_message
from app.kit.text import page_text
from app.kit.url_state import to_url, url_state
from app.views.lesson.compute import STEPS, TITLE, answer, cast, chart, plan
from app.views.lesson.figures import draw
from app.views.lesson.state import LessonState, clamped

TEXT = page_text(__file__)
page_header(TITLE, TEXT["intro"])

ids = model_ids()
if not ids:
    no_models_message()
    st.stop()

url_state("step", 1, kind=int, min_value=1, max_value=len(STEPS))
url_state("reveal", False, kind=bool)


def go(to: int) -> None:
    st.session_state["step"] = clamped(to, len(STEPS))
    st.session_state["reveal"] = False  # the next question is asked before its answer shows


def advance(n: int) -> None:
    """A clicker's one button: the answer first, then the next step (predict, then reveal, then move on)."""
    if st.session_state.get("reveal"):
        go(n + 1)
    else:
        st.session_state["reveal"] = True


def picked() -> None:
    st.session_state["reveal"] = False


left, mid, right = st.columns(3, vertical_alignment="bottom")  # at 900 px a narrower button cut "Previous"
mid.selectbox("Step", label_visibility="collapsed", options=range(1, len(STEPS) + 1), key="step", on_change=picked,
              format_func=lambda n: f"{n} · {STEPS[n - 1].title}")
n = st.session_state["step"]
shown = bool(st.session_state.get("reveal"))
# Presenters' clickers send Page Down and Page Up: the right-hand button always moves the lesson on, like a slide.
left.button("Previous", icon=":material/arrow_back:", on_click=go, args=(n - 1,), disabled=n == 1,
            width="stretch", shortcut="PageUp", help="The step before, its answer hidden (Page Up).")
right.button("Next" if shown else "Answer", icon=":material/arrow_forward:" if shown else ":material/visibility:",
             on_click=advance, args=(n,), disabled=shown and n == len(STEPS), width="stretch", shortcut="PageDown",
             help="Shows this step's answer, then moves to the next step with its answer hidden (Page Down: a "
                  "presenter's clicker works).")
step = STEPS[n - 1]
models = cast(ids)

st.subheader(f"Step {n} of {len(STEPS)}: {step.title}")
st.info(f"**Ask the class.** {step.ask}", icon=":material/help:")
toggle_col, link_col = st.columns([1, 1], vertical_alignment="center")
reveal = toggle_col.toggle("Show what the models here answer", key="reveal",
                           help="Computed now with the models this server offers (the first time a few seconds: "
                                "the models load and read the sentences).")
to_url("step", "reveal")
s = LessonState(n, reveal)
params = {}
with link_col, guard(f"The link to the {step.page_name} page"):
    params = step.params(models)
link_col.page_link(script(step.page), label=f"Open it on the **{step.page_name}** page", icon=":material/open_in_new:",
                   query_params=params)

if s.reveal:
    with guard(f"Step {n}"), limits.heavy(f"lesson step {n}"), st.spinner("The models are reading the sentences …"):
        data = chart(s.step, models)  # the answer as small charts first, the numbers under them
        figs = draw(data) if data is not None else []
        for i, (col, fig) in enumerate(zip(st.columns(len(figs)) if figs else [], figs)):
            with col:
                plot(fig, f"lesson-step{n}-{i + 1}", key=f"lesson::{n}::{i}")
        st.markdown("\n".join(f"- {line}" for line in answer(s.step, models)))
        st.markdown(step.point)


# The plan is made when the button is clicked, outside this script run: the app's address is read now.
here = st.context.url or ""
base = here[: -len("/lesson")] if here.endswith("/lesson") else ""
st.download_button("The lesson plan (Markdown): every question, what the models here answer, and the links",
                   data=lambda: plan(models, lambda k: answer(k, models), base, when=date.today().isoformat()),
                   file_name="ctxmodels-lesson.md", mime="text/markdown", on_click="ignore",
                   icon=":material/download:", type="tertiary")

explain(TEXT["explain"], ["cosine", "scalar_mix", "mlm", "attention", "causal_lm"])

# Streamlit ignores a shortcut while an input has the focus, and the step list and the answer switch are inputs: once
# the mouse has used one (a click, not a key: keyboard users keep their place), the focus goes back to the page, so
# the clicker's next Page Down still reaches the button. Installed once per browser tab, acting on this page only;
# last on the page, so its empty element adds no gap between the controls.
st.html("""<script>
if (!window.ctxLessonFocus) {
  window.ctxLessonFocus = true;
  document.addEventListener("click", (e) => {
    if (e.detail === 0 || !location.pathname.endsWith("/lesson")) return;
    setTimeout(() => {
      const el = document.activeElement;
      if (el && el.tagName === "INPUT" && (el.type === "checkbox" || el.getAttribute("aria-expanded") === "false"))
        el.blur();
    }, 50);
  }, true);
}
</script>""", unsafe_allow_javascript=True)
