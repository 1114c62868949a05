"""A page's words: its title and introduction, and the "What am I looking at?" box with the formulas behind it."""

from __future__ import annotations

import re
from collections.abc import Sequence

import streamlit as st

from app.kit.presentation import is_presenting

_REST = "_intro_rest"  # session state: the intro's sentences left out in presentation mode, for explain()
# the end of a sentence: . ! or ? before a space and a capital letter or markup (bold, code, a link)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z*_`(\[])")

FORMULAS = {
    "mlm": r"\mathcal{L}_{\text{MLM}} = -\sum_{i \in M} \log p_\theta\big(x_i \mid x_{\setminus M}\big), \qquad "
           r"p_\theta(x_i = w \mid \cdot) = \operatorname{softmax}(W\,h_i + b)_w",
    "attention": r"\operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\Big(\frac{Q K^\top}{\sqrt{d_k}}\Big) V",
    "multihead": r"\operatorname{MultiHead}(X) = [\,\text{head}_1; \dots; \text{head}_h\,]\,W^O, \quad "
                 r"\text{head}_j = \operatorname{Attention}(X W_j^Q, X W_j^K, X W_j^V)",
    "bilm": r"\max \sum_{k=1}^{N} \Big( \log p(t_k \mid t_1, \dots, t_{k-1}; \overrightarrow{\Theta}) + "
            r"\log p(t_k \mid t_{k+1}, \dots, t_N; \overleftarrow{\Theta}) \Big)",
    "scalar_mix": r"\mathbf{v}_k = \gamma \sum_{j=0}^{L} s_j\, \mathbf{h}_{k,j}, \qquad "
                  r"s = \operatorname{softmax}(w)",
    "cosine": r"\cos(u, v) = \frac{u \cdot v}{\lVert u \rVert\, \lVert v \rVert}",
    "self_similarity": r"\text{SelfSim}_\ell(w) = \frac{1}{n(n-1)} \sum_{i \ne j} \cos\big(f_\ell(s_i, w), "
                       r"f_\ell(s_j, w)\big) \;-\; \text{(mean cosine of random word pairs in layer } \ell)",
    "cka": r"\operatorname{CKA}(X, Y) = \frac{\lVert Y^\top X \rVert_F^2}{\lVert X^\top X \rVert_F\, "
           r"\lVert Y^\top Y \rVert_F} \quad (X, Y \text{ column-centred; rows: the same words})",
    "jsd": r"\operatorname{JS}(p, q) = \tfrac12 \operatorname{KL}(p \,\Vert\, m) + \tfrac12 \operatorname{KL}(q "
           r"\,\Vert\, m), \quad m = \tfrac12 (p + q)",
    "rollout": r"\tilde{A}_\ell = \tfrac12 \bar{A}_\ell + \tfrac12 I, \qquad R_\ell = \tilde{A}_\ell\, R_{\ell-1}",
    "integrated_gradients": r"\operatorname{IG}_i = (x_i - b_i) \cdot \int_0^1 \frac{\partial \log p(y \mid b + "
                            r"\alpha (x - b))}{\partial x_i}\, d\alpha, \qquad \sum_i \operatorname{IG}_i = "
                            r"\log p(y \mid x) - \log p(y \mid b)",
}


def first_sentence(text: str) -> tuple[str, str]:
    """``text`` split after its first sentence: (first, rest); rest is "" for a single sentence."""
    parts = _SENTENCE_END.split(text.strip(), maxsplit=1)
    return parts[0], parts[1] if len(parts) > 1 else ""


def page_header(title: str, intro: str) -> None:
    """The page's title and introduction; in presentation mode only the intro's first sentence (the rest goes
    into the "What am I looking at?" box, :func:`explain`), so the first screen keeps room for the figure."""
    st.title(title)
    rest = ""
    if is_presenting():
        intro, rest = first_sentence(intro)
    st.session_state[_REST] = rest
    st.markdown(intro)


def explain(text: str, formulas: Sequence[str] = ()) -> None:
    """The page's "what am I looking at": a few sentences and the formulas it illustrates (keys of ``FORMULAS``
    or LaTeX). Formulas wider than the page scroll sideways (``app/kit/presentation.py``)."""
    _explanation(st.session_state.pop(_REST, ""), text, tuple(formulas))


@st.fragment
def _explanation(rest: str, text: str, formulas: tuple[str, ...]) -> None:
    # Written only when opened (a fragment, so opening it reruns this box alone): a first visit's browser then
    # has no text and formulas to typeset that nobody has asked for yet.
    box = st.expander("What am I looking at?", key="explain_open", on_change="rerun")
    if not box.open:
        return
    with box:
        if rest:
            st.markdown(rest)
        st.markdown(text)
        for f in formulas:
            st.latex(FORMULAS.get(f, f))
