"""The measured figures in the docs, written from the files that hold them, so that none is typed twice.

A page (``README.md`` or ``docs/*.md``) marks each such part::

    <!-- generated:NAME -->...<!-- end generated:NAME -->

either a table on lines of its own or a few words inside a sentence. :data:`PARTS` says what each NAME is written
from: the shipped models' report ``assets/quality.json`` (``ctxmodels quality``), the shipped fine-tuned model's
``finetune.json`` (``ctxmodels finetune``), or a bench's results in ``bench/results/`` (each file names the bench
command that wrote it). After a new measurement::

    python -m ctxmodels.release.docs           # rewrite every generated part
    python -m ctxmodels.release.docs --check   # only list the stale parts (exit status 1 when there are any)

``tests/test_docs.py`` runs the check on the checkout.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..checkpoint import write_text_atomic
from .quality import RANK_DEPTH

ROOT = Path(__file__).resolve().parents[2]  # the checkout: the docs and the files they are written from
MARKED = re.compile(r"<!-- generated:([\w-]+) -->(.*?)<!-- end generated:\1 -->", re.S)
COMMAND = "python -m ctxmodels.release.docs"
USAGE = f"usage: {COMMAND} [--check] [ROOT]"


def pages(root: Path = ROOT) -> list[Path]:
    """The Markdown files that may hold generated parts."""
    return [p for p in [root / "README.md", *sorted((root / "docs").glob("*.md"))] if p.is_file()]


def _read(root: Path, relative: str) -> Any:
    path = root / relative
    if not path.is_file():
        raise FileNotFoundError(f"{path}: not found; the docs' generated figures are written from it")
    return json.loads(path.read_text(encoding="utf-8"))


def _pct(x: float, digits: int = 1) -> str:
    return f"{100 * x:.{digits}f}%"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


# ----------------------------------------------------------------------------------------------------------
# assets/quality.json: the shipped models' measured quality


def _quality(root: Path) -> dict[str, Any]:
    return _read(root, "assets/quality.json")


def _rank(row: dict[str, Any]) -> str:
    return str(row["rank"]) if row.get("rank") is not None else f"below {RANK_DEPTH:,}"


def quality_table(root: Path) -> str:
    """The shipped models side by side: held-out figures, cloze check, classroom ranks, SemCor senses."""
    report = _quality(root)
    models = report["models"]
    names = list(models)
    rows: dict[str, dict[str, str]] = {}
    answers: list[str] = []
    for name, entry in models.items():
        held, kind = entry.get("heldout") or {}, entry["kind"]
        cells = rows.setdefault(name, {})
        if kind == "bert" and held:
            cells["top"] = f"{_pct(held['mlm_accuracy'])} / {_pct(held['mlm_top5_accuracy'])}"
        if kind == "elmo" and held:
            cells["ppl"] = f"{held['fwd_ppl']:.1f} / {held['bwd_ppl']:.1f}"
        if entry.get("cloze"):
            cells["cloze"] = _pct(entry["cloze"]["share_in_top_k"], 0)
        if entry.get("classroom"):
            answers = [r["answers"][0] for r in entry["classroom"]["rows"]]
            cells["classroom"] = " / ".join(_rank(r) for r in entry["classroom"]["rows"])
        senses = report.get("senses", {}).get("summary", {}).get(name)
        if senses:
            layers = senses["layers"]
            if "best_layer" in senses:
                cells["senses"] = (f"{_pct(layers[senses['best_layer']]['macro_f1'])} "
                                   f"({_pct(layers[senses['static_layer']]['macro_f1'])})")
            else:  # a static model: its one layer
                cells["senses"] = _pct(next(iter(layers.values()))["macro_f1"])
    labels = {"top": "held-out masked-token top-1 / top-5", "ppl": "held-out perplexity (forward / backward)",
              "cloze": "cloze check, answer in the top 5",
              "classroom": "classroom sentences: rank of " + " / ".join(answers),
              "senses": "SemCor senses, best layer mean macro-F1 (static layer)"}
    lines = ["| | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for key, label in labels.items():
        lines.append(f"| {label} |" + "".join(f" {rows[n][key]} |" if key in rows[n] else " |" for n in names))
    return "\n".join(lines)


def elmo_cloze(root: Path) -> str:
    """elmo-eltec's cloze check, set against the BERTs'."""
    models = _quality(root)["models"]
    mine = models["elmo-eltec"]["cloze"]
    others = [(n, e["cloze"]) for n, e in models.items() if n != "elmo-eltec" and e.get("cloze")]
    return (f"elmo-eltec has the answer in its top {mine['top_k']} for {_pct(mine['share_in_top_k'], 0)} "
            f"(top 1: {_pct(mine['share_top1'], 0)}), against "
            + " and ".join(f"{_pct(c['share_in_top_k'], 0)} for {n}" for n, c in others))


def elmo_classroom(root: Path) -> str:
    """Where elmo-eltec ranks the classroom sentences' answers."""
    rows = _quality(root)["models"]["elmo-eltec"]["classroom"]["rows"]
    return ", ".join(f"{r['answers'][0]} " + (_ordinal(r["rank"]) if r.get("rank") is not None else _rank(r))
                     for r in rows)


