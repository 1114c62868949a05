"""A lesson for a class, in steps: each step asks a question, then shows what the models on this server answer
(computed when it is asked for, never written in advance) and opens the page that shows it in full.

The steps follow one word, *bank*, from one vector per word to attention heads: the same word in two sentences,
which dictionary sense each model reads there, thirty-two sentences as two clouds, the layers ELMo's tasks want,
a blank to fill, the blank read layer by layer, the heads, and last a model that reads only left to right (a GPT)
beside one that reads both ways. The lines a step reveals come from the core
(``ctxmodels.analysis``) with the models this server offers; the lesson's ``page.py`` draws them. No Streamlit here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from itertools import islice
from urllib.parse import urlencode

from app.kit import dictionary
from app.kit.cache import shared
from app.kit.inputs import md
from app.kit.model_limits import what_it_read
from app.kit.presets import SAME_BEFORE_BANK, preset_sentences
from app.kit.registry import DEFAULT_BERTS, default_models, get_model, label, peeked_kind
from ctxmodels.analysis import attention as att
from ctxmodels.analysis import dictionary_senses as ds
from ctxmodels.analysis import fill_in, probes, vectors
from ctxmodels.analysis import word_senses as ws
from ctxmodels.loading import ATTENTION, CONTEXTUAL, LEFT_TO_RIGHT, declares, successor_models

WORD = "bank"
SENTENCE_A = "We sat on the bank of the river and watched the boats."
SENTENCE_B = "She paid the money into her account at the bank."
BLANK = "She deposited the money in the [MASK]."
HEADS_SENTENCE = "The bank raised its interest rates, so she moved her savings elsewhere."
MAX_FILLERS = 3  # models compared on the blank: one line each on a projector
PAIR_A, PAIR_B = SAME_BEFORE_BANK  # How they learn's pair: only the words after "bank" say which bank it is
TITLE = "A lesson in eight steps"


@dataclass(frozen=True)
class Cast:
    """The models a lesson uses, chosen from those the server offers (nothing is loaded to choose them)."""

    compare: tuple[str, ...]  # the pages' default comparison: static vectors, ELMo, the default BERT
    elmo: str | None
    bert: str | None  # the default BERT, else the first BERT-family model
    berts: tuple[str, ...] = ()  # every BERT-family model (they read both ways), the default first
    gpt: str | None = None  # the first left-to-right model: the server's, else a shipped successor's


def cast(ids: Sequence[str]) -> Cast:
    kinds = {m: peeked_kind(m) for m in ids}
    berts = [m for m in ids if _reads(kinds[m], ATTENTION) and not _reads(kinds[m], LEFT_TO_RIGHT)]
    berts = [m for m in DEFAULT_BERTS if m in berts] + [m for m in berts if m not in DEFAULT_BERTS]
    elmo = next((m for m in ids if kinds[m] == "elmo"), None)
    # the shipped successors count for the GPT, as on How they learn (the page step 8 opens), though other pages
    # list them only when the operator adds them
    kinds |= {m: peeked_kind(m) for m in successor_models() if m not in kinds}
    gpt = next((m for m, kind in kinds.items() if _reads(kind, LEFT_TO_RIGHT)), None)
    return Cast(tuple(default_models(ids)), elmo, berts[0] if berts else None, tuple(berts), gpt)


def _reads(kind: str | None, capability: str) -> bool:
    return kind is not None and declares(kind, capability)


def fillers(c: Cast) -> list[str]:
    """The models that fill the blank: the BERTs with a masked-LM head, then the ELMo (its two language models)."""
    found = (m for m in [*c.berts, c.elmo] if m is not None and fill_in.fills_blanks(get_model(m)))
    return list(islice(found, MAX_FILLERS))  # no model past the last one needed is loaded to be asked


def _number(x: float) -> str:
    return f"{x:.2f}"


def _shown(word: str) -> str:
    return f"*{md(word)}*"


# -- what each step reveals: Markdown lines, one per model or finding ------------------------------------------


def same_word_lines(model_ids: Sequence[str], a: str = SENTENCE_A, b: str = SENTENCE_B) -> list[str]:
    return [_same_word_line(m, a, b) for m in model_ids]


def _same_word_line(model_id: str, a: str, b: str, reads: str = "") -> str:
    model = get_model(model_id)
    r = ws.same_word(model, a, b, WORD)
    name = f"**{md(label(model_id))}**{reads}"
    if len(r.cosine) == 1:
        kind = "" if declares(model, CONTEXTUAL) else " (one vector per word, whatever the sentence)"
        return f"{name}: {_number(r.cosine[0])}{kind}"
    if min(r.cosine) > 1 - SAME:
        return (f"{name}: {_number(min(r.cosine))} in every layer, from {md(r.layer_names[0])} to "
                f"{md(r.layer_names[-1])}: the same vector in both sentences")
    low = min(range(len(r.cosine)), key=lambda j: r.cosine[j])
    path = " → ".join(_number(c) for c in r.cosine)
    return (f"{name}: {path}, from {md(r.layer_names[0])} to {md(r.layer_names[-1])}; least alike in "
            f"{md(r.layer_names[low])} ({_number(r.cosine[low])}, where any word of A and any word of B "
            f"average {_number(r.baseline[low])})")


SAME = 1e-6  # a cosine this close to 1 is the same vector up to rounding (a tiny random BERT that does read the
# words after the word is a few millionths below 1)


def dictionary_lines(model_ids: Sequence[str]) -> list[str]:
    lemma = ds.lemma_of(WORD)
    if lemma is None:
        return [f"SemCor tags no sense of {_shown(WORD)}, so there is no dictionary sense to name."]
    lines = []
    for model_id in model_ids:
        reading = dictionary.read_in_both(model_id, lemma, SENTENCE_A, SENTENCE_B, WORD)
        lines.append(dictionary.both_line(model_id, reading))
    return lines


def clouds_lines(model_ids: Sequence[str]) -> list[str]:
    found = vectors.find_occurrences(preset_sentences(WORD), WORD)
    lines = []
    for model_id in model_ids:
        model = get_model(model_id)
        measured = ws.measure_word(model, found)
        table, sep = measured.table, ws.sense_separation(measured.table)
        if sep is None:
            lines.append(f"**{md(label(model_id))}**: no sense accuracy ({md('; '.join(measured.notes))})")
            continue
        verdict = ("separates the senses" if sep.separates else
                   "does not separate them" + ("" if declares(model, CONTEXTUAL) else ": one vector per word"))
        if len(table) == 1:
            where = f"{sep.accuracy:.0%} in its only layer"
        else:
            per_layer = " · ".join(f"{md(n)} {a:.0%}" for n, a in zip(table["layer"], table["knn1_accuracy"]))
            where = f"{per_layer}; best {md(sep.layer)}, {sep.accuracy:.0%}"
        lines.append(f"**{md(label(model_id))}**: {where}, against {sep.majority:.0%} for always guessing one sense: "
                     f"{verdict}")
    return lines


TASK_NAMES = {"pos": "Part of speech", "wsd": "Word sense"}


def layers_lines(model_id: str | None) -> list[str]:
    if model_id is None:
        return ["No ELMo is offered on this server: add one on the **Models** page."]
    model = get_model(model_id)
    lines = []
    for task in probes.TASKS:
        r = probes.latest_cached_result(model, task)
        if r is None:
            lines.append(f"{TASK_NAMES[task]}: no probe has been run on **{md(label(model_id))}** yet (none is "
                         "stored with it); the ELMo layers page runs one for you (a few minutes).")
            continue
        top = max(range(len(r.mix_weights)), key=lambda j: r.mix_weights[j])
        weights = " / ".join(f"{w:.2f}" for w in r.mix_weights)
        alone = " / ".join(f"{a:.0%}" for a in r.layer_accuracies)
        lines.append(f"{TASK_NAMES[task]}: weights {weights} over {md(' / '.join(r.layer_names))}, the most on "
                     f"**{md(r.layer_names[top])}**; one layer alone reads {alone} of the test items right")
    return lines


NO_FILLER = ["No model here fills in blanks: add a BERT with its masked-LM head on the **Models** page."]


def fill_lines(model_ids: Sequence[str]) -> list[str]:
    return [_guesses_line(m) for m in model_ids] or NO_FILLER


def _guesses_line(model_id: str) -> str:
    model = get_model(model_id)
    top = fill_in.fill_mask(model, getattr(model, "tokenizer", None), BLANK, top_k=5, whole_words=True)[0]
    read = what_it_read(model.card or "")  # what its guesses come from, said beside them
    return (f"**{md(label(model_id))}**: " + ", ".join(f"{_shown(g['token'])} {g['prob']:.0%}" for g in top)
            + (f" (it read {md(read)})" if read else ""))


def lens_lines(model_ids: Sequence[str]) -> list[str]:
    return [_lens_line(m) for m in model_ids] or NO_FILLER


def _lens_line(model_id: str) -> str:
    model = get_model(model_id)
    g = fill_in.guesses_by_layer(model, getattr(model, "tokenizer", None), BLANK, top_k=1)
    ranks = " → ".join(f"{r:,}" for r in g.answer_ranks)
    first = next(j for j in range(len(g.answer_ranks)) if all(r == 1 for r in g.answer_ranks[j:]))
    return (f"**{md(label(model_id))}**: its answer {_shown(g.answer)} ranks {ranks} from {md(g.layer_names[0])} to "
            f"{md(g.layer_names[-1])}; first from **{md(g.layer_names[first])}** on")


@dataclass(frozen=True)
class Heads:
    """The heads of one model on :data:`HEADS_SENTENCE`, by Clark et al.'s measures."""

    n_heads: int
    prev: tuple[int, int, float]  # layer, head (from 1) and share of the most previous-token head
    next: tuple[int, int, float]
    special: int  # heads with more than half of each token's attention on [CLS] or [SEP], on average


