"""SemCor reader: a hand-written sample, bad files, and a smoke check on the real SemCor (the shipped copy)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxmodels.semcor import SemCor, SemcorError, coarse_pos, load_semcor, split_token

SENTENCES = """sent_uid\ttokens
d/br-x01.s1\tThe Fulton_County_Grand_Jury said the bank took_place .
d/br-x01.s2\tWe sat on the bank of the river and the bank was closed .
d/br-x02.s1\tBanks run ; he ran home .
"""

TAGS = """sent_uid\ttok_idx\tword\tlemma\tpos\tsense_keys\tsynsets
d/br-x01.s1\t1\tFulton_County_Grand_Jury\tgroup\tNNP\tgroup%1:03:00::\teng30-00031264-n
d/br-x01.s1\t2\tsaid\tsay\tVB\tsay%2:32:00::\teng30-01009240-v
d/br-x01.s1\t4\tbank\tbank\tNN\tbank%1:14:00::\t
d/br-x01.s1\t5\ttook_place\ttake_place\tVB\ttake_place%2:30:00::\teng30-00339934-v
d/br-x01.s2\t1\tsat\tsit\tVB\tsit%2:35:00::;2:35:01::\teng30-01543123-v
d/br-x01.s2\t4\tbank\tbank\tNN\tbank%1:17:01::\teng30-09213565-n
d/br-x01.s2\t10\tbank\tbank\tNN\tbank%1:14:00::\teng30-08420278-n
d/br-x01.s2\t12\tclosed\tclose\tJJ\tclosed%3:00:00::\t
d/br-x02.s1\t0\tBanks\tbank\tNN\tbank%1:14:00::\t
d/br-x02.s1\t1\trun\trun\tVB\trun%2:38:00::\t
d/br-x02.s1\t4\tran\trun\tVB\trun%2:38:04::\t
"""


@pytest.fixture()
def sample(tmp_path: Path) -> Path:
    (tmp_path / "sentences.tsv").write_text(SENTENCES, encoding="utf-8")
    (tmp_path / "tags.tsv").write_text(TAGS, encoding="utf-8")
    return tmp_path


def test_sample_sentences_and_spans(sample: Path):
    sc = SemCor.load(sample)
    assert len(sc) == 3
    s = sc["d/br-x01.s1"]
    assert s.document == "d/br-x01"
    assert s.tokens[1] == "Fulton_County_Grand_Jury"
    assert s.words == ["The", "Fulton", "County", "Grand", "Jury", "said", "the", "bank", "took", "place", "."]
    # token i -> words[start:end]
    assert s.spans == [(0, 1), (1, 5), (5, 6), (6, 7), (7, 8), (8, 10), (10, 11)]
    assert s.tags[4].word == "bank" and s.tags[4].synsets == ()
    # a second sense key without its lemma gets the first one's
    assert sc["d/br-x01.s2"].tags[1].sense_keys == ("sit%2:35:00::", "sit%2:35:01::")
    assert sc["d/br-x01.s2"].tags[1].sense_key == "sit%2:35:00::"


def test_sample_occurrences(sample: Path):
    sc = SemCor.load(sample)
    bank = sc.occurrences("bank")
    assert [(o.uid, o.token_index, o.word_index) for o in bank] == [
        ("d/br-x01.s1", 4, 7), ("d/br-x01.s2", 4, 4), ("d/br-x01.s2", 10, 10), ("d/br-x02.s1", 0, 0)]
    assert [o.sense_key for o in bank] == ["bank%1:14:00::", "bank%1:17:01::", "bank%1:14:00::", "bank%1:14:00::"]
    assert sc.occurrences("BANK") == bank
    assert [o.word for o in sc.occurrences("run")] == ["run", "ran"]
    assert sc.occurrences("run", pos="n") == []
    # a multi-word expression: its span and a representative word
    (tp,) = sc.occurrences("take_place")
    s = sc.sentences[tp.sentence_index]
    assert s.words[tp.word_start: tp.word_end] == ["took", "place"] and s.words[tp.word_index] == "place"
    # named entities (NNP, lemma = entity class) only on request
    assert sc.occurrences("group") == []
    (g,) = sc.occurrences("group", include_named_entities=True)
    assert (g.word_start, g.word_end, g.word_index) == (1, 5, 4)
    assert sc.sense_counts("bank") == {"bank%1:14:00::": 3, "bank%1:17:01::": 1}
    with pytest.raises(ValueError, match="pos must be one of"):
        sc.occurrences("bank", pos="noun")


def test_sample_polysemous(sample: Path):
    sc = SemCor.load(sample)
    assert sc.polysemous_lemmas(min_per_sense=1, min_senses=2) == [
        ("bank", {"bank%1:14:00::": 3, "bank%1:17:01::": 1}), ("run", {"run%2:38:00::": 1, "run%2:38:04::": 1})]
    assert sc.polysemous_lemmas(min_per_sense=2, min_senses=1) == [("bank", {"bank%1:14:00::": 3})]
    assert sc.polysemous_lemmas(min_per_sense=2, min_senses=2) == []
    assert [x[0] for x in sc.polysemous_lemmas(min_per_sense=1, min_senses=2, max_lemmas=1)] == ["bank"]


def test_helpers():
    assert split_token("a_b__c") == ["a", "b", "c"]
    assert split_token("_") == ["_"]
    assert [coarse_pos(t) for t in ("NN", "NNS", "NNP", "VB", "VBD", "JJ", "RB", "IN")] == [
        "NOUN", "NOUN", "PROPN", "VERB", "VERB", "ADJ", "ADV", "IN"]


@pytest.mark.parametrize("file, text, message", [
    ("tags.tsv", TAGS.replace("\t4\tbank\tbank\tNN", "\t3\tbank\tbank\tNN", 1),
     r"tags.tsv, line 4: token 3 of 'd/br-x01.s1' is 'the', but the tag is for 'bank'"),
    ("tags.tsv", TAGS + "d/br-x01.s1\t99\tx\tx\tNN\tx%1:00:00::\t\n", r"tags.tsv, line 13: tok_idx 99 is outside"),
    ("tags.tsv", TAGS + "d/br-x01.s1\tfour\tx\tx\tNN\tx%1:00:00::\t\n", r"line 13: tok_idx 'four' is not an integer"),
    ("tags.tsv", TAGS + "d/nope.s1\t0\tx\tx\tNN\tx%1:00:00::\t\n", r"line 13: sentence 'd/nope.s1' is not in"),
    ("tags.tsv", TAGS + "d/br-x01.s1\t0\tThe\n", r"line 13: expected 7 tab-separated fields"),
    ("tags.tsv", TAGS + "d/br-x01.s1\t2\tsaid\tsay\tVB\tsay%2:32:00::\t\n", r"line 13: token 2 .* tagged twice"),
    ("tags.tsv", TAGS + "d/br-x01.s1\t0\tThe\tthe\tDT\t\t\n", r"line 13: empty lemma, pos or sense_keys"),
    ("sentences.tsv", SENTENCES + "d/br-x01.s1\tagain\n", r"sentences.tsv, line 5: sentence 'd/br-x01.s1' already"),
    ("sentences.tsv", SENTENCES + "d/br-x03.s1\n", r"sentences.tsv, line 5: expected 'sent_uid<TAB>tokens'"),
    ("sentences.tsv", "sent_uid\ttokens\n", r"sentences.tsv: no sentences"),
])
def test_malformed_files(sample: Path, file: str, text: str, message: str):
    (sample / file).write_text(text, encoding="utf-8")
    with pytest.raises(SemcorError, match=message):
        SemCor.load(sample)


def test_missing_files(tmp_path: Path, sample: Path):
    with pytest.raises(SemcorError, match="SemCor folder not found"):
        SemCor.load(tmp_path / "nowhere")
    (sample / "tags.tsv").unlink()
    with pytest.raises(SemcorError, match=r"tags.tsv: file not found"):
        SemCor.load(sample)
    (sample / "sentences.tsv").write_bytes(b"sent_uid\ttokens\nx\t\xff\xfe\n")
    with pytest.raises(SemcorError, match="not UTF-8"):
        SemCor.load(sample)


@pytest.mark.slow
def test_real_semcor(shipped_semcor: Path):
    sc = load_semcor(shipped_semcor)  # the shared data's tables, gzipped (test_semcor_source checks they are equal)
    assert len(sc) == 37176
    assert load_semcor(shipped_semcor) is sc  # loaded once per process
    bank = sc.occurrences("bank")
    assert len(bank) == 40
    counts = sc.sense_counts("bank")
    assert counts["bank%1:14:00::"] == 20 and counts["bank%1:17:01::"] == 14
    run = sc.occurrences("run")
    assert len(run) == 228
    assert len(sc.occurrences("run", pos="v")) == 199 and len(sc.occurrences("run", pos="n")) == 29
    # every occurrence points at its word in the split sentence
    for o in bank + run:
        s = sc.sentences[o.sentence_index]
        assert "_".join(s.words[o.word_start: o.word_end]) == o.word.strip("_")
    picked = sc.polysemous_lemmas(min_per_sense=10, min_senses=3, max_lemmas=20)
    assert len(picked) == 20 and all(len(senses) >= 3 and min(senses.values()) >= 10 for _, senses in picked)
    assert dict(picked).get("run") is None or min(dict(picked)["run"].values()) >= 10
