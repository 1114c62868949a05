"""``ctxmodels which-sense``: which WordNet sense one occurrence is, by the nearest sense average over SemCor."""

from __future__ import annotations

import argparse
import json

from . import add_semcor_option, load_model


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="a model name or folder (any kind: BERT, ELMo, static)")
    p.add_argument("--word", required=True, help="the word whose sense is asked (its first occurrence in the "
                                                 "sentence; case does not matter)")
    p.add_argument("sentence", help="the sentence the word occurs in")
    p.add_argument("--lemma", default=None, help="SemCor's lemma to compare with (default: found from the word, "
                                                 "e.g. banks -> bank, ran -> run)")
    add_semcor_option(p)
    p.add_argument("--json", action="store_true", help="print JSON: the senses, and per layer the cosines, the "
                                                       "nearest sense and the layer's accuracy on SemCor")


def run(args: argparse.Namespace) -> int:
    from ..analysis import dictionary_senses as ds
    from ..analysis.vectors import word_vectors
    from ..semcor import load_semcor

    model = load_model(args.model)
    semcor = load_semcor(args.semcor)
    lemma = args.lemma or ds.lemma_of(args.word, semcor)
    if lemma is None:
        raise ValueError(f"SemCor tags no sense of {args.word!r} (it tags nouns, verbs, adjectives and adverbs); "
                         "ask about a content word, or name its dictionary form with --lemma")
    occ = word_vectors(model, [args.sentence], args.word)
    averages = ds.sense_averages(model, lemma, semcor=semcor)
    guess = ds.guess(averages, occ.vectors[0])
    names = [ds.sense_name(info) for info in averages.senses]
    nearest = [guess.sense(j) for j in range(len(averages.layer_names))]
    if args.json:
        print(json.dumps({
            "model": model.name, "word": args.word, "sentence": args.sentence, "lemma": lemma,
            "references": averages.n, "by_spelling": round(averages.by_spelling, 6),
            "senses": [{"name": name, "sense_key": info.sense_keys[0], "gloss": info.gloss, "references": int(n)}
                       for name, info, n in zip(names, averages.senses, averages.counts)],
            "layers": [{"layer": layer, "accuracy": round(float(acc), 6),
                        "nearest": names[s] if s is not None else None,
                        "cosines": [round(float(c), 6) for c in row]}
                       for layer, acc, s, row in zip(averages.layer_names, averages.accuracy, nearest,
                                                     guess.cosines)]}, ensure_ascii=False))
        return 0
    best = averages.best_layer()
    print(f"{args.word!r} in {args.sentence!r}, against the averages of {averages.n} SemCor occurrences of "
          f"{lemma!r} in {len(names)} senses. Per layer: the nearest sense, and how many of SemCor's occurrences "
          f"the layer reads right (each left out of its sense's average; each spelling's most frequent sense: "
          f"{100 * averages.by_spelling:.0f}%)")
    width = max(len(name) for name in averages.layer_names)
    for j, (layer, acc) in enumerate(zip(averages.layer_names, averages.accuracy)):
        said = names[nearest[j]] if nearest[j] is not None else "(a tie: no sense is nearer than another)"
        mark = "  <- best on SemCor" if j == best else ""
        print(f"{layer:<{width}}  {100 * acc:3.0f}%  {said}{mark}")
    return 0