def heads(model_id: str) -> Heads:
    """Once per server: the step's link needs the heads on every run of the page, its answer once more."""
    return shared().get(("lesson heads", model_id), lambda: _heads(get_model(model_id)))


def _heads(model) -> Heads:
    maps = att.merge_word_pieces(att.compute_attention(model, None, HEADS_SENTENCE))
    table = att.head_summaries(maps)
    best = {by: att.rank_heads(table, by).iloc[0] for by in ("to_prev", "to_next")}
    special = (table["to_cls"].fillna(0) + table["to_sep"].fillna(0)) > 0.5
    return Heads(len(table), *[(int(r["layer"]), int(r["head"]), float(r[by])) for by, r in best.items()],
                 special=int(special.sum()))


def heads_lines(model_id: str | None) -> list[str]:
    if model_id is None:
        return ["No BERT is offered on this server: add one on the **Models** page."]
    h = heads(model_id)
    name = f"**{md(label(model_id))}**"
    return [
        f"{name}, {h.n_heads} heads. Most on the previous word: layer {h.prev[0]}, head {h.prev[1]} (on average "
        f"{h.prev[2]:.0%} of a word's attention goes to the word before it)",
        f"Most on the next word: layer {h.next[0]}, head {h.next[1]} ({h.next[2]:.0%})",
        f"{h.special} of the {h.n_heads} heads put more than half of their attention on [CLS] or [SEP], the tokens "
        "that mark the sentence's edges",
    ]


