"""The one interface of the package's word-piece tokenizers: :class:`Encoded` (an encoded text, every piece aligned
to its word and characters), :class:`Segment` (one text's pieces before the specials are placed) and
:class:`PieceTokenizer`, which :class:`~ctxmodels.tokenization.WordPieceTokenizer` (BERT's own WordPiece) and
:class:`~ctxmodels.formats.transformers_tokenizer.EncoderTokenizer` (any fast tokenizer transformers reads) both
implement. Pooling, attention, fill-in and fine-tuning code is written against this interface alone.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch


@dataclass
class Encoded:
    """One encoded text (or text pair), [CLS] and [SEP] included."""

    ids: list[int]
    tokens: list[str]
    type_ids: list[int]
    word_ids: list[int | None]  # word index of each piece; None for specials; segment B continues after A
    offsets: list[tuple[int, int]]  # character span in its own segment's text; (0, 0) for specials
    sequence_ids: list[int | None]  # 0 = segment A, 1 = segment B, None = special
    words: list[str]  # the words, A's then B's, as written in the input (original case and accents)
    truncated: bool = False

    def __len__(self) -> int:
        return len(self.ids)

    def word_pieces(self, word: int) -> list[int]:
        """Positions of the pieces of word ``word``."""
        return [i for i, w in enumerate(self.word_ids) if w == word]


@dataclass
class Segment:
    """One text's pieces without specials: word ids local (0-based), words compact. ``enc`` is the backend encoding
    the pieces came from, for a tokenizer whose own template places the specials (cut along with the lists)."""

    ids: list[int]
    tokens: list[str]
    word_ids: list[int | None]
    offsets: list[tuple[int, int]]
    words: list[str]
    enc: Any = None

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def from_text(cls, text: str, enc: Any) -> Segment:
        """The pieces of ``text`` as the backend split it; a word is what its pre-tokenizer made one."""
        word_ids: list[int | None] = []
        spans: list[list[int]] = []  # [start, end] per word, in order of appearance
        remap: dict[int, int] = {}
        for w, (s, e) in zip(enc.word_ids, enc.offsets):
            if w is None:  # special token typed in the text ([MASK]): a word of its own
                spans.append([s, e])
                word_ids.append(len(spans) - 1)
                continue
            if w not in remap:
                remap[w] = len(spans)
                spans.append([s, e])
            k = remap[w]
            spans[k][0], spans[k][1] = min(spans[k][0], s), max(spans[k][1], e)
            word_ids.append(k)
        words = [text[s:e] for s, e in spans]
        return cls(list(enc.ids), list(enc.tokens), word_ids, [tuple(o) for o in enc.offsets], words)

    @classmethod
    def from_words(cls, words: list[str], enc: Any) -> Segment:
        """The pieces of pre-split ``words`` (``enc`` None: no words); offsets count in ``" ".join(words)``."""
        if enc is None:
            return cls([], [], [], [], [])
        # Offsets from tokenizers are per word; shift them into " ".join(words).
        starts, pos = [], 0
        for w in words:
            starts.append(pos)
            pos += len(w) + 1
        word_ids: list[int | None] = []
        offsets = []
        for w, (s, e) in zip(enc.word_ids, enc.offsets):
            word_ids.append(w)
            offsets.append((starts[w] + s, starts[w] + e) if w is not None else (0, 0))
        return cls(list(enc.ids), list(enc.tokens), word_ids, offsets, list(words))

    def window(self, start: int, end: int) -> Segment:
        """Pieces ``start`` to ``end`` (exclusive) as a segment of their own: word ids from 0, offsets unchanged (in
        the whole text), the backend encoding copied and cut to the same pieces."""
        word_ids = self.word_ids[start:end]
        kept = [w for w in word_ids if w is not None]
        first, last = (min(kept), max(kept)) if kept else (0, -1)
        enc = None
        if self.enc is not None:
            enc = copy.deepcopy(self.enc)
            enc.truncate(end, direction="right")
            enc.truncate(end - start, direction="left")
        return Segment(self.ids[start:end], self.tokens[start:end], [w - first if w is not None else None
                                                                     for w in word_ids],
                       self.offsets[start:end], self.words[first : last + 1], enc)

    def cut(self, n: int) -> Segment:
        """The first ``n`` pieces; words after the last kept piece are dropped (a word cut in half is kept)."""
        if n >= len(self):
            return self
        if self.enc is not None:
            self.enc.truncate(n)
        word_ids = self.word_ids[:n]
        last = max((w for w in word_ids if w is not None), default=-1)
        return Segment(self.ids[:n], self.tokens[:n], word_ids, self.offsets[:n], self.words[: last + 1], self.enc)


class PieceTokenizer(ABC):
    """The interface of every word-piece tokenizer here: text (a string, or a list of words) in, :class:`Encoded`
    out, with the model's special tokens placed and every piece aligned to its word. Pooling, attention, fill-in
    and fine-tuning code is written against this interface alone.

    A subclass provides the vocabulary (``token_to_id``, ``id_to_token``, ``known_ids``, ``is_special``,
    ``decode``), :meth:`_segment` (one text's pieces), :meth:`_assemble` (one or two segments in the model's
    template), :meth:`num_special_tokens`, and :meth:`encode` / :meth:`encode_batch` (which truncate with a
    warning); cutting at a word boundary (:meth:`encode_words`) and padding (:meth:`collate`) are shared."""

    #: the default ``max_length`` of :meth:`encode` (None: no limit)
    max_length: int | None
    pad_id: int
    unk_id: int | None
    cls_id: int | None
    sep_id: int | None
    mask_id: int | None
    #: whether the model reads token type ids (BERT does; RoBERTa and DistilBERT take none)
    uses_token_types: bool = True

    # -- vocabulary ----------------------------------------------------------------------------------------------

    # Both tokenizers here wrap a ``tokenizers.Tokenizer`` (``_tk``) and know whether it lowercases (``_lowercase``);
    # what follows only reads those two, so it is written once.
    _tk: Any
    _lowercase: bool

    @property
    def vocab_size(self) -> int:
        return self._tk.get_vocab_size(with_added_tokens=True)

    @property
    @abstractmethod
    def largest_id(self) -> int:
        """The largest id the tokenizer can produce (ids may have gaps, so this can exceed ``vocab_size - 1``)."""

    @property
    def lowercase(self) -> bool:
        return self._lowercase

    @property
    def backend(self) -> Any:
        """The underlying ``tokenizers.Tokenizer`` (no truncation, no padding, no special tokens added)."""
        return self._tk

    def token_to_id(self, token: str) -> int | None:
        return self._tk.token_to_id(token)

    @abstractmethod
    def id_to_token(self, i: int) -> str:
        """The token in BERT's convention: a word-initial piece as its text, a continuing piece as ``##piece``."""

    @abstractmethod
    def known_ids(self, size: int) -> torch.Tensor:
        """Bool [size]: True for the ids that have a token (a model may have more rows than its tokenizer has
        tokens, and those rows must never be shown)."""

    @abstractmethod
    def is_special(self, i: int) -> bool: ...

    @abstractmethod
    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str: ...

    # -- encoding ------------------------------------------------------------------------------------------------

    @abstractmethod
    def encode(self, text: str | list[str], pair: str | list[str] | None = None,
               max_length: int | None = None) -> Encoded:
        """The model's template around ``text`` (and ``pair``), truncated to ``max_length`` (default
        ``self.max_length``) pieces, longest segment first, with a warning."""

    @abstractmethod
    def encode_batch(self, texts: Sequence[str | list[str]], pairs: Sequence[str | list[str] | None] | None = None,
                     max_length: int | None = None) -> list[Encoded]: ...

    @abstractmethod
    def num_special_tokens(self, pair: bool = False) -> int:
        """How many special tokens the template adds around one text (or a pair)."""

    @abstractmethod
    def _segment(self, text: str | list[str]) -> Segment:
        """One text's pieces, no specials."""

    @abstractmethod
    def _assemble(self, a: Segment, b: Segment | None, truncated: bool) -> Encoded:
        """``a`` (and ``b``) inside the model's template."""

    def encode_words(self, words: list[str], max_length: int) -> tuple[Encoded, bool]:
        """``words`` in the template, cut at a word boundary to at most ``max_length`` pieces (specials included):
        a word is whole or absent. (encoding, whether words were cut off); no warning."""
        a = self._segment(list(words))
        budget = max_length - self.num_special_tokens(pair=False)
        if len(a) <= budget:
            return self._assemble(a, None, False), False
        keep = max(budget, 0)
        while keep > 0 and a.word_ids[keep] is not None and a.word_ids[keep - 1] == a.word_ids[keep]:
            keep -= 1
        return self._assemble(a.cut(keep), None, True), True

    def encode_word_pair(self, a: list[str], b: list[str], max_length: int) -> tuple[Encoded, int]:
        """Two pre-split texts in the pair template ([CLS] a [SEP] b [SEP] for BERT, token types 0 and 1), the longer
        one losing its last word until both fit in ``max_length`` pieces: (encoding, words cut off); no warning."""
        sa, sb = self._segment(list(a)), self._segment(list(b))
        budget = max_length - self.num_special_tokens(pair=True)

        def pieces(seg: Segment, words: int) -> int:
            return sum(1 for w in seg.word_ids if w is not None and w < words)

        na, nb = len(a), len(b)
        while pieces(sa, na) + pieces(sb, nb) > budget and na + nb > 0:
            if pieces(sa, na) >= pieces(sb, nb):
                na -= 1
            else:
                nb -= 1
        cut = len(a) - na + len(b) - nb
        return self._assemble(sa.cut(pieces(sa, na)), sb.cut(pieces(sb, nb)), cut > 0), cut

    def encode_windows(self, question: str, context: str, max_length: int, stride: int | None = None,
                       max_question: int = 64) -> list[Encoded]:
        """``question`` and ``context`` in the model's pair template ([CLS] question [SEP] context [SEP] for BERT),
        one encoding per window of the context's pieces when they do not fit in ``max_length`` (extractive question
        answering, as BERT's SQuAD recipe splits long documents): the question keeps its first ``max_question``
        pieces (at most half of what the specials leave); each window starts ``stride`` pieces after the one before
        (default: half a window, so every piece is in two windows), the last one ends with the context. ``offsets``
        of the context's pieces count in ``context``; ``sequence_ids`` tell them (1) from the question's (0) and the
        specials (None)."""
        q = self._segment(question)
        free = max_length - self.num_special_tokens(pair=True)
        q = q.cut(min(len(q), max_question, max(free // 2, 1)))  # a long question leaves the context half the room
        c = self._segment(context)
        room = free - len(q)
        if room < 1:
            raise ValueError(f"max_length {max_length} leaves no room for the context beside a question of "
                             f"{len(q)} pieces and the special tokens")
        step = max(1, min(room, stride if stride is not None else room // 2))
        out, start = [], 0
        while True:
            end = min(len(c), start + room)
            out.append(self._assemble(q, c.window(start, end), end - start < len(c)))
            if end >= len(c):
                return out
            start += step

    def collate(self, encodings: Sequence[Encoded], device: torch.device | str | None = None
                ) -> dict[str, torch.Tensor]:
        """Pad a batch to its longest member: input_ids, token_type_ids (for a model that reads them) and
        attention_mask (1 = real token)."""
        if not encodings:
            raise ValueError("collate needs at least one encoding")
        T = max(len(e) for e in encodings)
        ids = torch.full((len(encodings), T), self.pad_id, dtype=torch.long)
        types = torch.zeros((len(encodings), T), dtype=torch.long)
        mask = torch.zeros((len(encodings), T), dtype=torch.long)
        for i, e in enumerate(encodings):
            n = len(e)
            ids[i, :n] = torch.tensor(e.ids)
            types[i, :n] = torch.tensor(e.type_ids)
            mask[i, :n] = 1
        batch = {"input_ids": ids, "token_type_ids": types, "attention_mask": mask}
        if not self.uses_token_types:
            del batch["token_type_ids"]
        return {k: v.to(device) for k, v in batch.items()} if device is not None else batch
