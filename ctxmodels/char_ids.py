"""Character ids as the published ELMo models define them (bilm-tf / AllenNLP).

A word becomes 50 ids: begin-of-word, the word's UTF-8 bytes (cut to 48), end-of-word, then padding.
The sentence boundaries ``<S>`` and ``</S>`` get their own reserved ids. Every id is shifted by +1 so that 0
means "no token here" (a padded position of the batch). Because the input is bytes, every Unicode word gets
ids: the model has no out-of-vocabulary words on the input side.
"""

from __future__ import annotations

import torch

MAX_CHARS = 50
BOS_CHAR = 256  # begin of sentence
EOS_CHAR = 257  # end of sentence
BOW_CHAR = 258  # begin of word
EOW_CHAR = 259  # end of word
PAD_CHAR = 260  # padding inside a word
N_CHARACTERS = 262  # 261 ids above, +1 for the padding id 0

BOS_TOKEN = "<S>"
EOS_TOKEN = "</S>"


def _boundary_ids(char: int, max_chars: int) -> list[int]:
    ids = [PAD_CHAR] * max_chars
    ids[0], ids[1], ids[2] = BOW_CHAR, char, EOW_CHAR
    return [i + 1 for i in ids]


def word_to_char_ids(word: str, max_chars: int = MAX_CHARS) -> list[int]:
    """The ``max_chars`` character ids of one word, shifted by +1 so that 0 is padding.

    ``<S>`` and ``</S>`` map to the sentence-boundary ids, as in the published models.
    """
    if not isinstance(word, str):
        raise ValueError(f"a word must be a str, got {type(word).__name__}")
    if max_chars < 3:
        raise ValueError(f"max_chars must be at least 3 (begin, one character, end), got {max_chars}")
    if word == BOS_TOKEN:
        return _boundary_ids(BOS_CHAR, max_chars)
    if word == EOS_TOKEN:
        return _boundary_ids(EOS_CHAR, max_chars)
    # "ignore" drops lone surrogates (which cannot be encoded) instead of failing on odd input.
    encoded = word.encode("utf-8", "ignore")[: max_chars - 2]
    ids = [PAD_CHAR] * max_chars
    ids[0] = BOW_CHAR
    ids[1 : len(encoded) + 1] = list(encoded)
    ids[len(encoded) + 1] = EOW_CHAR
    return [i + 1 for i in ids]


def batch_to_char_ids(
    sentences: list[list[str]], add_boundaries: bool = True, max_chars: int = MAX_CHARS
) -> tuple[torch.Tensor, torch.Tensor]:
    """Character ids for a batch of tokenised sentences.

    Returns ``char_ids`` LongTensor [B, T, max_chars] and ``mask`` BoolTensor [B, T] (True = real token),
    where T is the longest sentence (+2 with ``add_boundaries``, which puts ``<S>`` before and ``</S>`` after
    every sentence). Shorter sentences are padded at the end with id 0. An empty sentence keeps its
    boundaries (or is all padding without them).
    """
    if isinstance(sentences, str) or not isinstance(sentences, (list, tuple)):
        raise ValueError("sentences must be a list of tokenised sentences (lists of words), e.g. [['a', 'b']]")
    for i, s in enumerate(sentences):
        if isinstance(s, str) or not isinstance(s, (list, tuple)):
            raise ValueError(f"sentence {i} must be a list of words, got {type(s).__name__}; split it into words first")
    rows = [[BOS_TOKEN, *s, EOS_TOKEN] if add_boundaries else list(s) for s in sentences]
    width = max((len(r) for r in rows), default=0)
    char_ids = torch.zeros(len(rows), width, max_chars, dtype=torch.long)
    mask = torch.zeros(len(rows), width, dtype=torch.bool)
    cache: dict[str, list[int]] = {}
    for b, row in enumerate(rows):
        if not row:
            continue
        ids = []
        for word in row:
            if word not in cache:
                cache[word] = word_to_char_ids(word, max_chars)
            ids.append(cache[word])
        char_ids[b, : len(row)] = torch.tensor(ids, dtype=torch.long)
        mask[b, : len(row)] = True
    return char_ids, mask