def both_ways(c: Cast) -> list[str]:
    """Step 8's models: the GPT first, then the first two that read both ways (the lesson plan names the same)."""
    return ([c.gpt] if c.gpt else []) + list(c.berts[:2])


NO_GPT = ("No model here reads only left to right: no GPT ships beside this app (`assets/successors`) and none was "
          "added on the **Models** page. The page behind the link shows the both-ways side.")


def directions_lines(c: Cast) -> list[str]:
    lines = [] if c.gpt else [NO_GPT]
    for model_id in both_ways(c):
        reads = " (left to right)" if model_id == c.gpt else " (both ways)"
        lines.append(_same_word_line(model_id, PAIR_A, PAIR_B, reads))
    return lines


# -- what each step draws: the same answers as small charts (data here; ``figures.py`` draws them) ---------------


def same_word_chart(model_ids: Sequence[str]) -> dict:
    """Step 1: the word's two vectors' cosine per layer, per model."""
    return {"kind": "same_word", "results": {label(m): asdict(ws.same_word(get_model(m), SENTENCE_A, SENTENCE_B, WORD))
                                             for m in model_ids}}


def clouds_chart(model_ids: Sequence[str]) -> dict:
    """Step 3: per layer, the share of occurrences whose nearest other occurrence has their sense."""
    found = vectors.find_occurrences(preset_sentences(WORD), WORD)
    rows, majority = [], None
    for model_id in model_ids:
        table = ws.measure_word(get_model(model_id), found).table
        sep = ws.sense_separation(table)
        majority = sep.majority if sep is not None else majority
        rows += [{"model": label(model_id), "layer": j, "layer_name": name, "knn1_accuracy": acc}
                 for j, (name, acc) in enumerate(zip(table["layer"], table["knn1_accuracy"]))]
    return {"kind": "clouds", "rows": rows, "majority": majority}


