"""WordPiece tokenizer (BERT style) over the ``tokenizers`` library, keeping piece -> word -> character alignment.

Every :class:`Encoded` says which word each piece came from (``word_ids``) and which characters of its
segment's text it covers (``offsets``), so analyses can pool word pieces back into words.

What a "word" is: for a string, the pre-tokenizer's words (whitespace and punctuation split, as BERT does:
"don't" is the three words ``don ' t``); for a list of strings, exactly the given words (their text is then
``" ".join(words)`` for offsets).

The tokenizer is saved as ``vocab.txt`` (one piece a line, id = line number; what the original BERT and
``transformers.BertTokenizer`` read) and ``tokenizer.json`` (the full ``tokenizers`` pipeline), plus
``tokenizer_config.json`` (``do_lower_case``), so Hugging Face tools can read our directories too.

Every word-piece tokenizer of the package speaks one interface, :class:`PieceTokenizer`: this module's
:class:`WordPieceTokenizer` (BERT's own) and :class:`~ctxmodels.formats.transformers_tokenizer.EncoderTokenizer`
(any fast tokenizer transformers reads). Both build a text's pieces as a :class:`Segment` and place the model's
special tokens around one or two of them; cutting at a word boundary and padding a batch are shared.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, normalizers, pre_tokenizers
from tokenizers.models import WordPiece
from tokenizers.trainers import WordPieceTrainer

from .bounds import int_range
from .checkpoint import CheckpointError, write_json, write_text_atomic
from .encoding import Encoded, PieceTokenizer, Segment
from .model_files import MAX_TOKENIZER_BYTES, MAX_VOCAB_BYTES, is_dir, path_kind, read_json, read_text, require_file

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS = [PAD, UNK, CLS, SEP, MASK]  # in this order, so [PAD] = 0 in vocabularies we train


#: a ``model_max_length`` from tokenizer_config.json that counts as a limit
MAX_LENGTH = int_range(3, 1_000_000)
#: the most pieces a vocab.txt may list (BERT's vocab_size limit)
MAX_TOKENS = 10_000_000


class WordPieceTokenizer(PieceTokenizer):
    """BERT's WordPiece: BertNormalizer (clean text, CJK split, lowercase + strip accents when uncased),
    whitespace/punctuation pre-tokenisation, greedy longest-match pieces with the ``##`` prefix."""

    def __init__(self, tokenizer: Tokenizer, lowercase: bool = True, max_length: int | None = None):
        # We add [CLS]/[SEP] and truncate ourselves, so a loaded tokenizer.json's own settings must not act.
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self._tk = tokenizer
        self._lowercase = lowercase
        #: default for encode(max_length=None); load_bert sets it to the model's max_position_embeddings
        self.max_length = max_length
        vocab = tokenizer.get_vocab(with_added_tokens=True)
        missing = [t for t in SPECIAL_TOKENS if t not in vocab]
        if missing:
            raise ValueError(f"the vocabulary lacks the special tokens {missing}; BERT needs {SPECIAL_TOKENS}")
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = (vocab[t] for t in SPECIAL_TOKENS)
        self._special_ids = {self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id}
        # [MASK] typed in a text must stay one token, whatever the vocabulary learnt.
        self._tk.add_special_tokens(SPECIAL_TOKENS)

    # -- building -------------------------------------------------------------------------------------------

    @staticmethod
    def _pipeline(model: WordPiece, lowercase: bool) -> Tokenizer:
        tk = Tokenizer(model)
        # strip_accents=None follows lowercase, as in BERT: uncased models also drop accents.
        tk.normalizer = normalizers.BertNormalizer(
            clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=lowercase
        )
        tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tk.decoder = decoders.WordPiece(prefix="##")
        return tk

    @classmethod
    def train(
        cls, texts: Iterable[str], vocab_size: int = 16000, lowercase: bool = True, min_frequency: int = 2
    ) -> WordPieceTokenizer:
        """Learn a vocabulary of at most ``vocab_size`` pieces from ``texts``; [PAD] = 0, then the other specials.

        The same texts give the same vocabulary, in the same order, in every process. The ``tokenizers`` trainer
        alone does not: it numbers the continuation pieces (``##a``, ``##b``, ...) in the order it meets them in a
        hash map, which is seeded afresh in every process, and it breaks ties between equally frequent merges by
        those numbers, so both the order of vocab.txt and which merges make the cut varied from run to run. So a
        first pass (no merges) finds the continuation pieces, and the real training is given them, sorted, right
        after the special tokens: every piece then has a number that depends on the text alone. The first pass
        costs about as long as reading the text once more (half a minute on the 11-million-word ELTeC).
        """
        if vocab_size < len(SPECIAL_TOKENS) + 1:
            raise ValueError(f"vocab_size must be more than {len(SPECIAL_TOKENS)} (the special tokens)")
        texts = texts if isinstance(texts, (list, tuple)) else list(texts)
        first = cls._train_pipeline(texts, 0, lowercase, min_frequency, SPECIAL_TOKENS)
        continuation = sorted(t for t in first.get_vocab(with_added_tokens=False)
                              if t.startswith("##") and len(t) > 2 and t not in SPECIAL_TOKENS)
        tk = cls._train_pipeline(texts, vocab_size, lowercase, min_frequency, SPECIAL_TOKENS + continuation)
        vocab = tk.get_vocab(with_added_tokens=False)
        if len(vocab) <= len(SPECIAL_TOKENS):
            raise ValueError("the training text gave an empty vocabulary: is the corpus empty?")
        # The continuation pieces went in as "special tokens" only to fix their numbers: rebuild the tokenizer
        # from the learnt vocabulary, so that "##a" typed in a text is not matched as one special token.
        model = WordPiece(vocab=vocab, unk_token=UNK, max_input_chars_per_word=100, continuing_subword_prefix="##")
        return cls(cls._pipeline(model, lowercase), lowercase=lowercase)

    @classmethod
    def _train_pipeline(cls, texts: Sequence[str], vocab_size: int, lowercase: bool, min_frequency: int,
                        first_tokens: list[str]) -> Tokenizer:
        """One run of the ``tokenizers`` WordPiece trainer (``vocab_size`` 0: the alphabet only, no merges)."""
        tk = cls._pipeline(WordPiece(unk_token=UNK, max_input_chars_per_word=100), lowercase)
        trainer = WordPieceTrainer(
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            special_tokens=first_tokens,
            continuing_subword_prefix="##",
            show_progress=False,
        )
        tk.train_from_iterator(texts, trainer=trainer)
        return tk

    @classmethod
    def from_vocab(cls, vocab_file: str | Path, lowercase: bool = True, max_tokens: int = MAX_TOKENS
                   ) -> WordPieceTokenizer:
        """Build from a BERT ``vocab.txt`` (one piece a line; the id is the line number; at most ``max_tokens``)."""
        path = Path(vocab_file)
        text = read_text(path, MAX_VOCAB_BYTES, "vocabulary")
        if text.count("\n") > max_tokens:
            raise CheckpointError(f"{path}: more than {max_tokens:,} lines; not a WordPiece vocabulary")
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        vocab: dict[str, int] = {}
        for i, tok in enumerate(lines):
            vocab.setdefault(tok.rstrip("\r"), i)
        if UNK not in vocab:
            raise CheckpointError(f"{path}: no {UNK} token; is this a WordPiece vocab.txt?")
        tk = cls._pipeline(WordPiece(vocab=vocab, unk_token=UNK, max_input_chars_per_word=100), lowercase)
        try:
            return cls(tk, lowercase=lowercase)
        except ValueError as e:
            raise CheckpointError(f"{path}: {e}") from e

    @classmethod
    def load(cls, directory_or_file: str | Path) -> WordPieceTokenizer:
        """Read ``tokenizer.json`` (preferred) or ``vocab.txt``; ``tokenizer_config.json`` gives do_lower_case."""
        path = Path(directory_or_file)
        directory = path if is_dir(path) else path.parent
        config: dict = {}
        if path_kind(directory / "tokenizer_config.json") != "missing":
            config = read_json(directory / "tokenizer_config.json", "tokenizer_config.json")
        max_length = config.get("model_max_length")
        # Hugging Face writes a huge number for "no limit"; anything below 3 (begin, a piece, end) is no limit either
        try:
            max_length = max_length if MAX_LENGTH.contains(max_length) else None
        except OverflowError:  # an integer beyond any float
            max_length = None
        if is_dir(path):
            if path_kind(path / "tokenizer.json") != "missing":
                path = path / "tokenizer.json"
            elif path_kind(path / "vocab.txt") != "missing":
                path = path / "vocab.txt"
            else:
                raise CheckpointError(f"{directory}: no tokenizer.json or vocab.txt")
        require_file(path, "tokenizer file")
        if path.suffix == ".txt":
            tok = cls.from_vocab(path, lowercase=bool(config.get("do_lower_case", True)))
        else:
            tok = cls._from_tokenizer_json(path, config)
        tok.max_length = max_length
        return tok

    @classmethod
    def _from_tokenizer_json(cls, path: Path, config: dict) -> WordPieceTokenizer:
        text = read_text(path, MAX_TOKENIZER_BYTES, "tokenizer.json")
        try:
            spec = json.loads(text)
        except RecursionError:
            raise CheckpointError(f"{path}: not a readable tokenizer.json (nested too deeply)") from None
        except ValueError as e:
            raise CheckpointError(f"{path}: not a readable tokenizer.json ({e})") from None
        model = spec.get("model") if isinstance(spec, dict) else None
        kind = model.get("type") if isinstance(model, dict) else None
        if kind != "WordPiece":
            raise CheckpointError(f"{path}: the tokenizer model is {str(kind)[:60]}, not WordPiece")
        norm = spec.get("normalizer")
        norm = norm if isinstance(norm, dict) else {}
        lowercase = bool(norm.get("lowercase", config.get("do_lower_case", True)))
        try:
            tk = Tokenizer.from_str(text)
            # The post-processor (specials) is ours; the normaliser / pre-tokeniser of the file are kept as they are.
            tk.post_processor = None
            return cls(tk, lowercase=lowercase)
        except (KeyboardInterrupt, SystemExit, MemoryError):
            raise
        except BaseException as e:  # noqa: B036  tokenizers raises plain Exceptions, and panics (BaseException)
            raise CheckpointError(f"{path}: not a readable tokenizer.json ({type(e).__name__}: "
                                  f"{' '.join(str(e).split())[:300]})") from None

    def save(self, directory: str | Path) -> None:
        """Write ``vocab.txt``, ``tokenizer.json`` and ``tokenizer_config.json``."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        inv = self._id_to_token_table()
        write_text_atomic(directory / "vocab.txt", "".join(t + "\n" for t in inv))
        write_text_atomic(directory / "tokenizer.json", self._tk.to_str(pretty=True))
        config = {
            "tokenizer_class": "BertTokenizer",
            "do_lower_case": self._lowercase,
            "strip_accents": None,
            "tokenize_chinese_chars": True,
            "unk_token": UNK,
            "sep_token": SEP,
            "pad_token": PAD,
            "cls_token": CLS,
            "mask_token": MASK,
        }
        if self.max_length:
            config["model_max_length"] = self.max_length
        write_json(directory / "tokenizer_config.json", config)
        write_json(directory / "special_tokens_map.json",
                   {"unk_token": UNK, "sep_token": SEP, "pad_token": PAD, "cls_token": CLS, "mask_token": MASK})

    def _id_to_token_table(self) -> list[str]:
        vocab = self._tk.get_vocab(with_added_tokens=True)
        table = [""] * (max(vocab.values()) + 1)
        for tok, i in vocab.items():
            table[i] = tok
        for i, t in enumerate(table):
            if not t:  # a hole in a hand-made vocabulary; keep line numbers = ids
                table[i] = f"[unused{i}]"
        return table

    # -- vocabulary --------------------------------------------------------------------------------------------

    @property
    def largest_id(self) -> int:
        """The largest id the tokenizer can produce (ids may have gaps, so this can exceed ``vocab_size - 1``)."""
        return max(self._tk.get_vocab(with_added_tokens=True).values())

    def id_to_token(self, i: int) -> str:
        tok = self._tk.id_to_token(int(i))
        if tok is None:
            raise ValueError(f"id {i} is outside the vocabulary (size {self.vocab_size})")
        return tok

    def known_ids(self, size: int) -> torch.Tensor:
        """Bool [size]: True for the ids that have a token. A model may have more rows than its tokenizer has
        tokens (a vocabulary padded to a round size, or one with gaps), and those rows must never be shown."""
        known = torch.zeros(size, dtype=torch.bool)
        ids = [i for i in self._tk.get_vocab(with_added_tokens=True).values() if 0 <= i < size]
        known[ids] = True
        return known

    def is_special(self, i: int) -> bool:
        return int(i) in self._special_ids

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return self._tk.decode(list(ids), skip_special_tokens=skip_special_tokens)

    # -- encoding ---------------------------------------------------------------------------------------------

    def tokenize_words(self, text: str) -> list[list[int]]:
        """Piece ids of each word of ``text``, no special tokens (used to build pre-training data)."""
        enc = self._tk.encode(text, add_special_tokens=False)
        words: list[list[int]] = []
        last = None
        for i, w in zip(enc.ids, enc.word_ids):
            if w is None:  # a [MASK]-like special typed in the text counts as its own word
                words.append([i])
                last = None
                continue
            if w != last:
                words.append([])
                last = w
            words[-1].append(i)
        return words

    def _segment(self, text: str | list[str]) -> Segment:
        if isinstance(text, str):
            enc = self._tk.encode(text, add_special_tokens=False)
            return Segment.from_text(text, enc)
        if not all(isinstance(w, str) for w in text):
            raise ValueError("a pre-split text must be a list of strings")
        # Word i of the encoding is word i of the list, even for a word that gives no pieces ("" or a
        # control character): callers align results with their own word lists.
        words = list(text)
        enc = self._tk.encode(words, is_pretokenized=True, add_special_tokens=False) if words else None
        return Segment.from_words(words, enc)

    def encode(
        self,
        text: str | list[str],
        pair: str | list[str] | None = None,
        max_length: int | None = None,
    ) -> Encoded:
        """[CLS] text [SEP] (pair [SEP]); longer than ``max_length`` (default ``self.max_length``) pieces ->
        truncated (longest segment first) with a warning."""
        enc, n_full = self._encode(text, pair, max_length)
        if enc.truncated:
            warnings.warn(
                f"text of {n_full} word pieces (with [CLS]/[SEP]) truncated to {len(enc)} (max_length)",
                stacklevel=2,
            )
        return enc

    def encode_batch(
        self,
        texts: Sequence[str | list[str]],
        pairs: Sequence[str | list[str] | None] | None = None,
        max_length: int | None = None,
    ) -> list[Encoded]:
        if pairs is not None and len(pairs) != len(texts):
            raise ValueError(f"{len(texts)} texts but {len(pairs)} pairs")
        out, n_trunc, longest = [], 0, 0
        for i, t in enumerate(texts):
            enc, n_full = self._encode(t, pairs[i] if pairs is not None else None, max_length)
            if enc.truncated:
                n_trunc += 1
                longest = max(longest, n_full)
            out.append(enc)
        if n_trunc:
            warnings.warn(
                f"{n_trunc} of {len(texts)} texts truncated to max_length (longest had {longest} word pieces)",
                stacklevel=2,
            )
        return out

    def num_special_tokens(self, pair: bool = False) -> int:
        return 3 if pair else 2  # [CLS] A [SEP] (B [SEP])

    def _encode(self, text, pair, max_length) -> tuple[Encoded, int]:
        max_length = max_length if max_length is not None else self.max_length
        a = self._segment(text)
        b = self._segment(pair) if pair is not None else None
        n_special = self.num_special_tokens(b is not None)
        n_full = len(a) + (len(b) if b is not None else 0) + n_special
        truncated = False
        if max_length is not None and n_full > max_length:
            if max_length < n_special:
                raise ValueError(f"max_length {max_length} leaves no room for [CLS]/[SEP]")
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
        ids, tokens, types = [self.cls_id], [CLS], [0]
        word_ids: list[int | None] = [None]
        offsets = [(0, 0)]
        seq_ids: list[int | None] = [None]
        segments = [a] if b is None else [a, b]
        n_words = 0
        words: list[str] = []
        for s, seg in enumerate(segments):
            ids += seg.ids + [self.sep_id]
            tokens += seg.tokens + [SEP]
            types += [s] * (len(seg) + 1)
            word_ids += [w + n_words if w is not None else None for w in seg.word_ids] + [None]
            offsets += seg.offsets + [(0, 0)]
            seq_ids += [s] * len(seg) + [None]
            n_words += len(seg.words)
            words += seg.words
        return Encoded(ids, tokens, types, word_ids, offsets, seq_ids, words, truncated)
