"""Where the Word senses page takes its sentences from: a preset word, the visitor's own sentences, SemCor (every
sense-tagged occurrence of a lemma, named by its WordNet gloss) or a plain-text corpus (every occurrence of any
word, through a full-text index).

:func:`source_inputs` draws the widgets of the chosen source and returns a :class:`Spec` (hashable: the page's
caches and background jobs are keyed by it); :func:`find` turns a spec into the occurrences. Corpus and SemCor
results are shared by every visitor (``app/kit/shared.py``): a class asking for "bank" at once runs one lookup.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from app.kit.inputs import MAX_SENTENCES_CHARS, MAX_WORD_CHARS, check_word, md, own_sentences
from app.kit.presets import preset_sentences, preset_words
from app.kit.settings import settings
from app.kit.shared import shared
from app.kit.url_state import to_url, url_state
from ctxmodels.analysis import sources, vectors
from ctxmodels.paths import data_dir

NAMES = {"preset": "a preset word", "own": "my own sentences", "semcor": "SemCor (sense-tagged)",
         "corpus": "a corpus"}
LIMIT = dict(min_value=100, max_value=sources.MAX_LIMIT)  # occurrences drawn from a corpus or SemCor
SAMPLE = dict(min_value=0, max_value=10_000)
FOLD = dict(min_value=1, max_value=50)
UPLOAD = "my upload"


@dataclass(frozen=True)
class Spec:
    """What to look for, and where. ``path`` and ``stamp`` (size, modification time) name a corpus file."""

    kind: str
    word: str = ""
    inflect: bool = True
    lines: tuple[str, ...] = ()
    pos: str | None = None
    fold: int = 3
    limit: int = 1000
    sample: int = 0
    corpus: str = ""
    path: str = ""
    stamp: tuple = ()

    @property
    def key(self) -> str:
        """A short stable name of the occurrences, for caches and links between reruns."""
        return hashlib.sha256(repr(self).encode("utf-8")).hexdigest()[:20]


@dataclass
class Chosen:
    """The occurrences a spec found, with what the page says about them."""

    spec: Spec
    found: vectors.OccurrenceSearch
    target: str
    caption: str  # Markdown, safe: what was found and how it was sampled
    senses: dict[str, sources.SenseInfo] = field(default_factory=dict)  # label -> gloss (SemCor)

    @property
    def key(self) -> str:
        return self.spec.key

    @property
    def documents(self) -> list[str] | None:
        """The document of each occurrence (corpus, SemCor: one sentence per occurrence), else None."""
        return self.found.documents


# -- what there is ------------------------------------------------------------------------------------------


def corpora() -> dict[str, Path]:
    """Corpora by display name: the training novels when the shared data is here, then the operator's files."""
    found: dict[str, Path] = {}
    novels = data_dir() / "corpus" / "eltec-eng.txt"
    if novels.is_file():
        found["novels (ELTeC-eng, the training text)"] = novels
    for p in settings().corpora:
        path = Path(p)
        name = path.name
        while name in found:
            name += "'"
        found[name] = path
    return found


def available() -> list[str]:
    kinds = ["preset", "own", "semcor"]
    if corpora() or settings().allow_uploads:
        kinds.append("corpus")
    return kinds


def semcor_choices() -> dict[str, sources.SemcorLemma]:
    """``lemma.pos`` -> lemma, for the picker: lemmas with at least two senses and ten tagged occurrences (SemCor
    is read once per process, and again only when its files change)."""
    with st.spinner("Reading SemCor …"):
        return {f"{x.lemma}.{x.pos}": x for x in sources.semcor_lemmas(min_occurrences=10, min_senses=2)}


POS_NAMES = sources.POS_NAMES


def _lemma_name(choice: str, choices: dict[str, sources.SemcorLemma]) -> str:
    x = choices.get(choice)
    if x is None:
        return choice
    return f"{x.lemma} ({POS_NAMES.get(x.pos or '', x.pos)}) · {x.n_occurrences} occurrences, {x.n_senses} senses"


# -- widgets --------------------------------------------------------------------------------------------------