def layers_chart(model_id: str | None) -> dict:
    """Step 4: the weights each stored probe gave ELMo's layers, and what each layer alone reads."""
    probed = []
    for task in probes.TASKS if model_id is not None else ():
        r = probes.latest_cached_result(get_model(model_id), task)
        if r is not None:
            probed.append({"task": TASK_NAMES[task], "layer_names": list(r.layer_names),
                           "weights": list(r.mix_weights), "gamma": r.gamma, "alone": list(r.layer_accuracies)})
    return {"kind": "layers", "probes": probed}


def fill_chart(model_ids: Sequence[str]) -> dict:
    """Step 5: each model's five guesses for the blank and their probabilities."""
    guesses = {}
    for model_id in model_ids:
        model = get_model(model_id)
        top = fill_in.fill_mask(model, getattr(model, "tokenizer", None), BLANK, top_k=5, whole_words=True)[0]
        guesses[label(model_id)] = [(g["token"], float(g["prob"])) for g in top]
    return {"kind": "guesses", "guesses": guesses}


def lens_chart(model_ids: Sequence[str]) -> dict:
    """Step 6: the final answer's rank in each layer."""
    ranks = {}
    for model_id in model_ids:
        model = get_model(model_id)
        g = fill_in.guesses_by_layer(model, getattr(model, "tokenizer", None), BLANK, top_k=1)
        ranks[label(model_id)] = {"answer": g.answer, "layer_names": list(g.layer_names),
                                  "ranks": [int(r) for r in g.answer_ranks]}
    return {"kind": "ranks", "ranks": ranks}


def directions_chart(c: Cast) -> dict:
    """Step 8: the same as step 1's chart for the bank pair whose words differ only after the word."""
    drawn = both_ways(c)[::-1]  # the GPT's line last, on top: where a BERT's is also at 1 it hides the GPT's
    results = {label(m): asdict(ws.same_word(get_model(m), PAIR_A, PAIR_B, WORD)) for m in drawn}
    return {"kind": "same_word", "results": results,
            "title": "how alike the two vectors of “bank” are, reading left to right or both ways"}


CHARTS: dict[int, Callable[[Cast], dict]] = {
    1: lambda c: same_word_chart(c.compare), 3: lambda c: clouds_chart(c.compare), 4: lambda c: layers_chart(c.elmo),
    5: lambda c: fill_chart(fillers(c)), 6: lambda c: lens_chart(fillers(c)[:1]), 8: directions_chart,
}


def chart(k: int, c: Cast) -> dict | None:
    """Step ``k``'s answer as chart data (None: a step answered in words), cached as its answer is."""
    if k not in CHARTS:
        return None
    step = STEPS[k - 1]
    return (shared().get(("lesson chart", k, c), lambda: CHARTS[k](c)) if step.once_per_server else CHARTS[k](c))


# -- the steps --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    title: str
    ask: str  # the question for the class (Markdown)
    point: str  # what the answer shows (Markdown)
    page: str  # the page that shows it in full, by its URL path (word_senses)
    page_name: str
    params: Callable[[Cast], dict[str, str | list[str]]]  # that page's URL state for this step
    reveal: Callable[[Cast], list[str]]  # Markdown lines, computed with the models here
    once_per_server: bool = True  # False: read afresh every time (cheap, and it can change while the server runs)