def elmo_perplexity(root: Path) -> str:
    held = _quality(root)["models"]["elmo-eltec"]["heldout"]
    return f"{held['fwd_ppl']:.1f} / {held['bwd_ppl']:.1f}"


# ----------------------------------------------------------------------------------------------------------
# the shipped fine-tuned model


def pos_accuracy(root: Path) -> str:
    """bert-eltec-pos's test accuracy, as its card rounds it."""
    return f"{_read(root, 'assets/bert-eltec-pos/finetune.json')['metrics']['test']['accuracy']:.3f}"


# ----------------------------------------------------------------------------------------------------------
# bench/results/try_it.json: the Overview's Try it on the shipped models (python bench/try_it.py)


def _try_it(root: Path) -> dict[str, Any]:
    return _read(root, "bench/results/try_it.json")


def _layer_names(names: list[str]) -> str:
    """"layer 1 (LSTM)" -> "LSTM 1", "layer 0 (char CNN)" -> "char CNN", "layer 1".."layer 6" -> "layers 1–6"."""
    if len(names) < 2:
        return ""
    short = []
    for name in names:
        m = re.fullmatch(r"layer (\d+) \((.+)\)", name)
        short.append(name if not m else m[2] if "CNN" in m[2] else f"{m[2]} {m[1]}")
    numbered = [n for n in short if re.fullmatch(r"layer \d+", n)]
    if len(numbered) > 2 and short[-len(numbered):] == numbered:
        short = short[:-len(numbered)] + [f"layers {numbered[0].split()[1]}–{numbered[-1].split()[1]}"]
    return f" ({', '.join(short)})"


def try_it_table(root: Path) -> str:
    """Sentence A, then per sentence B the cosine of the word's two vectors in every layer of every model."""
    result = _try_it(root)
    first = result["pairs"][0]["models"]
    lines = [f"With A = \"{result['sentence_a']}\":", "",
             "| B | " + " | ".join(f"{n}{_layer_names(m['layers'])}" for n, m in first.items()) + " |",
             "|---|" + "---|" * len(first)]
    for pair in result["pairs"]:
        lines.append(f"| {pair['sentence_b']} | "
                     + " | ".join(", ".join(f"{c:.2f}" for c in m["cosine"]) for m in pair["models"].values())
                     + " |")
    return "\n".join(lines)


def try_it_baselines(root: Path) -> str:
    """The first pair's anisotropy baselines: each model's values, a range for a model of many layers."""
    models = _try_it(root)["pairs"][0]["models"]
    parts = []
    for m in models.values():
        values = m["baseline"]
        parts.append(", ".join(f"{v:.2f}" for v in values) if len(values) <= 3
                     else f"{min(values):.2f}–{max(values):.2f}")
    return "any two words of the first pair: " + "; ".join(parts)


def lesson_bank(root: Path) -> str:
    """minilm-eltec's cosine of the two banks, first layer to last (the Lesson's first answer)."""
    cosine = _try_it(root)["pairs"][0]["models"]["minilm-eltec"]["cosine"]
    return f"minilm-eltec {cosine[0]:.2f} → {cosine[-1]:.2f}"


# bench/results/warm.json: a new visitor's first use, cold and on a warmed server (python bench/bench_warm.py)


def warm_table(root: Path) -> str:
    result = _read(root, "bench/results/warm.json")
    lines = ["| a new visitor opens | cold server | warmed server |", "|---|---|---|"]
    for r in result["rows"]:
        lines.append(f"| {r['view']} | {r['cold_s']:.1f} s | {r['warmed_s']:.1f} s |")
    return "\n".join(lines + ["", f"Warming took {result['warm_up_s']:.0f} s. `{result['command']}`; "
                                  f"{result['machine']}; {result['measured']}."])


# ----------------------------------------------------------------------------------------------------------
# bench/results/capacity.json: students served by one server (python bench/bench_capacity.py --results ...)


