"""How learnable is each built-in fine-tuning task? Simple baselines on the fixed splits, side by side.

    python bench/task_baselines.py [--wsd bank run.v man.n ...]

Prints, per task, its sizes and, on dev and test, accuracy and macro-F1 of:
* majority: always the most frequent training class;
* per word (token tasks): each word's most frequent training tag (unseen words: the majority);
* most frequent sense (wsd): the same as majority, named as WSD papers name it;
* bag of words (sentence and wsd tasks): scikit-learn logistic regression on the lower-cased words of the
  sentence (wsd: of the sentence around the target word).
These are yardsticks for the fine-tuned models, not features of the package.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score

from ctxmodels.tasks import TaskData, load_task


def scores(gold: list[str], pred: list[str]) -> str:
    return f"{accuracy_score(gold, pred):.3f} / {f1_score(gold, pred, average='macro', zero_division=0):.3f}"


def token_rows(task: TaskData) -> list[tuple[str, str, str]]:
    by_word: dict[str, Counter] = {}
    overall: Counter = Counter()
    for ex in task.train:
        for w, y in zip(ex.words, ex.label, strict=True):
            if y:
                by_word.setdefault(w.lower(), Counter())[y] += 1
                overall[y] += 1
    majority = overall.most_common(1)[0][0]
    rows = []
    for name, guess in (("majority", lambda w: majority),
                        ("per word", lambda w: by_word[w].most_common(1)[0][0] if w in by_word else majority)):
        cells = []
        for split in ("dev", "test"):
            gold, pred = [], []
            for ex in task.split(split):
                for w, y in zip(ex.words, ex.label, strict=True):
                    if y:
                        gold.append(y)
                        pred.append(guess(w.lower()))
            cells.append(scores(gold, pred))
        rows.append((name, *cells))
    return rows


def text_of(ex, window: int | None) -> str:
    if window is None or ex.target is None:
        return " ".join(ex.words)
    return " ".join(ex.words[max(0, ex.target - window): ex.target + window + 1])


def sentence_rows(task: TaskData, window: int | None = None) -> list[tuple[str, str, str]]:
    y_train = [ex.label for ex in task.train]
    majority = Counter(y_train).most_common(1)[0][0]
    vec = CountVectorizer(lowercase=True, token_pattern=r"\S+", min_df=2 if len(task.train) > 1000 else 1)
    x_train = vec.fit_transform(text_of(ex, window) for ex in task.train)
    model = LogisticRegression(max_iter=2000, C=1.0).fit(x_train, y_train)
    rows = [("majority", *(scores([ex.label for ex in task.split(s)], [majority] * len(task.split(s)))
                           for s in ("dev", "test")))]
    rows.append(("bag of words (LR)", *(scores([ex.label for ex in task.split(s)],
                                               list(model.predict(vec.transform(text_of(ex, window)
                                                                                for ex in task.split(s)))))
                                        for s in ("dev", "test"))))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wsd", nargs="*", default=["bank", "run.v", "man.n", "time.n", "see.v"])
    args = parser.parse_args()
    print(f"{'task':<14} {'sizes train/dev/test':<22} {'baseline':<20} {'dev acc / macro-F1':<20} "
          f"{'test acc / macro-F1':<20} load s")
    for spec in ["pos", "ner", "period"] + [f"wsd:{x}" for x in args.wsd]:
        t0 = time.perf_counter()
        task = load_task(spec)
        load_s = time.perf_counter() - t0
        sizes = "/".join(str(len(task.split(s))) for s in ("train", "dev", "test"))
        rows = token_rows(task) if task.kind == "token" else sentence_rows(task, 10 if task.kind == "word" else None)
        for i, (name, dev, test) in enumerate(rows):
            print(f"{spec if i == 0 else '':<14} {sizes if i == 0 else '':<22} {name:<20} {dev:<20} {test:<20} "
                  f"{f'{load_s:.1f}' if i == 0 else ''}")


if __name__ == "__main__":
    main()
