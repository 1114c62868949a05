"""A task spec (``pos``, ``ner``, ``wsd:LEMMA``, ``period`` or a file) -> its :class:`TaskData`, cached per
process until the files it was built from change."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from .data import TaskData, TaskError
from .period import default_corpus, metadata_path, period_task
from .semcor_tags import ner_task, open_semcor, open_senses, pos_task
from .splits import capped
from .squad import read_squad_task
from .user_files import is_pair_file, looks_like_tsv, read_conll_task, read_pair_task, read_tsv_task
from .wsd import parse_wsd_spec, wsd_task

BUILTIN_TASKS: dict[str, str] = {
    "pos": "part of speech (NOUN, PROPN, VERB, ADJ, ADV) of each content word, from SemCor (token labelling)",
    "ner": "proper-name type (person, location, organisation) of each word as BIO tags, from SemCor "
           "(token labelling)",
    "wsd:LEMMA": "which WordNet sense one word has, for one SemCor lemma, e.g. wsd:bank or wsd:run.v "
                 "(word classification)",
    "period": "in which time slot (1840-59, 1860-79, 1880-99, 1900-20) a paragraph's novel appeared, from the "
              "ELTeC novels (sentence classification)",
}


def _stamp(path: Path) -> tuple:
    try:
        st = path.stat()
        return (st.st_mtime_ns, st.st_size)
    except OSError:
        return ()


def load_task(spec: str, *, semcor_dir: str | Path | None = None, corpus: str | Path | None = None,
              max_examples: int | None = None, seed: int = 0, senses_path: str | Path | None = None) -> TaskData:
    """The task ``spec`` names: ``pos``, ``ner``, ``wsd:LEMMA`` (``wsd:bank``; ``wsd:run.v`` for one part of
    speech: n, v, a, r), ``period``, or the path of a ``.tsv`` file (``text<TAB>label``; a first line
    ``text_a<TAB>text_b<TAB>label`` makes it a sentence-pair task), a SQuAD v1.1 ``.json`` file (extractive
    question answering) or a CoNLL-style file (``word<TAB>label``; any other suffix is read as CoNLL unless its
    first column holds whole texts).

    ``semcor_dir`` and ``senses_path``: SemCor and the WordNet glosses (default: the shared data, else the copy in
    assets/semcor); ``corpus``: the novels (default ``$CTXMODELS_DATA/corpus/eltec-eng.txt``, its metadata table
    beside it). ``max_examples`` keeps at most that many examples in each split, a sample drawn with ``seed``;
    the splits themselves never depend on ``seed``. Built tasks are cached per process; each call returns its own
    lists. Raises :class:`TaskError` with what to do."""
    if not isinstance(spec, str) or not spec.strip():
        raise TaskError(f"no task named; choose one of {', '.join(BUILTIN_TASKS)} or give a .tsv / CoNLL file")
    spec = spec.strip()
    low = spec.lower()
    if low == "pos":
        semcor = open_semcor(semcor_dir)
        task = _memo(("pos",), (semcor,), lambda: pos_task(semcor))
    elif low == "ner":
        semcor, senses = open_semcor(semcor_dir), open_senses(semcor_dir, senses_path)
        task = _memo(("ner",), (semcor, senses), lambda: ner_task(semcor, senses))
    elif low.startswith("wsd:"):
        lemma, pos = parse_wsd_spec(spec)
        semcor, senses = open_semcor(semcor_dir), open_senses(semcor_dir, senses_path)
        task = _memo(("wsd", lemma, pos), (semcor, senses), lambda: wsd_task(semcor, senses, lemma, pos))
    elif low == "period":
        path = Path(corpus) if corpus is not None else default_corpus()
        task = period_task(str(path.resolve()), (_stamp(path), _stamp(metadata_path(path))))
    else:
        path = Path(spec).expanduser()
        if not path.exists():
            raise TaskError(f"unknown task {spec!r} and no such file: choose one of "
                            + "; ".join(f"{k} ({v})" for k, v in BUILTIN_TASKS.items())
                            + "; or give the path of a text<TAB>label .tsv file, a sentence-pair .tsv file (header "
                            "text_a<TAB>text_b<TAB>label), a SQuAD v1.1 .json file or a CoNLL-style word<TAB>label "
                            "file")
        task = _read_file_cached(str(path.resolve()), _stamp(path))
    return capped(task, max_examples, seed)


# Tasks built from SemCor, by (task, the SemCor and glosses objects they were built from): load_semcor and
# load_senses hand out the same objects until their files change, so a changed file builds the task again.
_MEMO: dict[tuple, tuple[tuple, TaskData]] = {}
_MEMO_SIZE = 32


def _memo(key: tuple, sources: tuple, build) -> TaskData:
    full = key + tuple(id(x) for x in sources)
    hit = _MEMO.get(full)
    if hit is not None and all(a is b for a, b in zip(hit[0], sources, strict=True)):
        return hit[1]
    task = build()
    if len(_MEMO) >= _MEMO_SIZE:
        _MEMO.pop(next(iter(_MEMO)))
    _MEMO[full] = (sources, task)
    return task


@lru_cache(maxsize=8)
def _read_file_cached(path: str, stamp: tuple) -> TaskData:
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".json":
        return read_squad_task(p)
    conll = suffix in (".conll", ".conllu", ".bio", ".iob", ".iob2")
    if not conll and p.is_file() and is_pair_file(p):
        return read_pair_task(p)
    if suffix == ".tsv" or (not conll and p.is_file() and looks_like_tsv(p)):
        return read_tsv_task(p)
    return read_conll_task(p)