def _capacity(root: Path) -> list[dict[str, Any]]:
    return _read(root, "bench/results/capacity.json")["classes"]


def _class(root: Path, students: int) -> dict[str, Any]:
    for row in _capacity(root):
        if row["students"] == students:
            return row
    raise ValueError(f"bench/results/capacity.json has no class of {students} students; the docs quote it")


def capacity_table(root: Path) -> str:
    lines = ["| students | p50 s | p95 s | p95 page views s | server CPU (cores) | server memory, peak |",
             "|---|---|---|---|---|---|"]
    for r in _capacity(root):
        lines.append(f"| {r['students']} | {r['p50']:.2f} | {r['p95']:.2f} | {r['p95_views']:.2f} | "
                     f"{r['server_cores']:.2f} | {r['peak_rss'] / 1000:.2f} GB |")
    return "\n".join(lines)


def capacity_20(root: Path) -> str:
    """Twenty students' p95, against one student's, and whether any class size met an error."""
    one, twenty = _class(root, 1), _class(root, 20)
    errors = [r["students"] for r in _capacity(root) if r.get("errors")]
    return (f"a p95 of {twenty['p95']:.1f} s, {twenty['p95'] / one['p95']:.1f} times one student's, with "
            + ("no errors at any size" if not errors else "errors with " + ", ".join(map(str, errors)) + " students"))


def capacity_30(root: Path) -> str:
    r = _class(root, 30)
    return f"p95 {r['p95_views']:.1f} s, worst {r['worst']:.1f} s"


# bench/results/visitor_budget.json: a second visitor beside the heaviest request (python bench/bench_visitor_budget.py)


def visitor_budget_table(root: Path) -> str:
    result = _read(root, "bench/results/visitor_budget.json")
    head = ("| server | B alone | B beside A (p90) | A's page | A held the server | idle after A' left | CPU-s then "
            "| peak memory |")
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        held = (f"over {r['held_limit']:.0f} s" if r["held_s"] >= r["held_limit"] else f"{r['held_s']:.0f} s")
        lines.append(f"| {r['tree']} | {r['alone_median']:.2f} s | {r['beside_median']:.2f} s "
                     f"({r['beside_p90']:.2f} s) | {r['heavy_page_s']:.0f} s | {held} | "
                     f"{r['idle_after_leaving_s']:.0f} s | "
                     f"{r['cpu_after_leaving_s']:.0f} | {r['peak_mb'] / 1000:.1f} GB |")
    return "\n".join(lines + ["", f"`{result['command']}`; {result['machine']}."])


# bench/results/successors.json and objectives.json: BERT's successors, their training speed and their measures per
# unit of compute (python bench/bench_successors.py, python bench/bench_objectives.py)

_SPEED_ROWS = {"bert": "BERT (ours)", "roberta": "RoBERTa: as train roberta runs it",
               "roberta-hf": "RoBERTa: transformers' own loss", "albert": "ALBERT: as train albert runs it",
               "albert-hf": "ALBERT: transformers' own loss", "electra": "ELECTRA: as train electra runs it",
               "electra-hf": "ELECTRA: transformers' own losses", "gpt": "GPT: as train gpt runs it"}


def successors_speed(root: Path) -> str:
    result = _read(root, "bench/results/successors.json")
    lines = ["| a training step of | parameters | ms a step | pieces a second | GFLOP a step |",
             "|---|---|---|---|---|"]
    for r in result["rows"]:
        gflop = f"{r['gflop']:.1f}" if r.get("gflop") is not None else "-"
        lines.append(f"| {_SPEED_ROWS.get(r['kind'], r['kind'])} | {r['params']:,} | {r['step_ms']:.0f} | "
                     f"{r['tokens_per_s']:,.0f} | {gflop} |")
    return "\n".join(lines + ["", f"Preset {result['preset']}, {result['batch']} sequences of {result['seq']} pieces, "
                                  f"median of {result['steps']} interleaved steps; `{result['command']}`; "
                                  f"{result['machine']}."])


def successors_speed_line(root: Path) -> str:
    """How much faster a step is as ``ctxmodels train`` runs it than through transformers' own loss."""
    rows = {r["kind"]: r for r in _read(root, "bench/results/successors.json")["rows"]}
    ratios = [(name, rows[f"{kind}-hf"]["step_ms"] / rows[kind]["step_ms"])
              for kind, name in (("roberta", "RoBERTa"), ("albert", "ALBERT"), ("electra", "ELECTRA"))
              if kind in rows and f"{kind}-hf" in rows]
    return ", ".join(f"{name} {ratio:.1f}×" for name, ratio in ratios)


