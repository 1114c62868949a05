"""SemCor occurrences named by WordNet glosses: the WordNet reader, gzipped tables, ``analysis.sources``, the
compact copy in ``assets/semcor`` and the script that makes it.

Most tests use tiny tables written here. The shipped copy is tested as it is (it is part of the checkout); the
comparisons with the shared data folder carry the ``shared_data`` marker: skipped where that folder is absent
(failed under CI), since the point of the shipped copy is that nothing else needs it.
"""

from __future__ import annotations

import gzip
import hashlib
import re
from pathlib import Path

import pytest

from ctxmodels.analysis.sources import SemcorLemma, SenseInfo, semcor_lemmas, semcor_search, shorten
from ctxmodels.analysis.vectors import OccurrenceSearch
from ctxmodels.release import semcor_copy
from ctxmodels.semcor import (
    SemCor,
    SemcorError,
    default_semcor_dir,
    load_semcor,
    semcor_files,
    shipped_semcor_dir,
    table_size,
)
from ctxmodels.wordnet import Sense, WordnetError, default_senses_path, load_senses, read_senses, shipped_senses_path

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "assets" / "semcor"

RIVER = "bank%1:17:01::"
MONEY = "bank%1:14:00::"
LONG_GLOSS = ("an arrangement of similar objects in a row or in tiers, as of switches on a board or of oars in an "
              "old galley")

# Three documents; "bank" tagged 10 times: 4 money, 3 river, 1 ridge, 1 row, 1 verb (a key missing from the glosses),
# plus a named entity whose lemma is "bank" (left out) and a multi-word expression.
SENTENCES = """sent_uid\ttokens
d/br-a01.s1\tThe bank raised its rates .
d/br-a01.s2\tWe sat on the bank of the river while the bank was shut .
d/br-a01.s3\tThe First_National_Bank opened ; rain took_place .
d/br-a02.s1\tBanks lend money ; the bank of earth held .
d/br-a02.s2\tShe banked on the river bank .
d/br-b01.s1\tThe bank failed .
d/br-b01.s2\tAlong the bank , reeds grew by the bank .
"""

TAGS = f"""sent_uid\ttok_idx\tword\tlemma\tpos\tsense_keys\tsynsets
d/br-a01.s1\t1\tbank\tbank\tNN\t{MONEY}\teng30-08420278-n
d/br-a01.s1\t2\traised\traise\tVB\traise%2:38:00::\t
d/br-a01.s2\t4\tbank\tbank\tNN\t{RIVER}\teng30-09213565-n
d/br-a01.s2\t10\tbank\tbank\tNN\t{MONEY}\teng30-08420278-n
d/br-a01.s3\t1\tFirst_National_Bank\tbank\tNNP\tgroup%1:03:00::\t
d/br-a01.s3\t5\ttook_place\ttake_place\tVB\ttake_place%2:30:00::\t
d/br-a02.s1\t0\tBanks\tbank\tNN\t{MONEY}\t
d/br-a02.s1\t2\tmoney\tmoney\tNN\tmoney%1:21:00::\t
d/br-a02.s1\t5\tbank\tbank\tNN\tbank%1:17:00::\t
d/br-a02.s2\t1\tbanked\tbank\tVB\tbank%2:31:00::\t
d/br-a02.s2\t5\tbank\tbank\tNN\t{RIVER}\t
d/br-b01.s1\t1\tbank\tbank\tNN\t{MONEY}\t
d/br-b01.s2\t2\tbank\tbank\tNN\t{RIVER}\t
d/br-b01.s2\t8\tbank\tbank\tNN\tbank%1:14:01::\t
"""

SENSES = f"""sense_key\tsynset\tlemmas\tgloss\texamples
{MONEY}\teng30-08420278-n\tdepository_financial_institution,bank\ta financial institution that accepts deposits\t\
he cashed a check at the bank | that bank holds the mortgage on my home
{RIVER}\teng30-09213565-n\tbank\tsloping land (especially the slope beside a body of water)\t\
they pulled the canoe up on the bank
bank%1:17:00::\teng30-09213434-n\tbank\ta long ridge or pile\ta huge bank of earth
bank%1:14:01::\teng30-08462066-n\tbank\t{LONG_GLOSS}\t
raise%2:38:00::\teng30-01517355-v\traise,lift\traise from a lower to a higher position\t
take_place%2:30:00::\teng30-00339934-v\thappen,take_place\tcome to pass\t
money%1:21:00::\teng30-13384557-n\tmoney\tthe most common medium of exchange\t
"""


