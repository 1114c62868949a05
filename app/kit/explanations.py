"""A page's words: its title and introduction, and the "What am I looking at?" box with the formulas behind it."""

from __future__ import annotations

import re
from collections.abc import Sequence

import streamlit as st

from app.kit.glossary import gloss, words_box
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
    "skipgram": r"\log \sigma(u_c^\top v_w) + \sum_{n=1}^{k} \log \sigma(-u_n^\top v_w)",
    "nsp": r"\mathcal{L}_{\text{NSP}} = -\log p_\theta\big(y \mid h_{\text{[CLS]}}\big), \qquad "
           r"p_\theta(y \mid h_{\text{[CLS]}}) = \operatorname{softmax}(W_{\text{NSP}}\, h_{\text{[CLS]}})_y, "
           r"\qquad \mathcal{L} = \mathcal{L}_{\text{MLM}} + \mathcal{L}_{\text{NSP}}",
    "causal_lm": r"\mathcal{L}_{\text{LM}} = -\sum_{t=1}^{n} \log p_\theta\big(x_t \mid x_1, \dots, "
                 r"x_{t-1}\big)",
    "electra": r"\mathcal{L}_{\text{MLM}}(x, \theta_G) = \mathbb{E}\Big[\sum_{i \in m} -\log p_G\big(x_i \mid "
               r"x^{\text{masked}}\big)\Big], \qquad \mathcal{L}_{\text{Disc}}(x, \theta_D) = \mathbb{E}\Big["
               r"\sum_{t=1}^{n} -\mathbb{1}(x^{\text{corrupt}}_t = x_t) \log D(x^{\text{corrupt}}, t) - "
               r"\mathbb{1}(x^{\text{corrupt}}_t \ne x_t) \log\big(1 - D(x^{\text{corrupt}}, t)\big)\Big], "
               r"\qquad \min_{\theta_G, \theta_D} \mathcal{L}_{\text{MLM}} + \lambda\, \mathcal{L}_{\text{Disc}}",
}

