"""The SemCor tasks of every word: part of speech (``pos``) and proper-name types as BIO tags (``ner``); and the
readers of SemCor and the WordNet glosses that every SemCor task opens."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from ..semcor import SemCor, SemcorError, coarse_pos, load_semcor, table_file
from ..wordnet import Sense, WordnetError, default_senses_path, load_senses
from .data import Example, TaskData, TaskError
from .splits import assemble

SEMCOR_SOURCE = ("SemCor 3.0, sense-tagged Brown Corpus text (Princeton University; WordNet 3.0 licence), "
                 "converted from rubenIzquierdo/wsd_corpora")
WORDNET_SOURCE = "WordNet 3.0 glosses (Princeton University; WordNet 3.0 licence)"

POS_LABELS = ("NOUN", "PROPN", "VERB", "ADJ", "ADV")
ENTITY_TYPES = {"person": "PER", "location": "LOC", "group": "ORG"}   # SemCor's NNP "lemmas"
# WordNet lexicographer files of nouns that name people, places and groups: a capitalised name WordNet knows
# (Atlanta, Congress) is tagged NN in SemCor, with its own sense, instead of NNP.
_NAME_LEXFILES = {"18": "PER", "15": "LOC", "14": "ORG"}
# ...but a capitalised word for a member of a people, faith or party (Americans, Catholics, Republicans) or an
# office (the President) is not a person's name: CoNLL would not tag it PER either. WordNet's gloss says which.
_NOT_A_NAME = re.compile(r"^the person who holds|\b(natives?|inhabitants?|residents?|members?|peoples?|adherents?|"
                         r"nationality|descent|person with|person belonging|offensive)\b", re.IGNORECASE)
# brownv tags only the verbs: its untagged names and nouns would teach "O" and hide the other classes.
FULLY_TAGGED = ("brown1/", "brown2/")


def open_semcor(semcor_dir: str | Path | None) -> SemCor:
    try:
        return load_semcor(semcor_dir)
    except SemcorError as e:
        raise TaskError(f"cannot read SemCor for the task: {e}") from e


def open_senses(semcor_dir: str | Path | None, senses_path: str | Path | None) -> Mapping[str, Sense]:
    """The WordNet glosses: ``senses_path``; else beside a given SemCor folder (``DIR/senses.tsv``, as shipped,
    or ``DIR/../wordnet/senses.tsv``, as in the shared data); else the default."""
    if senses_path is None and semcor_dir is not None:
        for candidate in (table_file(semcor_dir, "senses"), table_file(Path(semcor_dir).parent / "wordnet", "senses")):
            if candidate.is_file():
                senses_path = candidate
                break
    try:
        return load_senses(senses_path if senses_path is not None else default_senses_path())
    except WordnetError as e:
        raise TaskError(f"cannot read the WordNet glosses for the task: {e}") from e


def _entity_type(word: str, tag, senses: Mapping[str, Sense]) -> str | None:
    if tag.pos.startswith("NNP"):
        return ENTITY_TYPES.get(tag.lemma.lower(), "MISC")
    if not tag.pos.startswith("NN") or not word[:1].isupper():
        return None
    sense = senses.get(tag.sense_key)
    if sense is None:
        return None
    lexfile = tag.sense_key.split("%", 1)[1].split(":")[1] if ":" in tag.sense_key else ""
    kind = _NAME_LEXFILES.get(lexfile)
    # a proper name: WordNet writes this lemma of the synset with a capital (Atlanta, not government)
    lemma = tag.lemma.lower()
    if not kind or not any(w.lower() == lemma and w[:1].isupper() for w in sense.lemmas):
        return None
    if kind == "PER" and (_NOT_A_NAME.search(sense.gloss[:80])
                          or word.lower().endswith("s") and not lemma.endswith("s")):  # Southerners: a group
        return None
    return kind


def _head_word(words: list[str], lemma: str, pos: str) -> int:
    """The word of a multi-word expression that carries its part of speech: a verb's first word (took place,
    give up), else the last (primary election, as good as)."""
    if len(words) == 1:
        return 0
    if pos == "VERB":
        stem = lemma.split("_")[0].lower()[:3]
        return next((i for i, w in enumerate(words) if w.lower().startswith(stem)), 0)
    return len(words) - 1


def _semcor_sentences(semcor: SemCor):
    for s in semcor.sentences:
        if s.uid.startswith(FULLY_TAGGED) and s.tags:
            yield s


def pos_task(semcor: SemCor) -> TaskData:
    examples, groups = [], []
    for s in _semcor_sentences(semcor):
        labels = [""] * len(s.words)
        for i, tag in s.tags.items():
            start, end = s.spans[i]
            pos = coarse_pos(tag.pos)
            if pos == "PROPN":  # every word of a name is a proper noun
                labels[start:end] = [pos] * (end - start)
            else:  # "took place": the verb is "took"; the other words of the expression are left unlabelled
                labels[start + _head_word(s.words[start:end], tag.lemma, pos)] = pos
        examples.append(Example(tuple(s.words), tuple(labels), s.document))
        groups.append(s.document)
    if not examples:
        raise TaskError("SemCor has no tagged sentences in brown1/ or brown2/ (the fully tagged part); the pos "
                        "task needs them")
    description = (
        "Part-of-speech tagging: for every content word of a sentence, predict its coarse word class (NOUN, "
        "PROPN for proper names, VERB, ADJ, ADV). The tags are SemCor's (brown1 and brown2, where every content "
        "word is tagged); function words and punctuation carry no tag there and are not scored, and in a "
        "multi-word expression only its head word is ('took' in 'took place', 'election' in 'primary "
        "election'). SemCor's Penn tags are nearly coarse already, so the coarse names lose little and read "
        "better. A tagger needs the context: 'run', 'light' and 'fair' change class with it. Split by Brown "
        "file (80/10/10 of the sentences), so the test files are texts the model never saw in training.")
    present = set().union(*(set(ex.label) for ex in examples)) - {""}
    labels = [p for p in POS_LABELS if p in present] + sorted(present - set(POS_LABELS))
    return assemble("pos", "token", labels, examples, groups, description, SEMCOR_SOURCE, "document")


def ner_task(semcor: SemCor, senses: Mapping[str, Sense]) -> TaskData:
    examples, groups = [], []
    found: set[str] = set()
    for s in _semcor_sentences(semcor):
        labels = ["O"] * len(s.words)
        for i, tag in s.tags.items():
            kind = _entity_type(s.tokens[i], tag, senses)
            if kind is None:
                continue
            found.add(kind)
            start, end = s.spans[i]
            labels[start:end] = [f"B-{kind}"] + [f"I-{kind}"] * (end - start - 1)
        examples.append(Example(tuple(s.words), tuple(labels), s.document))
        groups.append(s.document)
    if not found:
        raise TaskError("SemCor has no proper names (NNP tags) in brown1/ or brown2/; the ner task needs them")
    kinds = ["PER", "LOC", "ORG"] + (["MISC"] if "MISC" in found else [])   # the three always: stable class ids
    labels = ["O"] + [f"{p}-{k}" for k in kinds for p in ("B", "I")]
    description = (
        "Proper-name tagging (a small NER): label every word of a sentence with B-TYPE (first word of a name), "
        "I-TYPE (a later word of the same name) or O (not part of a name), where TYPE is PER (a person), LOC (a "
        "place) or ORG (SemCor's 'group': organisations, institutions, teams). SemCor tags names as NNP with "
        "person / location / group as their lemma, and names WordNet knows (Atlanta, Congress) as nouns with a "
        "proper-name sense of a person, place or group, which count too. Every word gets a label: a tagger must "
        "also say where names are not, and in brown1/brown2 SemCor's annotators tagged every content word, so an "
        "untagged word is not a name. Multi-word names are one SemCor token (Fulton_County_Grand_Jury), split "
        "into words. Split by Brown file (80/10/10 of the sentences).")
    return assemble("ner", "token", labels, examples, groups, description, SEMCOR_SOURCE + "; " + WORDNET_SOURCE,
                    "document")

