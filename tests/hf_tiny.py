"""Tiny random encoders of every family transformers reads, with tokenizers trained on the fly (tests only)."""

from __future__ import annotations

import shutil
from pathlib import Path

import torch
import transformers
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

TEXTS = [
    "The old bank by the river was steep and muddy.",
    "She deposited the cheque at the bank yesterday morning.",
    "The bankers were banking on the riverside cafe.",
    "A river runs past the town and the bank holds money.",
    "Interest rates rose, so the bank raised its rates again.",
] * 4

FAMILIES = ("bert", "roberta", "distilbert", "albert", "electra-generator", "electra-discriminator", "deberta-v2")
SIZE = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37)


def _wordpiece(vocab_size: int = 100) -> Tokenizer:
    tk = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tk.normalizer = normalizers.BertNormalizer(lowercase=True)
    tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tk.decoder = decoders.WordPiece()
    tk.train_from_iterator(TEXTS, trainers.WordPieceTrainer(
        vocab_size=vocab_size, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], show_progress=False))
    cls, sep = tk.token_to_id("[CLS]"), tk.token_to_id("[SEP]")
    tk.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return tk


def _bytelevel(vocab_size: int = 320) -> Tokenizer:
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.train_from_iterator(TEXTS, trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    tk.post_processor = processors.RobertaProcessing(("</s>", tk.token_to_id("</s>")), ("<s>", tk.token_to_id("<s>")))
    return tk


def _unigram(specials: list[str], lowercase: bool, vocab_size: int = 150) -> Tokenizer:
    tk = Tokenizer(models.Unigram())
    if lowercase:
        tk.normalizer = normalizers.Lowercase()
    tk.pre_tokenizer = pre_tokenizers.Metaspace()
    tk.decoder = decoders.Metaspace()
    unk = [t for t in specials if "unk" in t.lower()][0]
    tk.train_from_iterator(TEXTS, trainers.UnigramTrainer(vocab_size=vocab_size, special_tokens=specials,
                                                          show_progress=False, unk_token=unk))
    cls, sep = tk.token_to_id("[CLS]"), tk.token_to_id("[SEP]")
    tk.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return tk


def build(family: str, folder: Path) -> Path:
    """Save a random tiny model of ``family`` (see FAMILIES) and its tokenizer into ``folder``; returns it."""
    torch.manual_seed(0)
    bert_specials = dict(unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]", cls_token="[CLS]",
                         mask_token="[MASK]")
    if family in ("bert", "distilbert", "electra-generator", "electra-discriminator"):
        tk = _wordpiece()
        cls = {"bert": transformers.BertTokenizerFast, "distilbert": transformers.DistilBertTokenizerFast}.get(
            family, transformers.ElectraTokenizerFast)
        tok = cls(tokenizer_object=tk, **bert_specials)
    elif family == "roberta":
        tk = _bytelevel()
        tok = transformers.RobertaTokenizerFast(
            tokenizer_object=tk, bos_token="<s>", eos_token="</s>", sep_token="</s>", cls_token="<s>",
            unk_token="<unk>", pad_token="<pad>", mask_token=AddedToken("<mask>", lstrip=True, rstrip=False))
    elif family == "albert":
        tk = _unigram(["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"], lowercase=True)
        tok = transformers.AlbertTokenizerFast(tokenizer_object=tk, unk_token="<unk>", sep_token="[SEP]",
                                               pad_token="<pad>", cls_token="[CLS]", mask_token="[MASK]")
    elif family == "deberta-v2":
        tk = _unigram(["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"], lowercase=False)
        tok = transformers.DebertaV2TokenizerFast(tokenizer_object=tk, **bert_specials)
    else:
        raise ValueError(family)
    V = tk.get_vocab_size()
    pad = tok.pad_token_id
    if family == "bert":
        model = transformers.BertForMaskedLM(transformers.BertConfig(vocab_size=V, max_position_embeddings=64,
                                                                     pad_token_id=pad, **SIZE))
    elif family == "roberta":
        model = transformers.RobertaForMaskedLM(transformers.RobertaConfig(
            vocab_size=V, max_position_embeddings=66, pad_token_id=pad, bos_token_id=0, eos_token_id=2,
            type_vocab_size=1, **SIZE))
    elif family == "distilbert":
        model = transformers.DistilBertForMaskedLM(transformers.DistilBertConfig(
            vocab_size=V, dim=32, n_layers=2, n_heads=2, hidden_dim=37, max_position_embeddings=64, pad_token_id=pad))
    elif family == "albert":
        model = transformers.AlbertForMaskedLM(transformers.AlbertConfig(
            vocab_size=V, embedding_size=16, max_position_embeddings=64, pad_token_id=pad, **SIZE))
    elif family.startswith("electra"):
        config = transformers.ElectraConfig(vocab_size=V, embedding_size=16, max_position_embeddings=64,
                                            pad_token_id=pad, **SIZE)
        model = (transformers.ElectraForMaskedLM if family == "electra-generator"
                 else transformers.ElectraForPreTraining)(config)
    else:
        model = transformers.DebertaV2ForMaskedLM(transformers.DebertaV2Config(
            vocab_size=V, max_position_embeddings=64, pad_token_id=pad, relative_attention=True,
            pos_att_type=["p2c", "c2p"], position_buckets=16, type_vocab_size=0, **SIZE))
    tok.model_max_length = 64
    model.eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def as_hub_cache(folder: Path, root: Path, name: str) -> Path:
    """Copy ``folder`` into a Hugging Face cache layout under ``root`` as huggingface_hub writes it: the files in
    models--ORG--NAME/blobs/ under their hashes, the snapshot's names symbolic links to them, refs/main."""
    import hashlib

    repo = root / ("models--" + name.replace("/", "--"))
    snapshot = repo / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    (repo / "blobs").mkdir()
    for f in sorted(p for p in folder.iterdir() if p.is_file()):
        digest = hashlib.sha256(f.read_bytes()).hexdigest()
        shutil.copy(f, repo / "blobs" / digest)
        (snapshot / f.name).symlink_to(Path("..") / ".." / "blobs" / digest)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd")
    return repo