# Every symbol of each formula, in words: shown under the formula wherever it is shown.
SYMBOLS = {
    "mlm": r"$\mathcal{L}$: the loss training makes small · $M$: the positions hidden by [MASK] · $x_i$: the word "
           r"that was at position $i$ · $x_{\setminus M}$: the sentence with those words hidden · $p_\theta$: the "
           r"model's probability ($\theta$: its weights) · $h_i$: the model's top vector at position $i$ · $W, b$: "
           r"the output layer's weights · $w$: a word of the vocabulary · softmax: turns scores into probabilities "
           r"that add up to 1.",
    "attention": r"$Q, K, V$: the queries, keys and values, one row per token (each token's vector times a learned "
                 r"matrix) · $K^\top$: $K$ turned on its side, so $Q K^\top$ holds every query · key product · $d_k$: "
                 r"how many numbers a key has · softmax: makes each row positive and add up to 1.",
    "multihead": r"$X$: the token vectors entering the layer · $h$: the number of heads · $W_j^Q, W_j^K, W_j^V$: "
                 r"head $j$'s own matrices · $[\,;\,]$: the heads' outputs side by side · $W^O$: the matrix that "
                 r"mixes them back.",
    "bilm": r"$t_1 \dots t_N$: the $N$ words of a sentence, $t_k$ the $k$-th · the first $p$: the forward LSTM's "
            r"probability of word $k$ from the words before it · the second: the backward LSTM's, from the words "
            r"after it · $\overrightarrow{\Theta}, \overleftarrow{\Theta}$: the two directions' weights.",
    "scalar_mix": r"$k$: a word's position in the sentence · $j$: a layer, from 0 (the character layer) to $L$ (the "
                  r"top layer) · $\mathbf{h}_{k,j}$: word $k$'s vector in layer $j$ · $s_j$: layer $j$'s weight in "
                  r"the mix (the bars: positive, adding up to 1) · $w$: the raw numbers the probe learns, which "
                  r"softmax turns into the $s_j$ · $\gamma$ (gamma): one number that scales the whole mix · "
                  r"$\mathbf{v}_k$: the mixed vector the task reads.",
    "cosine": r"$u, v$: two vectors · $u \cdot v$: their dot product (multiply them number by number and add up) · "
              r"$\lVert u \rVert$: a vector's length · 1: the same direction, 0: unrelated, −1: opposite.",
    "self_similarity": r"$w$: the word · $s_1 \dots s_n$: the $n$ sentences it occurs in · $f_\ell(s, w)$: its "
                       r"vector in layer $\ell$ of sentence $s$ · $i \ne j$: every pair of two different occurrences "
                       r"· the part taken away is the layer's anisotropy: how alike any two random words already "
                       r"are there.",
    "cka": r"$X, Y$: the same words' vectors in one layer, before and after fine-tuning (a row per word) · "
           r"column-centred: each column's mean taken away · $\lVert \cdot \rVert_F$: the square root of the sum of "
           r"all squared entries · 1: the layer's shape is unchanged, near 0: unrelated.",
    "jsd": r"$p, q$: the attention one token gives every token in a head, before and after · $m$: their average · "
           r"KL: the Kullback–Leibler divergence, how far one distribution is from another · JS is 0 for identical "
           r"rows, at most $\log 2$.",
    "rollout": r"$\bar{A}_\ell$: layer $\ell$'s attention averaged over its heads · $I$: the identity (each token "
               r"keeps itself: the residual connection) · $R_\ell$: how much each position draws on each input "
               r"token after layer $\ell$.",
    "integrated_gradients": r"$x$: the sentence's input vectors · $b$: the same with every word hidden · $x_i, b_i$: "
                            r"word $i$'s · $\alpha$: how far along the walk from $b$ to $x$ (0 to 1) · "
                            r"$\partial / \partial x_i$: how fast the answer's log-probability changes with word "
                            r"$i$'s vector · $y$: the answer · $\mathrm{IG}_i$: word $i$'s share.",
    "skipgram": r"$v_w$: a word's vector · $u_c$: the vector of a word near it (its context) · $u_n$: $k$ words "
                r"drawn at random (the noise) · $\sigma$: the logistic function, squeezing any number into 0 to 1.",
    "nsp": r"$y$: the answer, “B follows A” or “B is a random sentence” · $h_{\text{[CLS]}}$: the model's top vector "
           r"at [CLS] · $W_{\text{NSP}}$: the small layer that reads it · $p_\theta$: the model's probability "
           r"($\theta$: its weights) · $\mathcal{L}_{\text{MLM}}$: the masked-word loss above · $\mathcal{L}$: what "
           r"BERT's training makes small, both losses added.",
    "causal_lm": r"$x_1 \dots x_n$: the $n$ pieces of a text, $x_t$ the $t$-th · $p_\theta(x_t \mid x_1, \dots, "
                 r"x_{t-1})$: the model's probability of piece $t$ from the pieces before it only ($\theta$: its "
                 r"weights) · $\mathcal{L}_{\text{LM}}$: the loss training makes small: every piece is guessed.",
    "electra": r"$x$: a text · $m$: the positions hidden (15%) · $x^{\text{masked}}$: the text with them hidden · "
               r"$p_G$: the generator's probability ($\theta_G$: its weights) · $x^{\text{corrupt}}$: the text with "
               r"the generator's samples in the hidden places · $D(x^{\text{corrupt}}, t)$: the discriminator's "
               r"probability that piece $t$ is the original ($\theta_D$: its weights) · $\mathbb{1}(\cdot)$: 1 when "
               r"true, else 0 · $n$: the number of pieces: every piece counts · $\mathbb{E}$: the average over "
               r"texts · $\lambda$: how much the discriminator's loss weighs (50).",
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
    st.markdown(gloss(intro), unsafe_allow_html=True)  # the jargon gets hover help (app/kit/glossary.py)


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
            st.markdown(gloss(rest), unsafe_allow_html=True)
        for part in text.split("\n\n"):  # short parts: a long explanation reads as its paragraphs
            st.markdown(gloss(part), unsafe_allow_html=True)
        for f in formulas:
            st.latex(FORMULAS.get(f, f))
            if f in SYMBOLS:
                st.caption(SYMBOLS[f])
        words_box(" ".join((rest, text, *(SYMBOLS.get(f, "") for f in formulas))))