def register_state(presets: list[str]) -> None:
    """The URL parameters of every source, read once per session."""
    url_state("source", "preset", options=available())
    url_state("preset", "bank" if "bank" in presets else next(iter(presets), None), options=presets)
    url_state("word", "", max_chars=MAX_WORD_CHARS)
    url_state("sentences", "", max_chars=MAX_SENTENCES_CHARS)
    url_state("inflect", True, kind=bool)
    url_state("fold", 3, kind=int, **FOLD)
    url_state("limit", 1000, kind=int, **LIMIT)
    url_state("sample", 0, kind=int, **SAMPLE)
    url_state("corpus_word", "bank", max_chars=MAX_WORD_CHARS)


def source_inputs() -> Spec | None:
    """Draw the source's widgets; the spec they describe (None: nothing to look for yet, and the page said why)."""
    presets = preset_words()
    register_state(presets)
    source = st.radio("Sentences", available(), key="source",
                      persist_state="session", horizontal=True, format_func=NAMES.get)
    to_url("source")
    if source == "preset":
        preset = st.selectbox("Preset word", presets, key="preset", persist_state="session")
        inflect = st.checkbox("Also find its inflections (bank → banks, run → ran, running)", key="inflect",
                              persist_state="session")
        to_url("preset", "inflect")
        return Spec("preset", word=preset or "", inflect=inflect)
    if source == "own":
        st.text_area("Sentences, one per line; add `| label` to give a sense label", key="sentences",
                     persist_state="session", height=160,
                     placeholder="We sat on the bank of the river. | river\nThe bank lent her the money. | money")
        word = st.text_input("Target word", key="word", persist_state="session", placeholder="bank")
        inflect = st.checkbox("Also find its inflections (bank → banks, run → ran, running)", key="inflect",
                              persist_state="session")
        to_url("sentences", "word", "inflect")
        if not (st.session_state.sentences or "").strip() and not word.strip():  # nothing typed yet: no error
            st.info("Type a few sentences above, one a line, and the word to look for in them.")
            return None
        return Spec("own", word=word, inflect=inflect, lines=(st.session_state.sentences or "",))
    if source == "semcor":
        return _semcor_inputs()
    return _corpus_inputs()


def _semcor_inputs() -> Spec | None:
    choices = semcor_choices()
    options = list(choices)
    url_state("lemma", "bank.n" if "bank.n" in choices else (options[0] if options else None), options=options)
    # prefix: typing "run" lists run (noun) and run (verb) first; the fuzzy default listed 13 other lemmas (any with
    # an r, a u and an n in that order) above them
    lemma = st.selectbox("Lemma (type to search)", options, key="lemma", persist_state="session",
                         format_func=lambda c: _lemma_name(c, choices), filter_mode="prefix",
                         help="Every occurrence of the lemma that SemCor's annotators tagged with a WordNet sense.")
    fold = st.number_input("Fold senses with fewer occurrences than this into “other”", **FOLD, step=1, key="fold",
                           persist_state="session")
    limit = st.slider("At most this many occurrences", **LIMIT, step=100, key="limit", persist_state="session")
    to_url("lemma", "fold", "limit")
    if lemma is None:
        st.info("No SemCor lemmas to choose from.")
        return None
    word, _, pos = lemma.rpartition(".")
    return Spec("semcor", word=word, pos=pos or None, fold=int(fold), limit=int(limit))


def _corpus_inputs() -> Spec | None:
    found = corpora()
    names = list(found) + ([UPLOAD] if settings().allow_uploads else [])
    url_state("corpus", names[0] if names else None, options=[n for n in names if n != UPLOAD])
    name = st.selectbox("Corpus", names, key="corpus", persist_state="session")
    word = st.text_input("Word", key="corpus_word", persist_state="session", placeholder="bank")
    inflect = st.checkbox("Also find its inflections (bank → banks, run → ran, running)", key="inflect",
                          persist_state="session")
    c1, c2 = st.columns([3, 1])
    limit = c1.slider("At most this many occurrences", **LIMIT, step=100, key="limit", persist_state="session",
                      help="Drawn evenly across the corpus's documents, so that one book cannot fill the view.")
    sample = c2.number_input("Sample", **SAMPLE, step=1, key="sample", persist_state="session",
                             help="Which sample: the same number draws the same occurrences.")
    to_url("corpus_word", "inflect", "limit", "sample")
    if name != UPLOAD:
        to_url("corpus")
    path = _upload() if name == UPLOAD else found.get(name)
    if path is None:
        return None
    try:
        info = path.stat()
    except OSError as e:
        st.error(f"The corpus {md(name)} cannot be read: {md(e.strerror or e)}.")
        return None
    return Spec("corpus", word=word, inflect=inflect, limit=int(limit), sample=int(sample), corpus=name,
                path=str(path), stamp=(info.st_size, info.st_mtime_ns))


