"""``ctxmodels fill-mask``: a masked LM's (or an ELMo's) guesses for every blank, or a left-to-right model's (a GPT,
:mod:`ctxmodels.analysis.next_word`, as the Fill in the blank page shows it) for the first blank from the words
before it, or for the word after the text when it has no blank."""

from __future__ import annotations

import argparse
import json
import math
import sys

from ..analysis import next_word
from ..analysis.fill_in import (
    LayerGuesses,
    WordAttributions,
    WordEffects,
    fill_mask,
    fills_blanks,
    guess_attributions,
    guess_effects,
    guesses_by_layer,
    hidden_by_layer,
    mask_word,
    why_no_fill,
    word_attributions,
    word_effects,
)
from ..analysis.integrated_gradients import RELATIVE_TOLERANCE, TOLERANCE
from ..tokenization import MASK
from . import bounded_int, load_model


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True,
                   help="an encoder with a masked-LM head or an ELMo with its LM softmax (ours): a BERT checkpoint "
                        "directory (ours or Hugging Face's), "
                        "a RoBERTa / DistilBERT / ALBERT / ELECTRA generator / DeBERTa folder, ORG/NAME in the "
                        "Hugging Face cache, or a short name (bert-eltec); or a left-to-right model (a GPT such as "
                        "gpt-eltec), which guesses the first blank from the words before it, and with no blank the "
                        "word after the text")
    p.add_argument("--top-k", type=bounded_int(1, 1000), default=5,
                   help="how many guesses per mask (default 5)")
    p.add_argument("--whole-words", action="store_true",
                   help="leave word pieces (##s), special tokens and punctuation out of the guesses")
    p.add_argument("--json", action="store_true", help="print one JSON list: per mask, [{token, prob}, ...]")
    p.add_argument("--word", default=None,
                   help="instead of [MASK]s: mask this word of the text and report the probability and rank "
                        "the model gives it")
    p.add_argument("--rests-on", action="store_true",
                   help="also show which words each answer rests on: every other word hidden in turn ([MASK] in "
                        "its place) and the answer's probability read again (one model run per word)")
    p.add_argument("--by", choices=("hiding", "gradients"), default="hiding",
                   help="with --rests-on: hide each word in turn (default), or integrated gradients: each word's "
                        "share of the answer's log-probability on the way from the sentence with every word hidden "
                        "to the sentence as written")
    p.add_argument("--steps", type=bounded_int(1, 1024), default=None,
                   help="with --by gradients: intervals of the path's integral (default: as many as it takes, from "
                        f"16 and doubling, for the scores to add up within {TOLERANCE} nats or "
                        f"{100 * RELATIVE_TOLERANCE:.0f}%% of the answer's rise)")
    p.add_argument("--guess", default=None,
                   help="with --rests-on: the guess to explain at every blank (default: each blank's first guess)")
    p.add_argument("--by-layer", action="store_true",
                   help="also show, for each blank (or the hidden --word), the guesses the head reads from every "
                        "layer's vector at it (exBERT's guesses per layer, the logit lens) and the rank in each of "
                        "the final answer (or of the hidden word)")
    p.add_argument("text", nargs="+", help='the text, e.g. "the river [MASK] was steep"')


def print_effects(effects: WordEffects) -> None:
    print(f"  what {effects.answer!r} rests on (probability {effects.prob:.4g} with every word in view):")
    width = max(len(w) for w in effects.words)
    for word, p, top in zip(effects.words, effects.hidden_probs, effects.top_when_hidden):
        if p is None:
            continue
        ratio = p / effects.prob if effects.prob > 0 else float("inf")
        times = f"x{ratio:.2f}" if ratio >= 1 else f"/{1 / ratio:.2f}" if ratio > 0 else "/inf"
        print(f"    {word:<{width}}  hidden: {p:.4g}  {times:>9}  first guess then: {top}")


