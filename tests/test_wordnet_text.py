"""Modern English training text from WordNet's data files: paragraphs, documents, and evaluation items kept out."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ctxmodels import cli
from ctxmodels.text import CorpusError, read_documents
from ctxmodels.training import wordnet_text

LICENCE = "  1 This software and database is being provided to you, the LICENSEE, by Princeton University\n"
NOUN = (LICENCE
        + "08420278 14 n 02 depository_financial_institution 0 bank 0 001 @ 08054721 n 0000 | a financial institution "
          'that accepts deposits; "he cashed a check at the bank"; "she put the money in the bank"  \n'
        + "09213565 17 n 01 bank 1 001 @ 09437454 n 0000 | sloping land (especially the slope beside a body of water); "
          '"they pulled the canoe up on the bank"  \n'
        + "09999999 14 n 01 club 0 000 | a formal association of people with similar interests  \n")
VERB = LICENCE + '02343392 40 v 01 deposit 0 000 | put into a bank account; "she deposits her paycheck every month"  \n'
ADJ = LICENCE + "00001740 00 a 01 able(p) 0 000 | having the necessary means or skill  \n"


@pytest.fixture
def wordnet_dir(tmp_path):
    for pos, text in (("noun", NOUN), ("verb", VERB), ("adj", ADJ), ("adv", LICENCE)):
        (tmp_path / f"data.{pos}").write_text(text, encoding="utf-8")
    return tmp_path


def test_paragraphs_are_synsets_and_documents_lexicographer_files(wordnet_dir, tmp_path):
    out = tmp_path / "wordnet.txt"
    assert cli.main(["wordnet-text", str(wordnet_dir), str(out)]) == 0
    docs = read_documents(out)
    # in lexnames order: adj.all, noun.group, noun.object, verb.possession
    assert [len(d) for d in docs] == [1, 2, 1, 1]
    assert docs[0] == ["able: having the necessary means or skill."]
    assert docs[1][0] == ("depository financial institution, bank: a financial institution that accepts deposits. "
                          "He cashed a check at the bank. She put the money in the bank.")
    assert docs[2] == ["bank: sloping land (especially the slope beside a body of water). "
                       "They pulled the canoe up on the bank."]
    assert out.read_bytes() == wordnet_text.build_text(wordnet_dir)[0].encode()  # the same bytes every time


def test_evaluation_items_are_left_out(wordnet_dir, tmp_path):
    cloze = tmp_path / "cloze.tsv"
    cloze.write_text("She deposited the money in the [MASK].\tbank|vault\n", encoding="utf-8")
    text, counts = wordnet_text.build_text(wordnet_dir, [cloze])
    # "money in the bank" is the answer with the three words before the mask: that paragraph goes
    assert "money in the bank" not in text and "sloping land" in text and "deposits her paycheck" in text
    assert counts["dropped"] == 1 and counts["paragraphs"] == counts["synsets"] - 1 == 4


def test_a_file_that_is_not_wordnet_is_a_clear_error(wordnet_dir, tmp_path, capsys):
    (wordnet_dir / "data.verb").write_text("this is not a data line\n", encoding="utf-8")
    assert cli.main(["wordnet-text", str(wordnet_dir), str(tmp_path / "out.txt")]) == 2
    err = capsys.readouterr().err
    assert "data.verb:1: not a WordNet data line" in err and not (tmp_path / "out.txt").exists()
    assert cli.main(["wordnet-text", str(tmp_path / "nowhere"), str(tmp_path / "out.txt")]) == 2
    assert "apt-get install wordnet-base" in capsys.readouterr().err


def test_a_cloze_line_without_mask_is_a_clear_error(wordnet_dir, tmp_path):
    bad = tmp_path / "cloze.tsv"
    bad.write_text("No mask here.\tbank\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="cloze.tsv:1"):
        wordnet_text.build_text(wordnet_dir, [bad])


INSTALLED = Path("/usr/share/wordnet")


@pytest.mark.skipif(not (INSTALLED / "data.noun").is_file(),
                    reason="Debian's wordnet-base is not installed (.ci/run installs it)")
def test_the_shipped_models_wordnet_text_is_built_again_byte_for_byte():
    """minilm-eltec's card names the sha256 of the WordNet text it trained on; the builder gives those bytes again
    from Debian's wordnet-base, with the shipped cloze and classroom items left out."""
    from ctxmodels.paths import examples_dir

    text, counts = wordnet_text.build_text(INSTALLED, [examples_dir() / "cloze.tsv",
                                                       examples_dir() / "classroom.tsv"])
    card = (examples_dir().parent / "minilm-eltec" / "README.md").read_text(encoding="utf-8")
    sha = hashlib.sha256(text.encode()).hexdigest()
    assert f"sha256 is `{sha[:16]}…`" in card
    assert counts["documents"] == 45 and counts["dropped"] == 20


def test_an_out_that_is_one_of_the_inputs_is_refused(wordnet_dir, tmp_path, capsys):
    cloze = tmp_path / "cloze.tsv"
    cloze.write_text("She deposited the money in the [MASK].\tbank\n", encoding="utf-8")
    (tmp_path / "link").symlink_to(wordnet_dir)
    for out in (cloze, tmp_path / "link" / "data.noun", wordnet_dir / ".." / wordnet_dir.name / "data.verb"):
        before = Path(out).read_bytes()
        assert cli.main(["wordnet-text", str(wordnet_dir), str(out), "--exclude", str(cloze)]) == 2
        err = capsys.readouterr().err.strip()
        assert "overwrite" in err and "\n" not in err and Path(out).read_bytes() == before, err
