"""The tokenizer of an encoder read through transformers (:mod:`ctxmodels.formats.transformers_models`):
:class:`EncoderTokenizer`, the folder's fast tokenizer behind :class:`~ctxmodels.encoding.PieceTokenizer`, the
interface our WordPiece has too, so pooling, attention, fill-in and fine-tuning code needs no second version.

What it returns:

- words: for a list of words, exactly those words (byte-level BPE and SentencePiece pieces get the word-initial
  space mark on every word, as ``add_prefix_space=True`` gives, so a word is split the same wherever it stands);
  for a string, the tokenizer's own pre-tokenizer words, the space marks not counted as part of a word;
- tokens are shown in BERT's convention whatever the tokenizer's marks (``Ġ``, ``▁``): the first piece of a word
  as its text, a later piece as ``##piece``; the template's special tokens as the model writes them
  (``<s>``, ``</s>``, ``[CLS]``);
- ``[MASK]`` (the one blank the user types) becomes the tokenizer's own mask token (``<mask>`` for RoBERTa);
- [CLS]/[SEP]-style specials come from the tokenizer's own template (its post-processor), pairs included.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import torch

from ..encoding import Encoded, PieceTokenizer, Segment
from ..tokenization import MASK


class EncoderTokenizer(PieceTokenizer):
    """A fast transformers tokenizer behind :class:`~ctxmodels.encoding.PieceTokenizer`, the interface our
    WordPiece has too (see the module docstring for what it returns)."""

    def __init__(self, fast: Any, max_length: int | None = None):
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers

        self.fast = fast
        limit = getattr(fast, "model_max_length", None)
        self.max_length = max_length or (limit if isinstance(limit, int) and 3 <= limit <= 1_000_000 else None)
        self._tk = Tokenizer.from_str(fast.backend_tokenizer.to_str())
        self._tk.no_truncation()
        self._tk.no_padding()
        # Words given one by one get the word-initial mark each (add_prefix_space): a second copy for them.
        self._words_tk = Tokenizer.from_str(self._tk.to_str())
        pre = self._words_tk.pre_tokenizer
        if isinstance(pre, pre_tokenizers.ByteLevel):
            pre.add_prefix_space = True
            self._words_tk.pre_tokenizer = pre
        elif isinstance(pre, pre_tokenizers.Metaspace):
            pre.prepend_scheme = "always"
            self._words_tk.pre_tokenizer = pre
        model = self._tk.model
        self.style = ("wordpiece" if isinstance(model, models.WordPiece) else
                      "bytelevel" if isinstance(pre, pre_tokenizers.ByteLevel) else "sentencepiece")
        self._byte_decoder = decoders.ByteLevel() if self.style == "bytelevel" else None
        self.mask_token = fast.mask_token if fast.mask_token_id is not None else None
        self.mask_id = fast.mask_token_id
        self.cls_id, self.sep_id = fast.cls_token_id, fast.sep_token_id
        self.pad_id = fast.pad_token_id if fast.pad_token_id is not None else 0
        self.unk_id = fast.unk_token_id
        self._special_ids = {int(i) for i in fast.all_special_ids if i is not None}
        self.uses_token_types = "token_type_ids" in fast.model_input_names
        vocab = self._tk.get_vocab(with_added_tokens=True)
        self._table: dict[int, str] = {i: t for t, i in vocab.items()}
        self._readable: dict[int, str] = {}
        normalizer = self._tk.normalizer
        self._lowercase = bool(normalizer is not None and normalizer.normalize_str("A") == "a")

    # -- vocabulary --------------------------------------------------------------------------------------------

    @property
    def largest_id(self) -> int:
        return max(self._table)

    def raw_token(self, i: int) -> str:
        """The token as the vocabulary writes it (``Ġbank``, ``▁bank``, ``##s``)."""
        tok = self._table.get(int(i))
        if tok is None:
            raise ValueError(f"id {i} is outside the vocabulary (size {self.vocab_size})")
        return tok

    def _text_of(self, token: str) -> tuple[str, bool | None]:
        """(the token's text, whether it starts a word: True / False, or None when the token does not say)."""
        if self.style == "wordpiece":
            return (token[2:], False) if token.startswith("##") and len(token) > 2 else (token, None)
        if self.style == "bytelevel":
            text = self._byte_decoder.decode([token])
            if "\ufffd" in text:  # part of a character's bytes: shown as the vocabulary writes it
                return (token[1:], True) if token.startswith("Ġ") and len(token) > 1 else (token, False)
            return (text.lstrip(" "), True) if text.startswith(" ") else (text, False)
        return (token[1:].replace("▁", " "), True) if token.startswith("▁") else (token.replace("▁", " "), False)

    def id_to_token(self, i: int) -> str:
        """The token in BERT's convention: a word-initial piece as its text, a continuing piece as ``##piece``,
        specials as they are."""
        i = int(i)
        if i not in self._readable:
            tok = self.raw_token(i)
            text, starts = self._text_of(tok)
            if i in self._special_ids or self.style == "wordpiece" or not text:
                self._readable[i] = tok  # specials, WordPiece's own convention, a bare space mark
            else:
                self._readable[i] = "##" + text if starts is False else text
        return self._readable[i]

    def known_ids(self, size: int) -> torch.Tensor:
        known = torch.zeros(size, dtype=torch.bool)
        known[[i for i in self._table if 0 <= i < size]] = True
        return known

    def is_special(self, i: int) -> bool:
        return int(i) in self._special_ids

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return self._tk.decode(list(ids), skip_special_tokens=skip_special_tokens)

    # -- encoding ---------------------------------------------------------------------------------------------

    def _with_mask(self, text: str) -> str:
        return text.replace(MASK, self.mask_token) if self.mask_token and MASK in text else text

    def _segment(self, text: str | list[str]) -> Segment:
        if isinstance(text, str):
            return self._text_segment(text)
        if not all(isinstance(w, str) for w in text):
            raise ValueError("a pre-split text must be a list of strings")
        words = list(text)
        given = [self.mask_token if (w == MASK and self.mask_token) else w for w in words]
        enc = self._words_tk.encode(given, is_pretokenized=True, add_special_tokens=False) if words else \
            self._words_tk.encode("", add_special_tokens=False)
        starts, pos = [], 0
        for w in words:  # offsets from tokenizers are per word: shift them into " ".join(words)
            starts.append(pos)
            pos += len(w) + 1
        word_ids: list[int | None] = list(enc.word_ids)
        offsets = [(starts[w] + s, starts[w] + e) if w is not None else (0, 0)
                   for w, (s, e) in zip(word_ids, enc.offsets)]
        return Segment(list(enc.ids), self._shown_tokens(enc.ids, word_ids), word_ids, offsets, words, enc)

    def _text_segment(self, text: str) -> Segment:
        source = self._with_mask(text)
        enc = self._tk.encode(source, add_special_tokens=False)
        # Words from the pre-tokenizer's word ids; a piece that is only a space mark ("Ġ" or "▁" before a word the
        # vocabulary splits off) joins the word after it.
        groups: list[tuple[int | None, list[int]]] = []  # (backend word, piece positions)
        for p, w in enumerate(enc.word_ids):
            if groups and groups[-1][0] == w and w is not None:
                groups[-1][1].append(p)
            else:
                groups.append((w, [p]))
        spans: list[list[int]] = []
        word_ids: list[int | None] = [None] * len(enc.ids)
        carry: list[int] = []
        for _, positions in groups:
            s = min(enc.offsets[p][0] for p in positions)
            e = max(enc.offsets[p][1] for p in positions)
            while s < e and source[s].isspace():
                s += 1
            if s >= e:  # a space alone: part of the next word
                carry += positions
                continue
            spans.append([s, e])
            for p in carry + positions:
                word_ids[p] = len(spans) - 1
            carry = []
        if carry and spans:
            for p in carry:
                word_ids[p] = len(spans) - 1
        words = []
        for s, e in spans:
            w = source[s:e]
            words.append(MASK if self.mask_token and w == self.mask_token else w)
        offsets = [tuple(o) for o in enc.offsets]
        return Segment(list(enc.ids), self._shown_tokens(enc.ids, word_ids), word_ids, offsets, words, enc)

    def _shown_tokens(self, ids: Sequence[int], word_ids: Sequence[int | None]) -> list[str]:
        """Tokens in BERT's convention by position: a word's first piece as its text, a later one as ##piece."""
        out, previous = [], None
        for i, w in zip(ids, word_ids):
            tok = self.raw_token(i)
            if self.style == "wordpiece" or int(i) in self._special_ids:
                out.append(tok)
            else:
                text, _ = self._text_of(tok)
                text = text or tok
                out.append(("##" + text) if (w is not None and w == previous) else text)
            previous = w
        return out

    def encode(self, text: str | list[str], pair: str | list[str] | None = None,
               max_length: int | None = None) -> Encoded:
        """The model's template around ``text`` (and ``pair``); longer than ``max_length`` (default
        ``self.max_length``) pieces -> truncated, longest segment first, with a warning."""
        enc, n_full = self._encode(text, pair, max_length)
        if enc.truncated:
            warnings.warn(f"text of {n_full} word pieces (with the special tokens) truncated to {len(enc)} "
                          "(max_length)", stacklevel=2)
        return enc

    def num_special_tokens(self, pair: bool = False) -> int:
        return self._tk.num_special_tokens_to_add(pair)

    def _encode(self, text, pair, max_length) -> tuple[Encoded, int]:
        if max_length is None:
            max_length = self.max_length
        a = self._segment(text)
        b = self._segment(pair) if pair is not None else None
        n_special = self.num_special_tokens(b is not None)
        n_full = len(a) + (len(b) if b is not None else 0) + n_special
        truncated = False
        if max_length is not None and n_full > max_length:
            if max_length <= n_special:
                raise ValueError(f"max_length {max_length} leaves no room beside the {n_special} special tokens")
            budget = max_length - n_special
            na, nb = len(a), len(b) if b is not None else 0
            while na + nb > budget:  # longest first, as BERT's pre-processing does
                if na >= nb:
                    na -= 1
                else:
                    nb -= 1
            a = a.cut(na)
            b = b.cut(nb) if b is not None else None
            truncated = True
        return self._assemble(a, b, truncated), n_full

    def _assemble(self, a: Segment, b: Segment | None, truncated: bool) -> Encoded:
        """The tokenizer's own post-processor places the specials and the token types; our lists fill the rest."""
        full = self._tk.post_process(a.enc, b.enc if b is not None else None, add_special_tokens=True)
        # The template's own tokens are marked in special_tokens_mask (a [MASK] typed in the text is not); the
        # others are A's pieces, then B's, in order. (post_process leaves A's sequence ids unset in a pair.)
        pieces = [(0, k) for k in range(len(a))] + ([(1, k) for k in range(len(b))] if b is not None else [])
        if len(full.ids) - sum(full.special_tokens_mask) != len(pieces):
            raise ValueError("the tokenizer's template changed the text's pieces; it cannot be aligned with words")
        segments = [a] if b is None else [a, b]
        shift = [0, len(a.words)]
        ids, tokens, word_ids, offsets, seq_ids = [], [], [], [], []
        n = 0
        for i, special in zip(full.ids, full.special_tokens_mask):
            if special:
                ids.append(i)
                tokens.append(self.raw_token(i))
                word_ids.append(None)
                offsets.append((0, 0))
                seq_ids.append(None)
                continue
            s, k = pieces[n]
            n += 1
            seg = segments[s]
            ids.append(seg.ids[k])
            tokens.append(seg.tokens[k])
            w = seg.word_ids[k]
            word_ids.append(w + shift[s] if w is not None else None)
            offsets.append(seg.offsets[k])
            seq_ids.append(s)
        types = list(full.type_ids) if self.uses_token_types else [0] * len(ids)
        words = a.words + (b.words if b is not None else [])
        return Encoded(ids, tokens, types, word_ids, offsets, seq_ids, words, truncated)

    def encode_batch(self, texts: Sequence[str | list[str]], pairs: Sequence[str | list[str] | None] | None = None,
                     max_length: int | None = None) -> list[Encoded]:
        if pairs is not None and len(pairs) != len(texts):
            raise ValueError(f"{len(texts)} texts but {len(pairs)} pairs")
        out = [self._encode(t, pairs[i] if pairs is not None else None, max_length)[0] for i, t in enumerate(texts)]
        n = sum(e.truncated for e in out)
        if n:
            warnings.warn(f"{n} of {len(texts)} texts truncated to max_length", stacklevel=2)
        return out