def print_attributions(result: WordAttributions) -> None:
    print(f"  what {result.answer!r} rests on, by integrated gradients (probability {result.prob:.4g} as written, "
          f"{result.baseline_prob:.4g} with every word hidden; {result.steps} steps, the scores add up to within "
          f"{abs(result.gap):.2g} nats of the log of their ratio):")
    width = max(len(w) for w in result.words)
    for word, score in zip(result.words, result.scores):
        if score is not None:
            print(f"    {word:<{width}}  {score:+.3f} nats  x{math.exp(score):.3g}")


def explain(model, tokenizer, text: str, args: argparse.Namespace, blank: int | None = None
            ) -> WordEffects | WordAttributions:
    """What the answer at ``blank`` (None: the hidden ``--word``) rests on, by the method ``--by`` names."""
    if args.by == "gradients":
        if blank is None:
            return word_attributions(model, tokenizer, text, args.word, steps=args.steps)
        return guess_attributions(model, tokenizer, text, blank=blank, guess=args.guess,
                                  whole_words=args.whole_words, steps=args.steps)
    if blank is None:
        return word_effects(model, tokenizer, text, args.word, whole_words=args.whole_words)
    return guess_effects(model, tokenizer, text, blank=blank, guess=args.guess, whole_words=args.whole_words)


def print_explanation(result: WordEffects | WordAttributions) -> None:
    (print_attributions if isinstance(result, WordAttributions) else print_effects)(result)


def print_by_layer(result: LayerGuesses) -> None:
    print(f"  layer by layer (the rank of {result.answer!r}, then that layer's guesses):")
    width = max(len(name) for name in result.layer_names)
    for name, rank, guesses in zip(result.layer_names, result.answer_ranks, result.top):
        shown = ", ".join(f"{g['token']} {g['prob']:.3f}" for g in guesses)
        print(f"    {name:<{width}}  #{rank:<6,}  {shown}")


def print_score(score, layers: LayerGuesses | None, effects) -> None:
    print(f"{score.word!r} ({' '.join(score.pieces)}): probability {score.prob:.4g}, rank {score.rank}")
    for piece, guesses in zip(score.pieces, score.top):
        shown = ", ".join(f"{g['token']} {g['prob']:.3f}" for g in guesses)
        print(f"  {piece}: model's guesses {shown}")
    if layers is not None:
        print_by_layer(layers)
    if effects is not None:
        print_explanation(effects)


def print_guesses(header: str, guesses: list[dict]) -> None:
    print(header)
    width = max(len(g["token"]) for g in guesses)
    for g in guesses:
        print(f"  {g['token']:<{width}}  {g['prob']:.4f}")


def print_json(main, layers: list[LayerGuesses] | LayerGuesses | None, effects=None) -> None:
    """``main`` alone, or with --rests-on / --by-layer {"guesses": main, "rests_on": ..., "by_layer": ...} (a hidden
    word's dict gets the two keys itself)."""
    extra = {}
    if effects is not None:
        extra["rests_on"] = [e.to_dict() for e in effects] if isinstance(effects, list) else effects.to_dict()
    if layers is not None:
        extra["by_layer"] = [r.to_dict() for r in layers] if isinstance(layers, list) else layers.to_dict()
    if isinstance(main, dict):
        print(json.dumps({**main, **extra}, ensure_ascii=False))
    else:
        print(json.dumps({"guesses": main, **extra} if extra else main, ensure_ascii=False))


