"""WordPiece tokenizer: training, save/load in both formats, alignment to words and characters, truncation."""

from __future__ import annotations

import json
import warnings

import pytest

from ctxmodels.checkpoint import CheckpointError
from ctxmodels.tokenization import Encoded, WordPieceTokenizer

TEXTS = [
    "The bank of the river was steep and muddy.",
    "She deposited her savings at the bank on Monday.",
    "Bankers and banking: the banks lend money.",
    "Running, runner, runs; he ran to the riverbank.",
    "A café serves coffee near the river bank.",
] * 20


@pytest.fixture(scope="module")
def tok() -> WordPieceTokenizer:
    return WordPieceTokenizer.train(TEXTS, vocab_size=60, min_frequency=2)


def test_training_gives_specials_first_and_a_bounded_vocabulary(tok):
    assert (tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id) == (0, 1, 2, 3, 4)
    assert tok.id_to_token(0) == "[PAD]" and tok.token_to_id("[MASK]") == 4
    assert tok.vocab_size <= 60
    assert tok.lowercase
    # a vocabulary that small must split rarer words into ## pieces
    assert any(t.startswith("##") for t in tok.encode("bankers banking riverbank").tokens)


def test_encoding_adds_cls_sep_and_aligns_pieces_to_words_and_characters(tok):
    text = "The Bankers' café,  Running"
    enc = tok.encode(text)
    assert enc.tokens[0] == "[CLS]" and enc.tokens[-1] == "[SEP]"
    assert enc.word_ids[0] is None and enc.word_ids[-1] is None
    assert enc.words == ["The", "Bankers", "'", "café", ",", "Running"]  # BERT splits punctuation off
    for i, (w, (s, e)) in enumerate(zip(enc.word_ids, enc.offsets)):
        if w is None:
            assert (s, e) == (0, 0) and enc.sequence_ids[i] is None
            continue
        assert text[s:e] in enc.words[w]  # each piece's characters lie inside its word
        piece = enc.tokens[i].removeprefix("##")
        if piece != "[UNK]":
            assert text[s:e].lower().replace("é", "e") == piece  # uncased BERT strips accents
    # the pieces of a word cover it exactly
    for w, word in enumerate(enc.words):
        pieces = enc.word_pieces(w)
        assert pieces == list(range(pieces[0], pieces[-1] + 1))
        assert text[enc.offsets[pieces[0]][0]:enc.offsets[pieces[-1]][1]] == word


def test_pre_split_words_keep_their_numbering(tok):
    words = ["The", "riverbank", "", "banks"]
    enc = tok.encode(words)
    assert enc.words == words
    assert sorted({w for w in enc.word_ids if w is not None}) == [0, 1, 3]  # "" gives no pieces
    joined = " ".join(words)
    for i, w in enumerate(enc.word_ids):
        if w is not None:
            s, e = enc.offsets[i]
            assert joined[s:e] in words[w]


def test_pairs_continue_word_numbering_and_set_segment_ids(tok):
    enc = tok.encode("the bank", "money lends")
    assert enc.tokens.count("[SEP]") == 2
    assert enc.words == ["the", "bank", "money", "lends"]
    sep1 = enc.tokens.index("[SEP]")
    assert set(enc.type_ids[: sep1 + 1]) == {0} and set(enc.type_ids[sep1 + 1:]) == {1}
    b_words = {w for w, s in zip(enc.word_ids, enc.sequence_ids) if s == 1}
    assert b_words == {2, 3}
    money = enc.word_pieces(2)
    # offsets are within segment B's own text
    assert enc.offsets[money[0]][0] == 0 and enc.offsets[money[-1]][1] == 5


def test_emoji_accents_and_empty_text_do_not_crash(tok):
    assert tok.encode("").tokens == ["[CLS]", "[SEP]"]
    assert tok.encode("   ").tokens == ["[CLS]", "[SEP]"]
    assert tok.encode([]).tokens == ["[CLS]", "[SEP]"]
    enc = tok.encode("café 😀 Ñandú")
    assert "[UNK]" in enc.tokens
    assert enc.words == ["café", "😀", "Ñandú"]
    assert tok.encode("the [MASK] bank").ids[2] == tok.mask_id


