"""What the Attention page shows, as one frozen value read from its widgets and the URL: the model, the sentence
(or pair), how the maps are read and which overview draws them. The detail's layer and head, and the ranking, are
read by their own fragments."""

from __future__ import annotations

from dataclasses import dataclass

SENTENCE = "The bank raised its interest rates, so she moved her savings elsewhere."
GRID_TOKENS = 48  # the overview grid shows at most this many positions per map: it must stay light
# Beyond this many heads the overview starts as head summaries: 144 maps of 48 x 48 are 2.7 MB a redraw (a 12 x 12
# BERT-base redraws in 1.1 s at 64 pieces with them, bench/bench_attention.py --redraws), summaries a few kB.
MAP_HEADS = 48
LINE_TOKENS = 60  # the line view draws up to T^2 segments: beyond this the heatmap is the readable view
THRESHOLD = dict(min_value=0.0, max_value=0.5)  # the line view's "hide lines below", for the slider and the link
OVERVIEWS = {"auto": "automatic", "maps": "every head's map", "summary": "head summaries"}
VIEWS = {"head": "one head", "mean": "mean over heads", "rollout": "rollout"}
SHARES = ("to_cls", "to_sep", "to_self", "to_prev", "to_next")  # the ranking's columns that are shares


@dataclass(frozen=True)
class AttentionState:
    model: str
    sentence: str  # sentence A, as typed
    pair: str  # sentence B, as typed ("": none)
    merge: bool  # word pieces merged into words
    hide: bool  # [CLS] and [SEP] hidden
    view: str  # what the detail shows: one head, the mean over heads, the rollout
    overview: str

    def as_maps(self, n_heads: int) -> bool:
        """Whether the overview tiles every head's map (else it shows head summaries)."""
        return self.overview == "maps" or (self.overview == "auto" and n_heads <= MAP_HEADS)


def controls_summary(model: str, sentence: str, pair: str, view: str) -> str:
    """The settings in a few words, written on the folded controls (drawn before the widgets)."""
    short = sentence if len(sentence) <= 48 else sentence[:45].rstrip() + " …"
    return f"{model} · “{short}”" + (" + sentence B" if pair.strip() else "") + f" · detail: {VIEWS.get(view, view)}"