def _try(c: Cast, senses: bool = False) -> dict[str, str | list[str]]:
    params = {"try": "1", "try_a": SENTENCE_A, "try_b": SENTENCE_B, "try_word": WORD, "try_models": list(c.compare)}
    return params | ({"try_senses": "1"} if senses else {})


def _fill(models: list[str], lens: bool = False) -> dict[str, str | list[str]]:
    params = {"text": BLANK, "fill_mode": "masks", "fill_models": models}
    return params | ({"lens": "1"} if lens else {})


def _heads_params(c: Cast) -> dict[str, str | list[str]]:
    if c.bert is None:
        return {}
    h = heads(c.bert)
    return {"att_model": c.bert, "sentence": HEADS_SENTENCE, "att_layer": str(h.prev[0]),
            "att_head": str(h.prev[1]), "rank_by": "to_prev", "view": "head", "qk": "1"}


def _directions(c: Cast) -> dict[str, str | list[str]]:
    return {"learn_part": "directions", "learn_a": PAIR_A, "learn_b": PAIR_B, "learn_word": WORD}


STEPS = [
    Step("One word, two sentences",
         f"A static word vector gives {_shown(WORD)} one vector wherever it appears. Take “{SENTENCE_A}” and "
         f"“{SENTENCE_B}” Will a contextual model give {_shown(WORD)} the same vector in both? In which layer "
         "will its two vectors be least alike?",
         "The cosine of the two vectors, layer by layer (1: the same vector). The static vectors give 1 by "
         "construction; ELMo's character layer and BERT's input embeddings see the word alone and start near 1; "
         "every contextual layer mixes in the sentence and moves the two apart. A layer where any two words are "
         "close says less with a high cosine: that is the second number.",
         "overview", "Overview", _try, lambda c: same_word_lines(c.compare)),
    Step("Which dictionary sense?",
         f"Each WordNet sense of {_shown(WORD)} gets the average of its vectors over SemCor, sentences that people "
         "tagged by hand. Which sense will each model read in sentence A, and which in B? Can the static vectors "
         "tell them apart?",
         "Each model reads the sense whose average is nearest, in the layer that reads SemCor best: the ELMo "
         "paper's word-sense disambiguation. The static vectors read the same sense twice, the one the spelling "
         "has most often; how far to trust each model is the share of SemCor it reads right.",
         "overview", "Overview", lambda c: _try(c, senses=True), lambda c: dictionary_lines(c.compare)),
    Step("Thirty-two sentences, two clouds",
         f"Sixteen sentences with {_shown(WORD)} by a river, sixteen about money. Put every occurrence on a map. "
         "Whose map will show two clouds, and in which layer?",
         "For each occurrence, the sense of its nearest other occurrence (one-nearest-neighbour): the share that "
         "match, per layer. Half is a coin toss for two senses this even; the page draws the maps.",
         "word_senses", "Word senses",
         lambda c: {"source": "preset", "preset": WORD, "models": list(c.compare)}, lambda c: clouds_lines(c.compare)),
    Step("Layers carry different things",
         "ELMo hands a task a weighted mix of its layers and learns the weights. For part of speech (is it a noun "
         "or a verb?) and for word sense, which layer will the task weigh most?",
         "Peters et al. found part of speech read best from the first LSTM layer and word sense from the top one. "
         "A small probe trained on SemCor learned these weights; the line under each is what one layer alone "
         "reads.",
         "elmo_layers", "ELMo layers",
         lambda c: {"probe_model": c.elmo} if c.elmo else {}, lambda c: layers_lines(c.elmo),
         once_per_server=False),  # the stored probe results: the operator's `ctxmodels probe` shows here at once
    Step("Fill in the blank",
         f"“{BLANK}” What will each model put in the blank? What would a model that has read only "
         "nineteenth-century novels say?",
         "A masked language model was trained on exactly this: hide a word, guess it from both sides. Its guesses "
         "show the text it learned from (each model's card on the Models page says what it read).",
         "fill_in", "Fill in the blank",
         lambda c: _fill(fillers(c)), lambda c: fill_lines(fillers(c))),
    Step("Where the answer takes shape",
         "Read the same guessing head from every layer, not only the last. From which layer on is the model's "
         "answer already its first guess?",
         "Only the last layer was trained to be read this way, so an earlier layer's guesses say what it already "
         "holds in the head's terms (exBERT's guesses per layer, the “logit lens”): the answer climbs the ranks "
         "as the layers add context.",
         "fill_in", "Fill in the blank",
         lambda c: _fill(fillers(c)[:1], lens=True), lambda c: lens_lines(fillers(c)[:1])),
    Step("What attention heads do",
         "Each attention head spreads every word's attention over the sentence. Do heads look where a linguist "
         "would? Guess the simplest job a head can have.",
         "Clark et al. (2019) found heads that look at the previous or the next word, and many that rest on [CLS] "
         "or [SEP] when they have nothing to do. The page opens on the most previous-word head (under the "
         "overview of every head), with how its queries and keys give its weights.",
         "attention", "Attention", _heads_params, lambda c: heads_lines(c.bert)),
    Step("Left to right or both ways",
         f"A GPT reads a sentence left to right: at each word it has seen only the words before it. Take “{PAIR_A}” "
         f"and “{PAIR_B}” The words before {_shown(WORD)} are the same; only the words after it say which bank it "
         f"is. Can the GPT give {_shown(WORD)} two different vectors here? Can BERT, which reads the whole sentence?",
         "The cosine of the word's two vectors, layer by layer, as in step 1 (1: the same vector). At "
         f"{_shown(WORD)} the GPT has read “She walked down to the”, the same words in both sentences, so it "
         "computes the same vector in every layer: the words after it cannot reach it. BERT's contextual layers read "
         "the whole sentence and move the two apart. That is what reading both ways buys: each word's vector knows "
         "its whole sentence. A GPT's later words have read the earlier ones, so to ask a GPT what a word means, or "
         "what a sentence says, people read its vector at a later word (the word after, or the end of the "
         "sentence), not at the word itself.",
         "how_they_learn", "How they learn", _directions, directions_lines),
]