def test_truncation_warns_and_keeps_alignment(tok):
    text = " ".join(["the river bank"] * 10)
    with pytest.warns(UserWarning, match="truncated"):
        enc = tok.encode(text, max_length=8)
    assert len(enc) == 8 and enc.truncated and enc.tokens[-1] == "[SEP]"
    assert max(w for w in enc.word_ids if w is not None) == len(enc.words) - 1
    with pytest.warns(UserWarning, match="truncated"):
        pair = tok.encode(text, "money", max_length=10)
    assert len(pair) == 10 and pair.tokens.count("[SEP]") == 2
    assert pair.words[-1] == "money" and pair.sequence_ids.count(1) == len(pair.word_pieces(len(pair.words) - 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not tok.encode("the bank", max_length=8).truncated
    tok.max_length = 6
    try:
        with pytest.warns(UserWarning, match="1 of 2 texts truncated"):
            batch = tok.encode_batch(["the bank", text])
        assert [len(e) for e in batch] == [4, 6]
    finally:
        tok.max_length = None
    with pytest.raises(ValueError, match="no room"):
        tok.encode("x", "y", max_length=2)


def _assert_same(a: Encoded, b: Encoded):
    assert a == b


def test_save_and_load_both_formats_encode_identically(tok, tmp_path):
    tok.save(tmp_path)
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json"):
        assert (tmp_path / name).is_file()
    vocab = (tmp_path / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] and len(vocab) == tok.vocab_size
    from_dir = WordPieceTokenizer.load(tmp_path)
    from_json = WordPieceTokenizer.load(tmp_path / "tokenizer.json")
    from_vocab = WordPieceTokenizer.load(tmp_path / "vocab.txt")
    samples = ["The Bankers' café, Running 😀 [MASK]", "", "riverbanks lend"]
    for t in [from_dir, from_json, from_vocab]:
        assert t.vocab_size == tok.vocab_size and t.lowercase
        for s in samples:
            _assert_same(t.encode(s), tok.encode(s))
        _assert_same(t.encode(["Banks", "café"], "the river"), tok.encode(["Banks", "café"], "the river"))


def test_cased_tokenizer_keeps_case(tmp_path):
    cased = WordPieceTokenizer.train(TEXTS, vocab_size=150, lowercase=False)
    assert not cased.lowercase
    assert "The" in cased.encode("The bank").tokens
    cased.save(tmp_path)
    assert json.loads((tmp_path / "tokenizer_config.json").read_text())["do_lower_case"] is False
    (tmp_path / "tokenizer.json").unlink()
    again = WordPieceTokenizer.load(tmp_path)  # vocab.txt + do_lower_case=false
    assert not again.lowercase and again.encode("The bank") == cased.encode("The bank")


def test_tokenize_words_groups_pieces_by_word(tok):
    words = tok.tokenize_words("Bankers lend, the [MASK] rivers")
    flat = tok.encode("Bankers lend, the [MASK] rivers")
    assert [i for w in words for i in w] == flat.ids[1:-1]
    assert len(words) == len(flat.words)


def test_collate_pads_to_the_longest(tok):
    batch = tok.collate(tok.encode_batch(["the bank", "the river bank was steep"]))
    assert batch["input_ids"].shape == batch["attention_mask"].shape
    assert batch["attention_mask"][0].sum() == 4 and batch["input_ids"][0, -1] == tok.pad_id


def test_bad_tokenizer_files_are_clear_errors(tmp_path):
    with pytest.raises(CheckpointError, match="no tokenizer.json or vocab.txt"):
        WordPieceTokenizer.load(tmp_path)
    (tmp_path / "tokenizer.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(CheckpointError, match="tokenizer.json"):
        WordPieceTokenizer.load(tmp_path)
    (tmp_path / "tokenizer.json").unlink()
    (tmp_path / "vocab.txt").write_text("a\nb\n", encoding="utf-8")
    with pytest.raises(CheckpointError, match="vocab.txt"):
        WordPieceTokenizer.load(tmp_path)
    with pytest.raises(ValueError, match="empty vocabulary"):
        WordPieceTokenizer.train(["", "   "], vocab_size=100)
