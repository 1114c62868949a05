"""``ctxmodels fill-mask``."""

from __future__ import annotations

import argparse
import json

from ..analysis.fill_in import fill_mask, mask_word
from . import bounded_int, load_model


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True,
                   help="an encoder with a masked-LM head: a BERT checkpoint directory (ours or Hugging Face's), "
                        "a RoBERTa / DistilBERT / ALBERT / ELECTRA generator / DeBERTa folder, ORG/NAME in the "
                        "Hugging Face cache, or a short name (bert-eltec)")
    p.add_argument("--top-k", type=bounded_int(1, 1000), default=5,
                   help="how many guesses per mask (default 5)")
    p.add_argument("--whole-words", action="store_true",
                   help="leave word pieces (##s), special tokens and punctuation out of the guesses")
    p.add_argument("--json", action="store_true", help="print one JSON list: per mask, [{token, prob}, ...]")
    p.add_argument("--word", default=None,
                   help="instead of [MASK]s: mask this word of the text and report the probability and rank "
                        "the model gives it")
    p.add_argument("text", nargs="+", help='the text, e.g. "the river [MASK] was steep"')


def run(args: argparse.Namespace) -> int:
    text = " ".join(args.text)
    model = load_model(args.model)
    if not model.can_fill_mask:
        reason = model.no_fill_reason or f"a {model.kind} model has no masked-LM head"
        raise ValueError(f"{args.model} cannot fill in blanks: {reason}")
    tokenizer = model.tokenizer
    if args.word is not None:
        score = mask_word(model, tokenizer, text, args.word, top_k=args.top_k, whole_words=args.whole_words)
        if args.json:
            print(json.dumps(score.to_dict(), ensure_ascii=False))
        else:
            print(f"{score.word!r} ({' '.join(score.pieces)}): probability {score.prob:.4g}, rank {score.rank}")
            for piece, guesses in zip(score.pieces, score.top):
                shown = ", ".join(f"{g['token']} {g['prob']:.3f}" for g in guesses)
                print(f"  {piece}: model's guesses {shown}")
        return 0
    results = fill_mask(model, tokenizer, text, top_k=args.top_k, whole_words=args.whole_words)
    if args.json:
        print(json.dumps(results, ensure_ascii=False))
        return 0
    for n, guesses in enumerate(results, 1):
        print(f"[MASK] {n}:" if len(results) > 1 else "[MASK]:")
        width = max(len(g["token"]) for g in guesses)
        for g in guesses:
            print(f"  {g['token']:<{width}}  {g['prob']:.4f}")
    return 0
