"""The fine-tuning tasks (ctxmodels.tasks): labels, splits by document, the readers of users' files and their
messages. Tiny SemCor tables, corpora and files are written in each test; one slow test reads the real data."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from ctxmodels import tasks
from ctxmodels.semcor import shipped_semcor_dir
from ctxmodels.tasks import SPLITS, TaskData, TaskError, load_task, read_conll_task, read_tsv_task, split_groups
from ctxmodels.wordnet import shorten

RIVER, MONEY, VAULT = "bank%1:17:01::", "bank%1:14:00::", "bank%1:06:00::"
GLOSSES = {RIVER: "sloping land (especially the slope beside a body of water)",
           MONEY: "a financial institution that accepts deposits and channels the money into lending activities",
           VAULT: "a container (usually with a slot in the top) for keeping money at home"}


def write_tiny_semcor(root: Path, n_docs: int = 12) -> Path:
    """``n_docs`` Brown files in brown1 with three sentences each (names, a multi-word verb, "bank" by the river
    or the money, one rare "bank" sense in two files) and one brownv file where only verbs are tagged."""
    folder = root / "semcor"
    folder.mkdir(parents=True)
    sentences, tags = ["sent_uid\ttokens"], ["sent_uid\ttok_idx\tword\tlemma\tpos\tsense_keys\tsynsets"]

    def add(uid: str, text: str, tagged: list[tuple[int, str, str, str]]) -> None:
        tokens = text.split()
        sentences.append(f"{uid}\t{text}")
        for i, lemma, pos, key in tagged:
            tags.append(f"{uid}\t{i}\t{tokens[i]}\t{lemma}\t{pos}\t{key}\t")

    for d in range(n_docs):
        doc = f"brown1/br-a{d:02d}"
        add(f"{doc}.s1", "The Fulton_County_Grand_Jury said Friday John_Smith visited Atlanta with Americans .",
            [(1, "group", "NNP", "group%1:03:00::"), (2, "say", "VB", "say%2:32:00::"),
             (3, "friday", "NN", "friday%1:28:00::"), (4, "person", "NNP", "person%1:03:00::"),
             (5, "visit", "VB", "visit%2:38:00::"), (6, "atlanta", "NN", "atlanta%1:15:00::"),
             (8, "american", "NN", "american%1:18:00::")])
        for j in range(2):  # two "bank"s a file: each file has one main sense
            if d < 2 and j == 1:
                key, text = VAULT, "She kept her coins in a bank at home ."
                i = 6
            elif d % 2:
                key, text, i = RIVER, "We sat on the bank of the river quietly .", 4
            else:
                key, text, i = MONEY, "The meeting took_place at the bank today .", 5
            tagged = [(i, "bank", "NN", key)]
            if "took_place" in text:
                tagged.append((2, "take_place", "VB", "take_place%2:30:00::"))
            if "quietly" in text:
                tagged.append((8, "quietly", "RB", "quietly%4:02:00::"))
            add(f"{doc}.s{2 + j}", text, tagged)
        add(f"{doc}.s4", "It was a fine day .", [(3, "fine", "JJ", "fine%3:00:01::")])
    add("brownv/br-z01.s1", "Mary_Jones ran to the bank .", [(1, "run", "VB", "run%2:38:00::")])
    (folder / "sentences.tsv").write_text("\n".join(sentences) + "\n", encoding="utf-8")
    (folder / "tags.tsv").write_text("\n".join(tags) + "\n", encoding="utf-8")
    senses = ["sense_key\tsynset\tlemmas\tgloss\texamples"]
    senses += [f"{k}\teng30-0000000{i}-n\tbank\t{g}\t" for i, (k, g) in enumerate(GLOSSES.items())]
    senses += ["atlanta%1:15:00::\teng30-09076675-n\tAtlanta,capital_of_Georgia\tstate capital of Georgia\t",
               "american%1:18:00::\teng30-09738708-n\tAmerican\ta native or inhabitant of the United States\t",
               "friday%1:28:00::\teng30-15164463-n\tFriday,Fri\tthe sixth day of the week\t"]
    (folder / "senses.tsv").write_text("\n".join(senses) + "\n", encoding="utf-8")
    return folder


@pytest.fixture
def semcor_dir(tmp_path: Path) -> Path:
    return write_tiny_semcor(tmp_path)


def docs_of(task: TaskData, split: str) -> set[str]:
    return {ex.doc for ex in task.split(split)}


def assert_split_by_document(task: TaskData) -> None:
    for a, b in (("train", "dev"), ("train", "test"), ("dev", "test")):
        assert not docs_of(task, a) & docs_of(task, b), (a, b)
    for s in SPLITS:
        assert task.split(s), f"{s} is empty"
        assert set(task.documents[s]) == docs_of(task, s)


def example_with(task: TaskData, first_words: tuple[str, ...]):
    return next(ex for s in SPLITS for ex in task.split(s) if ex.words[: len(first_words)] == first_words)


# ----------------------------------------------------------------------------------------------------------
# SemCor tasks


def test_pos_labels_content_words_and_leaves_brownv_out(semcor_dir: Path):
    task = load_task("pos", semcor_dir=semcor_dir)
    assert task.kind == "token" and task.labels == ("NOUN", "PROPN", "VERB", "ADJ", "ADV")
    ex = example_with(task, ("The", "Fulton"))
    assert ex.words == ("The", "Fulton", "County", "Grand", "Jury", "said", "Friday", "John", "Smith", "visited",
                        "Atlanta", "with", "Americans", ".")
    assert ex.label == ("", "PROPN", "PROPN", "PROPN", "PROPN", "VERB", "NOUN", "PROPN", "PROPN", "VERB", "NOUN",
                        "", "NOUN", "")
    took = example_with(task, ("The", "meeting"))
    # "took place": the head word carries the verb, the rest of the expression is not scored
    assert took.words[2:4] == ("took", "place") and took.label[2:4] == ("VERB", "")
    assert not any(ex.doc.startswith("brownv") for s in SPLITS for ex in task.split(s))
    assert sum(len(task.split(s)) for s in SPLITS) == 12 * 4
    assert_split_by_document(task)
    counts = task.label_counts("train")
    assert list(counts) == list(task.labels) and counts["ADV"] > 0
    json.dumps(task.summary())


def test_ner_bio_tags_for_multiword_names_and_wordnet_names(semcor_dir: Path):
    task = load_task("ner", semcor_dir=semcor_dir)
    assert task.labels == ("O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG")
    ex = example_with(task, ("The", "Fulton"))
    assert ex.label == ("O", "B-ORG", "I-ORG", "I-ORG", "I-ORG", "O", "O", "B-PER", "I-PER", "O",
                        # Atlanta is a NN in SemCor with WordNet's proper-name sense of a place; "Americans" (a
                        # people, not a person's name) and Friday stay O
                        "B-LOC", "O", "O", "O")
    fine = example_with(task, ("It", "was"))
    assert set(fine.label) == {"O"}
    assert_split_by_document(task)
    assert task.label_counts("test")["B-ORG"] == len(task.test) / 4   # one name of each kind per file


def test_splits_are_fixed_whatever_the_seed_and_cap(semcor_dir: Path):
    first = load_task("pos", semcor_dir=semcor_dir)
    tasks.specs._MEMO.clear()
    again = load_task("pos", semcor_dir=semcor_dir, seed=5)
    assert first.documents == again.documents
    assert [ex.words for ex in first.test] == [ex.words for ex in again.test]
    small = load_task("pos", semcor_dir=semcor_dir, max_examples=3, seed=1)
    assert all(len(small.split(s)) <= 3 for s in SPLITS) and len(small.train) == 3
    assert small.labels == first.labels
    assert all(ex in first.train for ex in small.train)
    assert [ex.words for ex in load_task("pos", semcor_dir=semcor_dir, max_examples=3, seed=1).train] == \
        [ex.words for ex in small.train]
    first.train.clear()   # each call has its own lists
    assert load_task("pos", semcor_dir=semcor_dir).train
    with pytest.raises(TaskError, match="max_examples"):
        load_task("pos", semcor_dir=semcor_dir, max_examples=0)


def test_split_groups_deterministic_proportional_and_stratified():
    sizes = {f"doc{i:03d}": 1 + i % 7 for i in range(200)}
    where = split_groups(sizes, seed=3)
    assert where == split_groups(dict(reversed(list(sizes.items()))), seed=3)   # listing order does not matter
    assert where != split_groups(sizes, seed=4)
    total = sum(sizes.values())
    for split, share in zip(SPLITS, tasks.FRACTIONS, strict=True):
        got = sum(n for g, n in sizes.items() if where[g] == split) / total
        assert abs(got - share) < 0.02, (split, got)
    strata = {g: "rare" if i < 6 else "common" for i, g in enumerate(sorted(sizes))}
    stratified = split_groups(sizes, strata=strata)
    assert {stratified[g] for g in sizes if strata[g] == "rare"} == set(SPLITS)


def test_wsd_target_labels_fold_and_split(semcor_dir: Path):
    task = load_task("wsd:bank", semcor_dir=semcor_dir)
    assert task.kind == "word" and task.name == "wsd:bank"
    river, money = GLOSSES[RIVER], GLOSSES[MONEY]
    assert task.labels == (shorten(money), river, "other")   # 11 money, 11 river, the 2 vault folded
    everything = [ex for s in SPLITS for ex in task.split(s)]
    assert len(everything) == 24 and all(ex.words[ex.target] == "bank" for ex in everything)
    assert Counter(ex.label for ex in everything)["other"] == 2
    assert not any(ex.doc.startswith("brownv") for ex in everything)   # the brownv "bank" is not tagged
    assert task.split_by == "document"
    assert_split_by_document(task)
    for s in SPLITS:   # stratified by each file's main sense: both senses in every split
        assert {river, shorten(money)} <= {ex.label for ex in task.split(s)}
    assert "other" in task.description and "Brown file" in task.description
    assert load_task("wsd:Bank.n", semcor_dir=semcor_dir).labels == task.labels


def test_wsd_with_few_documents_splits_by_sentence(tmp_path: Path):
    folder = write_tiny_semcor(tmp_path, n_docs=4)
    sentences = (folder / "sentences.tsv").read_text().splitlines()
    tags = (folder / "tags.tsv").read_text().splitlines()
    for k in range(12):   # more "bank"s in the same four files, enough occurrences for a task
        uid = f"brown1/br-a{k % 4:02d}.s{10 + k}"
        key, text = (RIVER, f"The bank of river {k} flooded .") if k % 2 else (MONEY, f"The bank closed at {k} .")
        sentences.append(f"{uid}\t{text}")
        tags.append(f"{uid}\t1\tbank\tbank\tNN\t{key}\t")
    (folder / "sentences.tsv").write_text("\n".join(sentences) + "\n")
    (folder / "tags.tsv").write_text("\n".join(tags) + "\n")
    task = load_task("wsd:bank", semcor_dir=folder)
    assert task.split_by == "sentence" and "too few to split by file" in task.description
    ids = [{(ex.words, ex.target, ex.doc) for ex in task.split(s)} for s in SPLITS]
    assert all(ids) and not ids[0] & ids[1] and not ids[0] & ids[2]


def test_wsd_errors_say_what_works(semcor_dir: Path):
    with pytest.raises(TaskError, match=r"not a sense-tagged lemma.*lemmas that work: wsd:bank\.n"):
        load_task("wsd:bnak", semcor_dir=semcor_dir)
    with pytest.raises(TaskError, match=r"wsd:fine has 12 tagged occurrences and 1 sense.*wsd:bank\.n"):
        load_task("wsd:fine", semcor_dir=semcor_dir)
    with pytest.raises(TaskError, match="no tagged occurrences as a verb"):
        load_task("wsd:bank.v", semcor_dir=semcor_dir)
    with pytest.raises(TaskError, match="needs a lemma"):
        load_task("wsd: ", semcor_dir=semcor_dir)
    assert tasks.wsd_lemmas(semcor_dir=semcor_dir) == ["bank.n"]


def test_missing_semcor_and_unknown_task(tmp_path: Path):
    with pytest.raises(TaskError, match="SemCor"):
        load_task("pos", semcor_dir=tmp_path / "nowhere")
    with pytest.raises(TaskError, match=r"unknown task 'sentiment'.*pos.*ner.*wsd:LEMMA.*period"):
        load_task("sentiment")
    with pytest.raises(TaskError, match="no task named"):
        load_task("  ")


# ----------------------------------------------------------------------------------------------------------
# the period of a paragraph


YEARS = [base + k for base in (1840, 1860, 1880, 1900) for k in (5, 8, 12, 15)]


def write_novels(root: Path, paragraphs_per_novel: int = 6) -> Path:
    """Four novels per time slot, each author with one novel except "Twice", who wrote one in 1845 and one in
    1905. Each paragraph names its period's thing; short paragraphs and one very long one are mixed in."""
    thing = {1840: "coach", 1860: "railway", 1880: "telegram", 1900: "motor-car"}
    meta = ["file\tblob\ttitle\tauthor\tchars"]
    novels = []
    for i, year in enumerate(YEARS):
        author = "Twice, Ann" if i in (0, 12) else f"Author{i}, B."
        meta.append(f"level1/ENG{year}{i % 2}_Name{i}.xml\tabc\tTitle {i}\t{author} (1800-1900)\t100")
        word = thing[1840 + 20 * ((year - 1840) // 20)]
        paragraphs = ["Too short to use ."]
        paragraphs += [f"Paragraph {j} of novel {i}: " + f"the {word} came and went " * 5 + "."
                       for j in range(paragraphs_per_novel)]
        paragraphs.append("A very long paragraph . " + "It went on and on in one long sentence " * 20 + ". The end .")
        novels.append("\n".join(paragraphs))
    corpus = root / "novels.txt"
    corpus.write_text("\n\n".join(novels) + "\n", encoding="utf-8")
    (root / "novels-metadata.tsv").write_text("\n".join(meta) + "\n", encoding="utf-8")
    return corpus


def test_period_task_on_a_tiny_corpus(tmp_path: Path, monkeypatch):
    corpus = write_novels(tmp_path)
    monkeypatch.setattr(tasks.period, "PER_PERIOD", 20)   # 5 paragraphs per novel
    task = load_task("period", corpus=corpus)
    assert task.kind == "sentence" and task.labels == ("1840-1859", "1860-1879", "1880-1899", "1900-1920")
    everything = [ex for s in SPLITS for ex in task.split(s)]
    assert Counter(ex.label for ex in everything) == {p: 20 for p in task.labels}
    assert Counter(ex.doc for ex in everything) == {f"ENG{y}{i % 2}_Name{i}": 5 for i, y in enumerate(YEARS)}
    assert all(tasks.period.PARAGRAPH_MIN_WORDS <= len(ex.words) <= tasks.period.PARAGRAPH_MAX_TOKENS
               for ex in everything)
    assert not any(ex.words[0] == "Too" for ex in everything)
    ex = next(ex for ex in everything if ex.doc.startswith("ENG1865"))
    assert "railway" in ex.words and ex.label == "1860-1879"
    assert task.split_by == "author"
    assert_split_by_document(task)
    twice = {s for s in SPLITS for ex in task.split(s) if ex.doc in ("ENG18450_Name0", "ENG19050_Name12")}
    assert len(twice) == 1   # one author's novels stay in one split


def test_period_cuts_long_paragraphs_at_a_sentence():
    words = tasks.period._paragraph_words("Short one . " + "Word " * 200 + ".")
    assert words == ["Short", "one", "."]
    words = tasks.period._paragraph_words("word " * 300)
    assert len(words) == tasks.period.PARAGRAPH_MAX_TOKENS


def test_period_task_errors(tmp_path: Path):
    with pytest.raises(TaskError, match="CTXMODELS_DATA"):
        load_task("period", corpus=tmp_path / "none.txt")
    corpus = write_novels(tmp_path)
    meta = tmp_path / "novels-metadata.tsv"
    lines = meta.read_text().splitlines()
    meta.write_text("\n".join(lines[:-2]) + "\n")
    with pytest.raises(TaskError, match="more novels.*than novels-metadata.tsv lists"):
        load_task("period", corpus=corpus)
    meta.write_text(lines[0] + "\nlevel1/ENG17990_Old.xml\tx\tOld\tSomeone\t1\n")
    with pytest.raises(TaskError, match="year 1799 is outside"):
        load_task("period", corpus=corpus)
    meta.unlink()
    with pytest.raises(TaskError, match="metadata table is missing"):
        load_task("period", corpus=corpus)


# ----------------------------------------------------------------------------------------------------------
# users' files


def write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_tsv_task_split_by_example_or_by_document(tmp_path: Path):
    lines = ["text\tlabel"] + [f"a {'good' if i % 2 else 'bad'} film number {i}\t{'pos' if i % 2 else 'neg'}"
                               for i in range(40)]
    task = load_task(str(write(tmp_path / "reviews.tsv", "\n".join(lines) + "\n")))
    assert task.name == "reviews" and task.kind == "sentence" and set(task.labels) == {"pos", "neg"}
    assert task.split_by == "example" and "names no documents" in task.description
    assert [len(task.split(s)) for s in SPLITS] == [32, 4, 4]
    assert task.train[0].words[:2] in (("a", "good"), ("a", "bad"))
    assert read_tsv_task(tmp_path / "reviews.tsv", seed=1).documents != task.documents

    with_docs = [f"{line}\tbook{i % 10}" for i, line in enumerate(lines[1:])]
    task = read_tsv_task(write(tmp_path / "docs.tsv", "\n".join(with_docs) + "\n"))
    assert task.split_by == "document"
    assert_split_by_document(task)


@pytest.mark.parametrize(("content", "message"), [
    ("", "the file is empty"),
    ("just text without a label\n" * 20, r"line 1: no tab"),
    ("a\tb\n" * 20, r"every example has the label 'b'"),
    ("ok text\tx\n" * 5, "5 example"),
    (b"fine\tx\n" * 5 + b"caf\xe9\ty\n", r"line 6: not UTF-8"),
    ("fine\tx\nfine\ty\n" + "x" * 30_000 + "\ty\n", r"line 3: 30,002 characters"),
    ("one\ta\ttext1\n" * 10 + "two\tb\n", r"line 11: 2 columns, but line 1 has 3"),
    ("a\tb\tc\td\n", "4 tab-separated columns"),
    ("".join(f"label{i}\tthe text number {i}\n" for i in range(120)), "labels look like text"),
    ("   \tlabel\n" * 12, "line 1: the text is empty"),
    ("text\t \n" * 12, "line 1: the label is empty"),
    (b"\x00\x01binary\tx\n", "NUL byte"),
])
def test_tsv_errors_name_file_and_line(tmp_path: Path, content, message):
    path = write(tmp_path / "bad.tsv", content)
    with pytest.raises(TaskError, match=message) as err:
        read_tsv_task(path)
    assert "bad.tsv" in str(err.value)


CONLL = """-DOCSTART-\tO

John\tB-PER
lives\tO
in\tO
Paris\tB-LOC
.\t_

"""


def test_conll_task_documents_and_unlabelled_words(tmp_path: Path):
    text = CONLL * 3 + "# doc: extra\n# a comment\n" + "Mary\tB-PER\nleft\tO\n\n" * 9
    task = load_task(str(write(tmp_path / "names.conll", text)))
    assert task.kind == "token" and task.name == "names" and set(task.labels) == {"O", "B-PER", "B-LOC"}
    first = next(ex for s in SPLITS for ex in task.split(s) if ex.words[0] == "John")
    assert first.label == ("B-PER", "O", "O", "B-LOC", "")
    assert {ex.doc for s in SPLITS for ex in task.split(s)} == {"document 1", "document 2", "document 3", "extra"}
    assert task.split_by == "document"
    assert_split_by_document(task)
    assert task.label_counts("train")["O"] > 0 and "" not in task.label_counts("train")


def test_conll_without_documents_splits_by_sentence(tmp_path: Path):
    # several columns, as in CoNLL-2003 (word POS chunk NER): the last is the label; a .txt read as CoNLL
    text = "".join(f"Word{i} NNP B-NP B-ORG\nsaid VBD B-VP O\n\n" for i in range(20))
    task = load_task(str(write(tmp_path / "corpus.txt", text)))
    assert task.kind == "token" and task.split_by == "sentence" and "names no documents" in task.description
    assert set(task.labels) == {"B-ORG", "O"}
    assert sum(len(task.split(s)) for s in SPLITS) == 20


@pytest.mark.parametrize(("content", "message"), [
    ("John\tB-PER\nlives\n", r"line 2: one column"),
    ("John\tB-PER\tx\nlives\tO\n", r"line 2: 2 columns, but line 1 has 3"),
    ("John\tB-PER\n\n" * 20, r"every labelled word has the label 'B-PER'"),
    ("w\tO\n" * 1001, r"line 1: a sentence of 1,001 words"),
    ("John\t\n", r"line 1: empty label"),
    ("New York\tB-LOC\n", "holds a space"),
    ("a\t_\n\n" * 12, "no word has a label"),
])
def test_conll_errors_name_file_and_line(tmp_path: Path, content, message):
    path = write(tmp_path / "bad.conll", content)
    with pytest.raises(TaskError, match=message) as err:
        read_conll_task(path)
    assert "bad.conll" in str(err.value)


def test_file_tasks_are_read_again_when_changed(tmp_path: Path):
    path = write(tmp_path / "t.tsv", "".join(f"text {i}\t{'ab'[i % 2]}\n" for i in range(20)))
    assert set(load_task(str(path)).labels) == {"a", "b"}
    write(path, "".join(f"text {i}\t{'abc'[i % 3]}\n" for i in range(21)))
    assert set(load_task(str(path)).labels) == {"a", "b", "c"}
    with pytest.raises(TaskError, match="not a regular file"):
        read_tsv_task(tmp_path)


# ----------------------------------------------------------------------------------------------------------
# the real data


@pytest.mark.slow
def test_shipped_semcor_pos_and_ner():
    pos = load_task("pos", semcor_dir=shipped_semcor_dir())
    assert_split_by_document(pos)
    assert sum(len(pos.documents[s]) for s in SPLITS) == 186   # brown1 + brown2
    sizes = [len(pos.split(s)) for s in SPLITS]
    assert sum(sizes) > 19_000 and all(abs(n / sum(sizes) - f) < 0.03 for n, f in zip(sizes, tasks.FRACTIONS))
    ner = load_task("ner", semcor_dir=shipped_semcor_dir())
    assert ner.documents == pos.documents
    for s in SPLITS:
        counts = ner.label_counts(s)
        assert all(counts[label] > 0 for label in ner.labels), (s, counts)
    bank = load_task("wsd:bank", semcor_dir=shipped_semcor_dir())
    assert len(bank.labels) == 3 and all(ex.words[ex.target].lower().startswith("bank")
                                         for s in SPLITS for ex in bank.split(s))