def write_tables(folder: Path, sentences: str = SENTENCES, tags: str = TAGS, senses: str = SENSES,
                 packed: bool = False) -> Path:
    """The tiny tables laid out like the shared data: folder/semcor/{sentences,tags}.tsv, folder/wordnet/."""
    for sub, name, text in (("semcor", "sentences", sentences), ("semcor", "tags", tags),
                            ("wordnet", "senses", senses)):
        (folder / sub).mkdir(parents=True, exist_ok=True)
        data = text.encode("utf-8")
        if packed:
            (folder / sub / f"{name}.tsv.gz").write_bytes(gzip.compress(data))
        else:
            (folder / sub / f"{name}.tsv").write_bytes(data)
    return folder


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    return write_tables(tmp_path / "data")


@pytest.fixture()
def tiny(data: Path) -> tuple[SemCor, dict[str, Sense]]:
    return SemCor.load(data / "semcor"), read_senses(data / "wordnet" / "senses.tsv")


# ----------------------------------------------------------------------------------------------------------
# the WordNet reader


def test_read_senses(data: Path):
    senses = read_senses(data / "wordnet" / "senses.tsv")
    assert len(senses) == 7 and "sense_key" not in senses   # the header is not a sense
    s = senses[MONEY]
    assert s == Sense(MONEY, "eng30-08420278-n", ("depository_financial_institution", "bank"),
                      "a financial institution that accepts deposits",
                      ("he cashed a check at the bank", "that bank holds the mortgage on my home"))
    assert s.lemma == "bank"
    assert senses["bank%1:17:00::"].examples == ("a huge bank of earth",)
    assert senses["money%1:21:00::"].examples == ()


def test_senses_without_header_or_examples_column(tmp_path: Path):
    path = tmp_path / "senses.tsv"
    path.write_text(f"{RIVER}\tsyn\tbank\tsloping land\n", encoding="utf-8")  # no header, 4 fields
    assert read_senses(path)[RIVER].examples == ()


@pytest.mark.parametrize("line, message", [
    ("bank%1:17:02::\tsyn\tbank\n", r"senses.tsv, line 9: expected 5 tab-separated fields .*found 3"),
    ("bank-1-17\tsyn\tbank\tgloss\t\n", r"line 9: 'bank-1-17' is not a WordNet sense key"),
    ("bank%1:17:02::\tsyn\tbank\t \t\n", r"line 9: sense 'bank%1:17:02::' has an empty gloss"),
    (f"{RIVER}\tsyn\tbank\tagain\t\n", r"line 9: sense 'bank%1:17:01::' already appeared on line 3"),
])
def test_malformed_senses(data: Path, line: str, message: str):
    path = data / "wordnet" / "senses.tsv"
    path.write_text(SENSES + line, encoding="utf-8")
    with pytest.raises(WordnetError, match=message):
        read_senses(path)