def run(args: argparse.Namespace) -> int:
    text = " ".join(args.text)
    model = load_model(args.model)
    left_to_right = next_word.reads_left_to_right(model)
    if not left_to_right and not fills_blanks(model):
        raise ValueError(f"{args.model} cannot fill in blanks: {why_no_fill(model)}")
    if args.guess is not None and not args.rests_on:
        raise ValueError("--guess names the guess that --rests-on explains; add --rests-on")
    if (args.by != "hiding" or args.steps is not None) and not args.rests_on:
        raise ValueError("--by and --steps say how --rests-on explains an answer; add --rests-on")
    if left_to_right:
        return run_left_to_right(model, text, args)
    tokenizer = model.tokenizer
    if args.word is not None:
        score = mask_word(model, tokenizer, text, args.word, top_k=args.top_k, whole_words=args.whole_words)
        effects = explain(model, tokenizer, text, args) if args.rests_on else None
        layers = hidden_by_layer(model, tokenizer, text, args.word, top_k=args.top_k,
                                 whole_words=args.whole_words) if args.by_layer else None
        if args.json:
            print_json(score.to_dict(), layers, effects)
        else:
            print_score(score, layers, effects)
        return 0
    results = fill_mask(model, tokenizer, text, top_k=args.top_k, whole_words=args.whole_words)
    effects_per_blank = [explain(model, tokenizer, text, args, n) for n in range(len(results))] \
        if args.rests_on else None
    layers_per_blank = [guesses_by_layer(model, tokenizer, text, blank=n, top_k=args.top_k,
                                         whole_words=args.whole_words) for n in range(len(results))] \
        if args.by_layer else None
    if args.json:
        # with --rests-on / --by-layer: {"guesses": [...], "rests_on": [per blank], "by_layer": [per blank]};
        # without either: the guesses' list, as before
        print_json(results, layers_per_blank, effects_per_blank)
        return 0
    for n, guesses in enumerate(results, 1):
        print_guesses(f"[MASK] {n}:" if len(results) > 1 else "[MASK]:", guesses)
        if layers_per_blank is not None:
            print_by_layer(layers_per_blank[n - 1])
        if effects_per_blank is not None:
            print_explanation(effects_per_blank[n - 1])
    return 0


def run_left_to_right(model, text: str, args: argparse.Namespace) -> int:
    """A GPT's answers, as the Fill in the blank page gives them: the hidden ``--word`` rated from the words before
    it, the first blank guessed from the words before it, or with no blank the word after the text; one line says
    which (on stderr with --json, so that the output stays JSON). The JSON has a masked LM's shape: one list of
    guesses for the one place guessed."""
    if args.rests_on:
        raise ValueError(f"--rests-on hides each other word of the sentence, for a model that reads both sides of a "
                         f"blank; {args.model} is a left-to-right model (a GPT), which reads only the words before it")
    k, whole, name = args.top_k, args.whole_words, getattr(model, "name", args.model)
    if args.word is not None:
        note = f"{name} reads left to right: it rates the word from the words before it only"
        score = next_word.word_score(model, text, args.word, top_k=k, whole_words=whole)
        layers = next_word.word_by_layer(model, text, args.word, top_k=k, whole_words=whole) \
            if args.by_layer else None
        _say(note, args.json)
        if args.json:
            print_json(score.to_dict(), layers)
        else:
            print_score(score, layers, None)
        return 0
    blanks = next_word.words_of(model, text).count(MASK)
    if blanks:
        note = (f"{name} reads left to right: its guesses for the first blank come from the words before it only"
                + ("; the later blank is not guessed" if blanks == 2 else
                   f"; the {blanks - 1} later blanks are not guessed" if blanks > 2 else ""))
        header, guesses = "[MASK]:", next_word.blank_guesses(model, text, top_k=k, whole_words=whole)[0]
        with_blank = text
    else:
        note = f"no {MASK} in the text: {name} reads left to right, and guesses the word after it"
        header, guesses = "next word:", next_word.next_guesses(model, text, top_k=k, whole_words=whole)
        with_blank = f"{text} {MASK}"  # the same place: the piece after the text's last one
    layers = [next_word.blank_by_layer(model, with_blank, top_k=k, whole_words=whole)] if args.by_layer else None
    _say(note, args.json)
    if args.json:
        print_json([guesses], layers)
        return 0
    print_guesses(header, guesses)
    if layers is not None:
        print_by_layer(layers[0])
    return 0


def _say(note: str, to_stderr: bool) -> None:
    print(note, file=sys.stderr if to_stderr else sys.stdout)