# -- the lesson plan a teacher takes away ------------------------------------------------------------------------


def link(step: Step, c: Cast, base: str = "") -> str:
    """The step's page in its state, as an address: ``base`` is the app's own (``http://host:8501``), "" for a
    path only."""
    query = urlencode(step.params(c), doseq=True)
    return f"{base.rstrip('/')}/{step.page}" + (f"?{query}" if query else "")


def plan(c: Cast, answers: Callable[[int], list[str]], base: str = "", when: str = "") -> str:
    """The whole lesson as one Markdown document: each step's question, what the models here answered (``answers(n)``
    for step n), what that shows and the link that opens it."""
    out = [f"# {TITLE}: contextual word vectors", "",
           f"Answers computed by the models of this server{f' on {when}' if when else ''}: "
           + ", ".join(dict.fromkeys([*c.compare, *([c.elmo] if c.elmo else []), *c.berts[:2], *both_ways(c)]))
           + ".", "",
           f"In class: open <{base.rstrip('/')}/lesson?present=1> on the projector. Page Down, or a presenter's "
           "clicker, shows a step's answer and then the next question; Page Up goes back a step.", ""]
    for n, step in enumerate(STEPS, 1):
        out += [f"## Step {n}: {step.title}", "", f"**Ask the class.** {step.ask}", "",
                "**What the models here answer.**", ""]
        try:
            lines = answers(n)
        except Exception as e:  # noqa: BLE001 - one step that cannot be answered here leaves the rest of the plan
            lines = [f"Not computed on this server ({type(e).__name__}: {e}); the page behind the link says why."]
        out += [f"- {line}" for line in lines]
        out += ["", step.point, "", f"Open it on the {step.page_name} page: <{link(step, c, base)}>", ""]
    return "\n".join(out)


def answer(k: int, c: Cast) -> list[str]:
    """Step ``k``'s answer: once per server for everyone, unless the step reads something that can change."""
    step = STEPS[k - 1]
    return shared().get(("lesson", k, c), lambda: step.reveal(c)) if step.once_per_server else step.reveal(c)