def test_senses_missing_empty_or_damaged(tmp_path: Path):
    with pytest.raises(WordnetError, match=r"nowhere.tsv: file not found"):
        read_senses(tmp_path / "nowhere.tsv")
    (tmp_path / "empty.tsv").write_text("sense_key\tsynset\tlemmas\tgloss\texamples\n", encoding="utf-8")
    with pytest.raises(WordnetError, match=r"empty.tsv: no senses"):
        read_senses(tmp_path / "empty.tsv")
    packed = gzip.compress(SENSES.encode())
    (tmp_path / "cut.tsv.gz").write_bytes(packed[: len(packed) // 2])
    with pytest.raises(WordnetError, match=r"cut.tsv.gz, after line \d+: not a readable gzip file"):
        read_senses(tmp_path / "cut.tsv.gz")
    (tmp_path / "plain.tsv.gz").write_bytes(SENSES.encode())
    with pytest.raises(WordnetError, match=r"plain.tsv.gz.*not a readable gzip file"):
        read_senses(tmp_path / "plain.tsv.gz")
    assert issubclass(WordnetError, ValueError)


def test_load_senses_caches_until_the_file_changes(data: Path):
    path = data / "wordnet" / "senses.tsv"
    first = load_senses(path)
    assert load_senses(path) is first and load_senses(str(path)) is first
    path.write_text(SENSES + "zebra%1:05:00::\tsyn\tzebra\tstriped horse\t\n", encoding="utf-8")
    again = load_senses(path)
    assert again is not first and "zebra%1:05:00::" in again


# ----------------------------------------------------------------------------------------------------------
# gzipped tables


def test_gzipped_tables_read_like_plain_ones(tmp_path: Path):
    plain = write_tables(tmp_path / "plain")
    packed = write_tables(tmp_path / "packed", packed=True)
    a, b = SemCor.load(plain / "semcor"), SemCor.load(packed / "semcor")
    assert [(s.uid, s.words, s.spans, s.tags) for s in a.sentences] == [(s.uid, s.words, s.spans, s.tags)
                                                                         for s in b.sentences]
    assert a.occurrences("bank") == b.occurrences("bank")
    assert read_senses(plain / "wordnet" / "senses.tsv") == read_senses(packed / "wordnet" / "senses.tsv.gz")
    # a packed copy reports its text's size (the probe cache stamp), not the file's
    for p, q in zip(semcor_files(plain / "semcor"), semcor_files(packed / "semcor")):
        assert q.suffix == ".gz" and table_size(q) == table_size(p) == p.stat().st_size
    assert table_size(tmp_path / "nowhere.tsv.gz") is None


def test_gzipped_tables_are_checked_the_same(tmp_path: Path):
    bad = TAGS.replace("\t1\tbank\tbank\tNN", "\t2\tbank\tbank\tNN", 1)
    folder = write_tables(tmp_path, tags=bad, packed=True)
    with pytest.raises(SemcorError, match=r"tags.tsv.gz, line 2: token 2 of 'd/br-a01.s1' is 'raised'"):
        SemCor.load(folder / "semcor")


def test_plain_table_wins_over_packed(tmp_path: Path):
    folder = write_tables(tmp_path, packed=True)
    (folder / "semcor" / "sentences.tsv").write_text(SENTENCES.replace("failed", "fell"), encoding="utf-8")
    assert semcor_files(folder / "semcor")[0].name == "sentences.tsv"
    assert SemCor.load(folder / "semcor")["d/br-b01.s1"].words[2] == "fell"


def test_default_locations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    data = write_tables(tmp_path / "data")
    monkeypatch.setenv("CTXMODELS_DATA", str(data))
    assert default_semcor_dir() == data / "semcor"
    assert default_senses_path() == data / "wordnet" / "senses.tsv"
    # no shared data: the shipped copy
    monkeypatch.setenv("CTXMODELS_DATA", str(tmp_path / "nowhere"))
    assert default_semcor_dir() == shipped_semcor_dir() == SHIPPED
    assert default_senses_path() == shipped_senses_path() == SHIPPED / "senses.tsv.gz"
    monkeypatch.setenv("CTXMODELS_ASSETS", str(tmp_path / "assets"))
    assert default_semcor_dir() == tmp_path / "assets" / "semcor"


# ----------------------------------------------------------------------------------------------------------
# semcor_search on tiny data


def test_search_labels_and_occurrences(tiny):
    semcor, senses = tiny
    found, infos = semcor_search("bank", min_sense_count=1, semcor=semcor, senses=senses)
    assert isinstance(found, OccurrenceSearch) and found.target == "bank" and found.missing == []
    # every tagged "bank" but the named entity, one entry per occurrence, in corpus order
    assert len(found.sentences) == len(found.occurrences) == len(found.labels) == len(found.words) == 10
    assert [o.sentence_index for o in found.occurrences] == list(range(10))
    assert found.forms == {"bank", "banks", "banked"}
    assert [i.label for i in infos] == [
        "a financial institution that accepts deposits", "sloping land (especially the slope beside a body of water)",
        "an arrangement of similar objects in a row or in tiers, as…", "a long ridge or pile", "bank%2:31:00::"]
    assert [i.count for i in infos] == [4, 3, 1, 1, 1]
    river = infos[1]
    assert river == SenseInfo("sloping land (especially the slope beside a body of water)", (RIVER,),
                              "sloping land (especially the slope beside a body of water)",
                              ("they pulled the canoe up on the bank",), 3)
    assert infos[2].gloss == LONG_GLOSS and len(infos[2].label) <= 60  # ties: by key
    # a key without a gloss is named by itself
    assert infos[4] == SenseInfo("bank%2:31:00::", ("bank%2:31:00::",), "", (), 1)
    for text, words, label, o in zip(found.sentences, found.words, found.labels, found.occurrences):
        a, b = o.char_span
        assert text == " ".join(words) == o.sentence and text[a:b] == o.word == words[o.word_index]
        assert o.label == label
    second = found.occurrences[2]   # the second "bank" of d/br-a01.s2
    assert (second.sentence, second.word_index, second.char_span) == (
        "We sat on the bank of the river while the bank was shut .", 10, (42, 46))
    assert found.labels[:3] == [infos[0].label, river.label, infos[0].label]


def test_search_folds_rare_senses(tiny):
    semcor, senses = tiny
    _, infos = semcor_search("bank", min_sense_count=3, semcor=semcor, senses=senses)
    assert [(i.label, i.count) for i in infos] == [
        ("a financial institution that accepts deposits", 4),
        ("sloping land (especially the slope beside a body of water)", 3), ("other", 2 + 1)]
    other = infos[-1]
    assert set(other.sense_keys) == {"bank%1:17:00::", "bank%1:14:01::", "bank%2:31:00::"}
    assert other.gloss == "" and other.examples == ()
    found, infos = semcor_search("bank", min_sense_count=4, semcor=semcor, senses=senses)
    assert [i.label for i in infos] == ["a financial institution that accepts deposits", "other"]
    assert found.labels.count("other") == 6
    _, infos = semcor_search("bank", min_sense_count=5, semcor=semcor, senses=senses)
    assert [(i.label, i.count) for i in infos] == [("other", 10)]


def test_search_pos_and_multiword(tiny):
    semcor, senses = tiny
    found, infos = semcor_search("bank", "v", min_sense_count=1, semcor=semcor, senses=senses)
    assert [o.word for o in found.occurrences] == ["banked"] and infos[0].label == "bank%2:31:00::"
    assert len(semcor_search("bank", "n", min_sense_count=1, semcor=semcor, senses=senses)[0].occurrences) == 9
    for name in ("take_place", "Take Place"):
        found, infos = semcor_search(name, semcor=semcor, senses=senses, min_sense_count=1)
        (o,) = found.occurrences
        assert found.target == "take_place" and o.word == "place" and infos[0].label == "come to pass"
        assert found.sentences[0][slice(*o.char_span)] == "place"


def _one_word_corpus(folder: Path, keys: list[str]) -> SemCor:
    """One document per occurrence of "bank", tagged with ``keys`` in order."""
    uids = [f"d/br-c{i:02d}.s1" for i in range(len(keys))]
    sentences = "sent_uid\ttokens\n" + "".join(f"{u}\tthe bank .\n" for u in uids)
    tags = "sent_uid\ttok_idx\tword\tlemma\tpos\tsense_keys\tsynsets\n" + "".join(
        f"{u}\t1\tbank\tbank\tNN\t{k}\t\n" for u, k in zip(uids, keys))
    return SemCor.load(write_tables(folder, sentences, tags) / "semcor")


def test_labels_stay_unique(tmp_path: Path):
    gloss = "a row of objects of the same kind placed side by side in a line along a wall"
    senses = {k: Sense(k, "s", ("bank",), g) for k, g in (
        ("bank%1:14:01::", gloss + " of a room"), ("bank%1:14:02::", gloss + " of a hall"),
        ("bank%1:14:03::", "other"))}
    semcor = _one_word_corpus(tmp_path, ["bank%1:14:02::"] * 3 + ["bank%1:14:01::"] * 2 + ["bank%1:14:03::"])
    _, infos = semcor_search("bank", min_sense_count=1, semcor=semcor, senses=senses)
    labels = [i.label for i in infos]
    assert len(set(labels)) == 3 and all(len(x) <= 60 for x in labels)
    # alike after shortening: each gets its rank among the lemma's senses by frequency
    assert labels[0].endswith("… (1)") and labels[1].endswith("… (2)")
    assert infos[0].sense_keys == ("bank%1:14:02::",) and labels[0].startswith(gloss[:40])
    assert labels[2] == "other"   # a gloss reading "other" is fine while no sense is folded
    # the rank comes from the whole corpus, not the sample: one of each in a sample of 2 keeps "(1)" and "(2)"
    both = 0
    for seed in range(20):
        found, infos = semcor_search("bank", min_sense_count=1, limit=2, seed=seed, semcor=semcor, senses=senses)
        assert len(found.occurrences) == 2
        by_key = {i.sense_keys[0]: i.label for i in infos}
        if "bank%1:14:01::" in by_key and "bank%1:14:02::" in by_key:
            assert by_key["bank%1:14:02::"].endswith("(1)") and by_key["bank%1:14:01::"].endswith("(2)")
            both += 1
    assert both


def test_label_collides_with_other(tmp_path: Path):
    senses = {"bank%1:14:01::": Sense("bank%1:14:01::", "s", ("bank",), "other"),
              "bank%1:14:02::": Sense("bank%1:14:02::", "s", ("bank",), "rare")}
    semcor = _one_word_corpus(tmp_path, ["bank%1:14:01::"] * 3 + ["bank%1:14:02::"])
    _, infos = semcor_search("bank", min_sense_count=2, semcor=semcor, senses=senses)
    assert [i.label for i in infos] == ["other (1)", "other"]


def test_shorten():
    assert shorten("short gloss") == "short gloss"
    text = "sloping land (especially the slope beside a body of water) and more words after it"
    cut = shorten(text)
    assert len(cut) <= 60 and cut.endswith("…") and text.startswith(cut[:-1])
    assert text[len(cut) - 1] == " "                     # cut at a word boundary
    assert shorten("x" * 80) == "x" * 59 + "…"           # one long word: cut inside it
    assert shorten("word, " * 20, 20) == "word, word, word…"   # no dangling comma before "…"
    assert len(shorten("a " * 40, 61)) <= 61


def test_sampling_is_reproducible_capped_and_spread(tmp_path: Path):
    # 6 documents; the first holds 30 occurrences, the others 3 each. Each sentence names itself.
    lines, tags = ["sent_uid\ttokens"], ["sent_uid\ttok_idx\tword\tlemma\tpos\tsense_keys\tsynsets"]
    for d in range(6):
        for s in range(30 if d == 0 else 3):
            uid = f"d/br-d0{d}.s{s + 1}"
            lines.append(f"{uid}\tthe bank {uid} .")
            tags.append(f"{uid}\t1\tbank\tbank\tNN\t{MONEY if s % 2 else RIVER}\t")
    folder = write_tables(tmp_path, "\n".join(lines) + "\n", "\n".join(tags) + "\n")
    semcor, senses = SemCor.load(folder / "semcor"), read_senses(folder / "wordnet" / "senses.tsv")

    def uids(**kw) -> list[str]:
        found, infos = semcor_search("bank", semcor=semcor, senses=senses, **kw)
        assert sum(i.count for i in infos) == len(found.occurrences)   # counts are of what was kept
        assert found.total == 45                                         # and how many there were to keep
        return [words[2] for words in found.words]

    assert len(uids(limit=None)) == len(uids(limit=1000)) == len(uids(limit=45)) == 45
    picked = uids(limit=12, seed=1)
    assert len(picked) == 12 and picked == uids(limit=12, seed=1)            # capped, reproducible
    assert picked != uids(limit=12, seed=2)                                   # the seed matters
    assert picked == sorted(picked, key=lambda u: semcor.index[u])           # corpus order
    docs = [u.rsplit(".s", 1)[0] for u in picked]
    assert sorted(set(docs)) == [f"d/br-d0{d}" for d in range(6)]
    assert all(docs.count(d) == 2 for d in set(docs))                         # 12 over 6 documents: 2 each
    docs = [u.rsplit(".s", 1)[0] for u in uids(limit=30, seed=0)]
    assert docs.count("d/br-d00") == 30 - 15                                  # the small ones give all they have
    assert len(uids(limit=1)) == 1


def test_errors(tiny, tmp_path: Path):
    semcor, senses = tiny
    kw = {"semcor": semcor, "senses": senses}
    with pytest.raises(ValueError, match=r"'bnak' is not a sense-tagged lemma in SemCor; close lemmas: bank"):
        semcor_search("bnak", **kw)
    with pytest.raises(ValueError, match=r"'banks' is not a sense-tagged lemma.*as a form of 'bank': give the lemma"):
        semcor_search("banks", **kw)
    with pytest.raises(ValueError, match=r"'zzz' is not a sense-tagged lemma.*pick one from semcor_lemmas"):
        semcor_search("zzz", **kw)
    with pytest.raises(ValueError, match=r"pos must be one of n, v, a, r .*not 'noun'"):
        semcor_search("bank", "noun", **kw)
    with pytest.raises(ValueError, match=r"'bank' has no adjective occurrences in SemCor; it has noun \(n\): 9, "
                                         r"verb \(v\): 1"):
        semcor_search("bank", "a", **kw)
    with pytest.raises(ValueError, match="no lemma given"):
        semcor_search("  ", **kw)
    with pytest.raises(ValueError, match="min_sense_count must be a whole number between 1 and"):
        semcor_search("bank", min_sense_count=0, **kw)
    with pytest.raises(ValueError, match="limit must be a whole number between 1 and"):
        semcor_search("bank", limit=0, **kw)
    with pytest.raises(ValueError, match="seed must be a whole number"):
        semcor_search("bank", seed=-1, **kw)
    # a lemma tagged only as a named entity class
    ne = TAGS + "d/br-b01.s1\t0\tThe\tperson\tNNP\tperson%1:03:00::\t\n"
    folder = write_tables(tmp_path, tags=ne)
    with pytest.raises(ValueError, match=r"'person' is tagged in SemCor only as a named entity"):
        semcor_search("person", semcor=SemCor.load(folder / "semcor"), senses=senses)


def test_semcor_lemmas(tiny):
    semcor, _ = tiny
    assert semcor_lemmas(min_occurrences=1, min_senses=2, semcor=semcor) == [SemcorLemma("bank", "n", 9, 4)]
    assert [(x.lemma, x.pos) for x in semcor_lemmas(1, 1, semcor=semcor)] == [
        ("bank", "n"), ("bank", "v"), ("money", "n"), ("raise", "v"), ("take_place", "v")]
    assert semcor_lemmas(min_occurrences=10, min_senses=1, semcor=semcor) == []
    with pytest.raises(ValueError, match="min_senses must be"):
        semcor_lemmas(1, 0, semcor=semcor)


def test_defaults_read_the_data_folder(data: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CTXMODELS_DATA", str(data))
    found, infos = semcor_search("bank", min_sense_count=3)
    assert len(found.occurrences) == 10 and infos[1].label.startswith("sloping land")
    assert [x.lemma for x in semcor_lemmas(1, 2)] == ["bank"]


# ----------------------------------------------------------------------------------------------------------
# the copy and the script that makes it


def test_make_copy(tmp_path: Path):
    src = write_tables(tmp_path / "data")
    (src / "wordnet" / "LICENSE").write_text("WordNet 3.0 Copyright 2006 by Princeton University.\n")
    (src / "wordnet" / "senses.tsv").write_text(SENSES + "zebra%1:05:00::\tsyn\tzebra\tstriped horse\t\n")
    out = tmp_path / "copy"
    written = semcor_copy.make_semcor_copy(src, out, log=lambda m: None)
    assert [f.name for f in written] == ["sentences.tsv.gz", "tags.tsv.gz", "senses.tsv.gz", "LICENSE", "README.md"]
    assert sorted(p.name for p in out.iterdir()) == sorted(f.name for f in written)
    assert (out / "LICENSE").read_bytes() == (src / "wordnet" / "LICENSE").read_bytes()
    assert gzip.decompress((out / "tags.tsv.gz").read_bytes()) == (src / "semcor" / "tags.tsv").read_bytes()
    # the copy reads as the source; senses SemCor never uses are left out
    a, b = SemCor.load(src / "semcor"), SemCor.load(out)
    assert [(s.uid, s.tokens, s.tags) for s in a.sentences] == [(s.uid, s.tokens, s.tags) for s in b.sentences]
    copied = read_senses(out / "senses.tsv.gz")
    assert "zebra%1:05:00::" not in copied and copied[RIVER] == read_senses(src / "wordnet" / "senses.tsv")[RIVER]
    assert set(copied) == set(read_senses(src / "wordnet" / "senses.tsv")) - {"zebra%1:05:00::"}
    # deterministic: a zero timestamp and no file name in the gzip header, the same bytes again
    first = {p.name: p.read_bytes() for p in out.iterdir()}
    assert all(first[n][4:8] == b"\0\0\0\0" and first[n][3] == 0 for n in first if n.endswith(".gz"))
    semcor_copy.make_semcor_copy(src, out, log=lambda m: None)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first
    readme = first["README.md"].decode()
    assert "Princeton University" in readme and "LICENSE" in readme and "(1 other rows left out)" in readme
    for f in written[:3]:
        assert f"`{f.name}` | {f.size / 1e6:.2f} MB" in readme and f.sha256[:16] in readme


def test_make_copy_refuses_without_licence_or_with_bad_data(tmp_path: Path):
    src = write_tables(tmp_path / "data")
    with pytest.raises(WordnetError, match="LICENSE: file not found; the WordNet licence has to travel"):
        semcor_copy.make_semcor_copy(src, tmp_path / "copy", log=lambda m: None)
    (src / "wordnet" / "LICENSE").write_text("licence\n")
    (src / "semcor" / "tags.tsv").write_text(TAGS + "d/nope.s1\t0\tx\tx\tNN\tx%1:00:00::\t\n")
    with pytest.raises(SemcorError, match="not in sentences.tsv"):
        semcor_copy.make_semcor_copy(src, tmp_path / "copy", log=lambda m: None)
    assert not (tmp_path / "copy").exists()   # nothing written from a bad source


def test_copy_command_line(tmp_path: Path, capsys: pytest.CaptureFixture):
    assert semcor_copy.main([]) == 2 and "usage: python -m ctxmodels.release.semcor_copy" in capsys.readouterr().err
    assert semcor_copy.main(["--help"]) == 0 and "SRC_DATA_DIR DEST_DIR" in capsys.readouterr().out
    assert semcor_copy.main([str(tmp_path / "nowhere"), str(tmp_path / "out")]) == 1
    assert "error: " in capsys.readouterr().err
    assert "ctxmodels.release.semcor_copy" in (ROOT / "assets" / "reproduce.sh").read_text()


# ----------------------------------------------------------------------------------------------------------
# the shipped copy (no skip: it is part of the checkout)


def test_shipped_copy_files():
    names = sorted(p.name for p in SHIPPED.iterdir())
    assert names == ["LICENSE", "README.md", "senses.tsv.gz", "sentences.tsv.gz", "tags.tsv.gz"]
    licence = (SHIPPED / "LICENSE").read_text()
    assert "WordNet 3.0 Copyright 2006 by Princeton University.  All rights reserved." in licence
    assert sum(p.stat().st_size for p in SHIPPED.iterdir()) < 8_000_000   # kept compact
    # the README's table names each file's size and hash: it describes these very files
    readme = (SHIPPED / "README.md").read_text()
    assert "SemCor 3.0" in readme and "WordNet 3.0" in readme and "Princeton University" in readme
    for name in ("sentences.tsv.gz", "tags.tsv.gz", "senses.tsv.gz"):
        data = (SHIPPED / name).read_bytes()
        row = re.search(rf"\| `{re.escape(name)}` \| ([\d.]+) MB \|.*\| `([0-9a-f]{{16}})` \|", readme)
        assert row, f"{name} is not in assets/semcor/README.md"
        assert row[1] == f"{len(data) / 1e6:.2f}" and row[2] == hashlib.sha256(data).hexdigest()[:16]
        assert data[4:8] == b"\0\0\0\0"


@pytest.mark.slow
def test_shipped_copy_names_bank():
    senses = load_senses(SHIPPED / "senses.tsv.gz")
    assert senses[RIVER].gloss == "sloping land (especially the slope beside a body of water)"
    assert senses[MONEY].gloss.startswith("a financial institution that accepts deposits")
    semcor = load_semcor(SHIPPED)
    assert len(semcor) == 37176 and sum(len(s.tags) for s in semcor.sentences) == 234136
    found, infos = semcor_search("bank", semcor=semcor, senses=senses)
    assert len(found.occurrences) == 40
    assert [(i.label, i.count) for i in infos] == [
        ("a financial institution that accepts deposits and channels…", 20),
        ("sloping land (especially the slope beside a body of water)", 14), ("other", 6)]
    for text, o in zip(found.sentences, found.occurrences):
        assert text[slice(*o.char_span)] == o.word
    run, run_infos = semcor_search("run", "v", min_sense_count=1, semcor=semcor, senses=senses)
    assert len(run.occurrences) == 199 and len({i.label for i in run_infos}) == len(run_infos)
    assert all(len(i.label) <= 60 for i in run_infos)
    say, _ = semcor_search("say", semcor=semcor, senses=senses, limit=300, seed=0)
    assert len(say.occurrences) == 300
    assert semcor_search("say", semcor=semcor, senses=senses, limit=300, seed=0)[0].sentences == say.sentences
    lemmas = semcor_lemmas(semcor=semcor)
    assert lemmas[0].lemma == "be" and all(x.n_occurrences >= 10 and x.n_senses >= 2 for x in lemmas)
    assert any((x.lemma, x.pos) == ("bank", "n") for x in lemmas)


# ----------------------------------------------------------------------------------------------------------
# the shipped copy against the shared data (skipped without the folder, failed under CI: see tests/conftest.py)


@pytest.mark.shared_data
def test_shared_glosses(shared_data):
    senses = load_senses(shared_data / "wordnet" / "senses.tsv")
    assert len(senses) == 33274
    assert senses[RIVER].gloss == "sloping land (especially the slope beside a body of water)"
    assert senses[RIVER].synset == "eng30-09213565-n"
    assert senses[RIVER].examples == ("they pulled the canoe up on the bank",
                                      "he sat on the bank of the river and watched the currents")
    assert senses["run%2:38:00::"].gloss.startswith("move fast by using one's feet")
    assert load_senses(SHIPPED / "senses.tsv.gz") == senses   # every shared sense occurs in SemCor
    assert (SHIPPED / "LICENSE").read_bytes() == (shared_data / "wordnet" / "LICENSE").read_bytes()


@pytest.mark.slow
@pytest.mark.shared_data
def test_shipped_copy_equals_shared_data(shared_data):
    shared, shipped = load_semcor(shared_data / "semcor"), load_semcor(SHIPPED)
    assert [(s.uid, s.tokens) for s in shared.sentences] == [(s.uid, s.tokens) for s in shipped.sentences]
    assert [s.tags for s in shared.sentences] == [s.tags for s in shipped.sentences]
    for p, q in zip(semcor_files(shared_data / "semcor"), semcor_files(SHIPPED)):
        assert table_size(p) == table_size(q)   # the probe caches beside the shipped models serve both
    a = semcor_search("bank", semcor=shared, senses=load_senses(shared_data / "wordnet" / "senses.tsv"))
    b = semcor_search("bank", semcor=shipped, senses=load_senses(SHIPPED / "senses.tsv.gz"))
    assert a == b
    assert [o.label for o in a[0].occurrences].count(
        "sloping land (especially the slope beside a body of water)") == 14