_OBJECTIVE_NAMES = {"bert": "BERT", "roberta": "RoBERTa", "albert": "ALBERT", "electra": "ELECTRA", "gpt": "GPT"}
_GUESSES = {"bert": "masked", "roberta": "masked", "albert": "masked", "electra": "masked (generator)",
            "gpt": "next word"}


def objectives_table(root: Path) -> str:
    result = _read(root, "bench/results/objectives.json")
    lines = ["| objective | steps | compute (TFLOP) | pieces seen | held-out guesses right | part of speech (test) "
             "| word senses: best layer |", "|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        guess = (f"{_pct(r['guess_accuracy'])} {_GUESSES[r['kind']]}" if r.get("guess_accuracy") is not None
                 else "-")
        best = r["senses"]["best_macro_f1"]
        senses = f"{_pct(best)} ({r['senses']['best_layer']})" if best is not None else "-"
        seen = f"{r['tokens_seen'] / 1e6:.1f} M" if r.get("tokens_seen") else "0" if r.get("step") == 0 else "-"
        step = f"{r['step']:,} of {r['steps']:,}" + (" (random weights)" if r["step"] == 0 else "")
        lines.append(f"| {_OBJECTIVE_NAMES[r['kind']]} | {step} | {r['flops'] / 1e12:.1f} | "
                     f"{seen} | {guess} | {_pct(r['pos']['test']['accuracy']) if r.get('pos') else '-'} | {senses} |")
    per_step = ", ".join(f"{_OBJECTIVE_NAMES[k]} {v / 1e9:.1f}" for k, v in result["flops_per_step"].items())
    return "\n".join(lines + ["", f"GFLOP a step: {per_step}. `{result['command']}`."])


PARTS: dict[str, Callable[[Path], str]] = {
    "quality-table": quality_table,
    "elmo-cloze": elmo_cloze,
    "elmo-classroom": elmo_classroom,
    "elmo-perplexity": elmo_perplexity,
    "pos-accuracy": pos_accuracy,
    "try-it-table": try_it_table,
    "try-it-baselines": try_it_baselines,
    "lesson-bank": lesson_bank,
    "warm-table": warm_table,
    "capacity-table": capacity_table,
    "capacity-20": capacity_20,
    "capacity-30": capacity_30,
    "visitor-budget-table": visitor_budget_table,
    "successors-speed": successors_speed,
    "successors-speed-line": successors_speed_line,
    "objectives-table": objectives_table,
}


# ----------------------------------------------------------------------------------------------------------
# the pages


def render(name: str, root: Path = ROOT) -> str:
    """The text of generated part ``name``, from the files under ``root``."""
    if name not in PARTS:
        raise ValueError(f"no generated part named {name!r}; known: {', '.join(PARTS)}")
    return PARTS[name](root)


def refreshed(text: str, root: Path = ROOT) -> str:
    """``text`` with every generated part written again; a part on lines of its own stays on lines of its own."""
    def fill(m: re.Match) -> str:
        body = render(m[1], root)
        if m[2].startswith("\n"):
            body = f"\n{body}\n"
        return f"<!-- generated:{m[1]} -->{body}<!-- end generated:{m[1]} -->"

    return MARKED.sub(fill, text)


def stale(root: Path = ROOT) -> list[str]:
    """``page: NAME`` for every generated part whose text differs from what its source files give now."""
    found = []
    for page in pages(root):
        text = page.read_text(encoding="utf-8")
        for m in MARKED.finditer(text):
            if refreshed(m[0], root) != m[0]:
                found.append(f"{page.relative_to(root)}: {m[1]}")
    return found


def write(root: Path = ROOT) -> list[Path]:
    """Rewrite every page whose generated parts are stale; returns the pages written."""
    written = []
    for page in pages(root):
        text = page.read_text(encoding="utf-8")
        new = refreshed(text, root)
        if new != text:
            write_text_atomic(page, new)
            written.append(page)
    return written


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in args):
        print(f"{USAGE}\n\n{__doc__.split(chr(10))[0]}")
        return 0
    check = "--check" in args
    rest = [a for a in args if a != "--check"]
    if len(rest) > 1 or any(a.startswith("-") for a in rest):
        print(USAGE, file=sys.stderr)
        return 2
    root = Path(rest[0]) if rest else ROOT
    if check:
        found = stale(root)
        for line in found:
            print(f"stale: {line}")
        if found:
            print(f"refresh with: {COMMAND}", file=sys.stderr)
        return 1 if found else 0
    for page in write(root):
        print(f"written: {page.relative_to(root)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