def _upload() -> Path | None:
    limit_mb = settings().upload_mb
    file = st.file_uploader(f"A plain-text file (UTF-8, one paragraph a line, a blank line between documents; at "
                            f"most {limit_mb:g} MB)", type=["txt"], key="corpus_upload")
    if file is None:
        st.info("Upload a text file to look for words in it.")
        return None
    data = file.getvalue()
    if len(data) > limit_mb * 2**20:
        st.error(f"The file has {len(data) / 2**20:.1f} MB; this server takes at most {limit_mb:g} MB.")
        return None
    digest = hashlib.sha256(data).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / "ctxmodels-uploads" / f"{digest}.txt"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        # a name of its own: two visitors uploading the same file at once must not write into one another's part
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".part", delete=False) as tmp:
            tmp.write(data)
        os.replace(tmp.name, path)
    return path


# -- finding the occurrences ----------------------------------------------------------------------------------


def find(spec: Spec) -> Chosen:
    """The occurrences of ``spec`` (ValueError with what to do when there are none or the input is wrong)."""
    if spec.kind == "preset":
        lines = preset_sentences(spec.word)
        return _in_sentences(spec, lines, spec.word)
    if spec.kind == "own":
        lines = own_sentences(spec.lines[0])
        return _in_sentences(spec, lines, check_word(spec.word))
    if spec.kind == "semcor":
        return shared().get(("semcor", spec), lambda: _semcor(spec))
    word = check_word(spec.word)
    index = _open_index(spec)
    return shared().get(("corpus", spec), lambda: _corpus(spec, index, word))


def _in_sentences(spec: Spec, lines: list[str], word: str) -> Chosen:
    found = vectors.find_occurrences(lines, word, inflections=spec.inflect)
    n_labels = len({o.label for o in found.occurrences if o.label})
    caption = (f"{len(found.occurrences)} occurrences of **{md(word)}** in {len(lines) - len(found.missing)} "
               f"sentences; {n_labels} sense label(s).")
    return Chosen(spec, found, word, caption)


def _semcor(spec: Spec) -> Chosen:
    found, infos = sources.semcor_search(spec.word, spec.pos, min_sense_count=spec.fold, limit=spec.limit,
                                         seed=spec.sample)
    n = len(found.occurrences)
    total = found.total or n
    sampled = f" (a sample of {n:,} of {total:,}, spread evenly across its documents)" if n < total else ""
    pos = POS_NAMES.get(spec.pos or "", spec.pos or "any part of speech")
    caption = (f"{n:,} sense-tagged occurrences of **{md(spec.word)}** ({md(pos)}) in SemCor{sampled}; "
               f"{len(infos)} sense(s), named by their WordNet 3.0 glosses (senses with fewer than {spec.fold} "
               "occurrences are folded into “other”).")
    return Chosen(spec, found, spec.word, caption, senses={i.label: i for i in infos})


def _open_index(spec: Spec):
    bar = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        share = done / total if total else 1.0
        text = f"Indexing {md(spec.corpus)}: {share:.0%} (once per corpus; every later search uses the index)"
        if bar is None:
            bar = st.progress(share, text=text)
        else:
            bar.progress(min(share, 1.0), text=text)

    index = shared().get(("index", spec.path, spec.stamp), lambda: sources.open_corpus(spec.path, progress=progress))
    if bar is not None:
        bar.empty()
    return index


def _corpus(spec: Spec, index, word: str) -> Chosen:
    found, lookup = sources.corpus_search(index, word, inflections=spec.inflect, limit=spec.limit, seed=spec.sample)
    n = len(found.occurrences)
    sampled = (f"; showing {n:,}, drawn evenly across the documents (sample {spec.sample})"
               if n < lookup.total else "")
    documents = f"{lookup.n_documents:,} document" + ("" if lookup.n_documents == 1 else "s")
    caption = (f"**{md(word)}**{' and its inflections' if spec.inflect else ''} occurs {lookup.total:,} times in "
               f"{lookup.n_sentences:,} sentences of {documents} of {md(spec.corpus)}{sampled}. "
               "A corpus has no sense labels: find its senses in the clusters of each layer, or colour the points by "
               "the dictionary sense each layer reads.")
    return Chosen(spec, found, word, caption)
