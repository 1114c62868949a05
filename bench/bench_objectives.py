"""BERT and its successors per unit of compute: every objective trained from scratch on the novels at the same
model size for the same number of floating-point operations, then measured on held-out data (run by hand; it
resumes where it stopped, and prints a table).

    python bench/bench_objectives.py                              # every kind `ctxmodels train` has, budget 3000
    python bench/bench_objectives.py --kinds bert gpt --budget 500 --out /tmp/objectives
    python bench/bench_objectives.py --phase report               # the table again, from what was measured

What is the same for every kind: the preset (tiny: 2 layers of width 128), the shipped BERT's word pieces
(assets/bert-eltec/tokenizer.json), 16 sequences of 128 pieces a step, the seed and the two held-out novels, the
learning-rate schedule's shape (10% warm-up, then linear decay to the run's end), no dropout.

**Compute.** A kind's cost of one training step (forward and backward, ELECTRA's generator included) is counted
by ``torch.utils.flop_counter.FlopCounterMode`` on a real batch of the kind's own data: the operations its matrix
products and attention really do, padding included, the optimizer's few element-wise ones not. The budget is
``--budget`` steps of BERT; every other kind gets the steps that cost the same, so a kind whose step is dearer
(a GPT scores every position against the 16,000-piece vocabulary, BERT 15% of them) takes fewer steps.

**Measures**, at ``--points`` fractions of the budget (snapshots of one run, whose schedule runs to its end; 0 is
the run's untrained start, ``train KIND --stop-at 0`` with the same seed and options in ``OUT/start/KIND``: the
random weights every later snapshot is read beside):
- held-out masked-word accuracy: the run's own evaluation on the held-out novels (for a GPT the next word's, for
  ELECTRA its generator's; a different task each, so compare a column within a kind and the masked LMs together);
- part of speech: ``ctxmodels finetune --task pos`` for ``--pos-steps`` steps, accuracy on SemCor's test split;
- word senses: ``ctxmodels quality`` (SemCor, leave-one-out 1-nearest-neighbour per lemma), the best layer's
  macro-F1 and which layer it is.
ELECTRA's fine-tuning and senses use its discriminator, as the paper does.

Runs, snapshots and each measurement are kept under ``--out``; a phase that finds its result there skips it, so a
stopped bench continues with the same command.

The report writes the results (``--results``), their figure (``--figure``) and the small copy the app's *How they
learn* page shows (``--app-json``: ``assets/successors/compute.json``, each snapshot's measures only).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KINDS = ("bert", "roberta", "albert", "electra", "gpt")
TOKENIZER = ROOT / "assets" / "bert-eltec" / "tokenizer.json"
SEMCOR = ROOT / "assets" / "semcor"
CTXMODELS = [sys.executable, "-m", "ctxmodels.cli"]
MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "vocab.txt",
               "special_tokens_map.json", "generation_config.json", "README.md", "metrics.jsonl", "run.json")


def common_options(args: argparse.Namespace) -> list[str]:
    return ["--tokenizer", str(TOKENIZER), "--preset", "tiny", "--batch-size", "16", "--max-seq-len", "128",
            "--dropout", "0", "--seed", "0", "--lr", str(args.lr), "--threads", str(args.threads), "--no-progress"]


def trainable_kinds(wanted: list[str]) -> list[str]:
    """The kinds in ``wanted`` that ``ctxmodels train`` has here (a kind not yet there is named and left out)."""
    from ctxmodels import kinds

    missing = [k for k in wanted if kinds.training_for(k) is None]
    if missing:
        print(f"left out (no `ctxmodels train` for them here): {', '.join(missing)}")
    return [k for k in wanted if k not in missing]


# ----------------------------------------------------------------------------------------------------------
# compute: the operations of one training step


def _counted(kind: str, corpus: Path, steps: int, args: argparse.Namespace) -> int:
    """Operations counted while ``ctxmodels train KIND`` runs ``steps`` steps (and everything around them)."""
    from torch.utils.flop_counter import FlopCounterMode

    from ctxmodels.cli import main

    with tempfile.TemporaryDirectory() as tmp, FlopCounterMode(display=False) as counter:
        code = main(["train", kind, "--corpus", str(corpus), "--out", f"{tmp}/run", "--steps", str(steps),
                     "--eval-sequences", "0", "--save-every", "0", *common_options(args)])
    if code:
        raise SystemExit(f"train {kind} failed while its operations were counted (exit {code})")
    return counter.get_total_flops()


def step_flops(kind: str, corpus: Path, args: argparse.Namespace) -> int:
    """One step's operations: three steps' count minus one step's, halved (what runs once per run drops out)."""
    return (_counted(kind, corpus, 3, args) - _counted(kind, corpus, 1, args)) // 2


def small_corpus(corpus: Path, out: Path) -> Path:
    """The first novels' first 3 MB, cut at a paragraph: enough for a batch of every kind (the count depends on
    shapes only)."""
    path = out / "small-corpus.txt"
    if not path.exists():
        with open(corpus, encoding="utf-8") as f:
            text = f.read(3_000_000)
        path.write_text(text.rsplit("\n", 1)[0] + "\n", encoding="utf-8")
    return path


def flops_phase(kinds: list[str], args: argparse.Namespace, state: dict) -> None:
    corpus = small_corpus(args.corpus, args.out)
    for kind in kinds:
        if kind not in state["flops"]:
            state["flops"][kind] = step_flops(kind, corpus, args)
            save_state(args, state)
        print(f"{kind}: {state['flops'][kind] / 1e9:.1f} GFLOP a step")


# ----------------------------------------------------------------------------------------------------------
# training to the same compute, with snapshots


def plan(kind: str, args: argparse.Namespace, state: dict) -> tuple[int, list[int]]:
    """(the kind's steps, the steps of its snapshots): the budget's operations spent at the kind's step cost."""
    steps = max(1, round(args.budget * state["flops"]["bert"] / state["flops"][kind]))
    return steps, sorted({0 if p == 0 else max(1, round(p * steps)) for p in args.points} | {steps})


def run_dir(kind: str, args: argparse.Namespace, step: int) -> Path:
    """The run that holds ``kind``'s snapshot at ``step``: its untrained start's own folder, or the kind's run."""
    return args.out / ("start" if step == 0 else "runs") / kind


def start_command(kind: str, run: Path, steps: int, args: argparse.Namespace) -> list[str]:
    """The command that starts ``kind``'s run of ``steps`` steps in ``run``."""
    return ["train", kind, "--corpus", str(args.corpus), "--out", str(run), "--steps", str(steps), "--save-every",
            "250", *common_options(args)]


def snapshot(run: Path, to: Path) -> None:
    """The loadable model files of ``run`` (ELECTRA's generator folder too), copied to ``to``."""
    tmp = to.with_name(to.name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name in MODEL_FILES:
        if (run / name).is_file():
            shutil.copy2(run / name, tmp / name)
    if (run / "generator").is_dir():
        shutil.copytree(run / "generator", tmp / "generator")
    tmp.rename(to)


def train_kind(kind: str, args: argparse.Namespace, state: dict) -> None:
    steps, points = plan(kind, args, state)
    for point in points:
        to = args.out / "snapshots" / kind / f"step-{point}"
        run = run_dir(kind, args, point)
        if to.exists():
            continue
        if point == 0:  # the start, made apart (the same seed and options: the same weights), so a run past it can
            shutil.rmtree(run, ignore_errors=True)  # have it too; a start cut short is made again
            command = [*start_command(kind, run, steps, args), "--stop-at", "0"]
        elif (run / "run.json").exists():
            command = ["train", kind, "--out", str(run), "--resume", "--threads", str(args.threads), "--no-progress"]
        else:
            command = start_command(kind, run, steps, args)
        if point:
            command += ["--eval-every", str(point)] + (["--stop-at", str(point)] if point < steps else [])
        started = time.time()
        subprocess.run([*CTXMODELS, *command], check=True, cwd=ROOT)
        if point == 0:
            check_same_start(kind, args)
        state["train_s"].setdefault(kind, {})[str(point)] = time.time() - started
        snapshot(run, to)
        save_state(args, state)
        print(f"{kind}: step {point} of {steps} ({time.time() - started:.0f} s)")


def check_same_start(kind: str, args: argparse.Namespace) -> None:
    """Stop unless the start's settings are its run's (where the run is there already): the same seed, sizes and
    vocabulary build the same initial weights."""
    folders = [run_dir(kind, args, step) / "run.json" for step in (1, 0)]
    if not folders[0].exists():
        return
    run, start = (json.loads(f.read_text())["settings"] for f in folders)
    differ = sorted(k for k in run.keys() & start.keys()
                    if k not in ("save_every", "eval_every", "log_every") and run[k] != start[k])
    if differ:
        raise SystemExit(f"{kind}: the start's settings differ from its run's ({', '.join(differ)}): not its start")


# ----------------------------------------------------------------------------------------------------------
# measures of each snapshot


def run_eval(kind: str, args: argparse.Namespace, step: int) -> dict:
    """The run's own held-out evaluation at ``step`` (metrics.jsonl)."""
    lines = (run_dir(kind, args, step) / "metrics.jsonl").read_text().splitlines()
    found = [r["eval"] for r in map(json.loads, lines) if r.get("step") == step and "eval" in r]
    return found[-1] if found else {}


def tokens_seen(kind: str, args: argparse.Namespace, step: int) -> int | None:
    if step == 0:
        return 0
    lines = (args.out / "runs" / kind / "metrics.jsonl").read_text().splitlines()
    seen = [r["tokens_seen"] for r in map(json.loads, lines) if r.get("step", 0) <= step and "tokens_seen" in r]
    return seen[-1] if seen else None


def pos_accuracy(model: Path, args: argparse.Namespace) -> dict:
    """Part-of-speech fine-tuning of ``model`` for ``--pos-steps`` steps: SemCor's dev and test accuracy (a GPT's
    label on each word's first piece, which has read only the words before it)."""
    out = model.with_name(model.name + "-pos")
    if not (out / "finetune.json").exists():
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run([*CTXMODELS, "finetune", "--model", str(model), "--task", "pos", "--steps",
                        str(args.pos_steps), "--out", str(out), "--threads", str(args.threads), "--no-progress"],
                       check=True, cwd=ROOT)
    metrics = json.loads((out / "finetune.json").read_text())["metrics"]
    return {split: {"accuracy": metrics[split]["accuracy"], "macro_f1": metrics[split]["macro_f1"]}
            for split in ("dev", "test")}


def senses(model: Path, args: argparse.Namespace) -> dict:
    """SemCor word senses per layer (``ctxmodels quality``): every layer's macro-F1 and the best layer."""
    out = model.with_name(model.name + "-quality.json")
    if not out.exists():
        subprocess.run([*CTXMODELS, "quality", "--model", str(model), "--no-probes", "--semcor", str(SEMCOR),
                        "--out", str(out), "--threads", str(args.threads)], check=True, cwd=ROOT)
    summary = json.loads(out.read_text())["senses"]["summary"]
    mine = next(v for k, v in summary.items() if k != "most frequent sense")
    return {"layers": {k: v["macro_f1"] for k, v in mine["layers"].items()}, "best_layer": mine.get("best_layer"),
            "best_macro_f1": mine["layers"][mine["best_layer"]]["macro_f1"] if mine.get("best_layer") else None}


def measure_kind(kind: str, args: argparse.Namespace, state: dict) -> None:
    if kind not in state["flops"]:
        print(f"{kind}: not trained yet (no count of its step's operations)")
        return
    steps, points = plan(kind, args, state)
    for point in points:
        key = f"{kind}/{point}"
        snap = args.out / "snapshots" / kind / f"step-{point}"
        if not snap.exists():
            continue
        if key in state["measures"]:
            if state["measures"][key].get("pos") is None:  # measured before `finetune` took a GPT: only this
                print(f"measuring {kind}'s part of speech at step {point}")
                state["measures"][key]["pos"] = pos_accuracy(snap, args)
                save_state(args, state)
            continue
        print(f"measuring {kind} at step {point}")
        state["measures"][key] = {
            "kind": kind, "step": point, "steps": steps, "flops": point * state["flops"][kind],
            "tokens_seen": tokens_seen(kind, args, point), "eval": run_eval(kind, args, point),
            "pos": pos_accuracy(snap, args), "senses": senses(snap, args)}
        save_state(args, state)


# ----------------------------------------------------------------------------------------------------------
# the results: a table, a JSON file for the docs, a figure


def guess_accuracy(kind: str, evaluation: dict) -> float | None:
    """Held-out guesses right: masked words (BERT's, ELECTRA's generator's) or the next word (a GPT)."""
    return evaluation.get("mlm_accuracy", evaluation.get("gen_top1", evaluation.get("top1")))


def result_rows(state: dict) -> list[dict]:
    rows = []
    for m in state["measures"].values():
        rows.append({**m, "guess_accuracy": guess_accuracy(m["kind"], m["eval"])})
    return sorted(rows, key=lambda r: (list(KINDS).index(r["kind"]), r["flops"]))


def print_table(rows: list[dict]) -> None:
    print(f"{'kind':9} {'steps':>11} {'TFLOP':>6} {'tokens':>6} {'guesses':>8} {'POS test':>9} {'senses':>16}")
    for r in rows:
        seen = f"{r['tokens_seen'] / 1e6:.1f}M" if r["tokens_seen"] is not None else "-"
        guess = f"{100 * r['guess_accuracy']:.1f}%" if r["guess_accuracy"] is not None else "-"
        best = r["senses"]["best_macro_f1"]
        sense = f"{100 * best:.1f}% {r['senses']['best_layer']}" if best is not None else "-"
        pos = f"{100 * r['pos']['test']['accuracy']:.1f}%" if r["pos"] else "-"
        print(f"{r['kind']:9} {r['step']:>5}/{r['steps']:<5} {r['flops'] / 1e12:6.1f} {seen:>6} {guess:>8} "
              f"{pos:>9} {sense:>16}")


def report(args: argparse.Namespace, state: dict, command: str) -> None:
    rows = result_rows(state)
    print_table(rows)
    if not rows:
        return
    result = {"command": command, "machine": machine(), "budget_bert_steps": args.budget, "lr": args.lr,
              "pos_steps": args.pos_steps, "flops_per_step": state["flops"], "train_s": state["train_s"],
              "rows": rows}
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(result, indent=1) + "\n")
    print(f"results: {args.results}")
    if args.app_json:
        from ctxmodels.analysis.compute_comparison import from_results

        args.app_json.parent.mkdir(parents=True, exist_ok=True)
        args.app_json.write_text(json.dumps(from_results(result), indent=1) + "\n")
        print(f"the app's copy (How they learn): {args.app_json}")
    if args.figure:
        from bench.notebook_images import photograph
        from ctxmodels.viz.compute_curves import objectives_by_compute

        figure = json.loads(objectives_by_compute(rows).to_json())
        photograph({args.figure.stem: figure}, args.figure.parent, 1100)


# ----------------------------------------------------------------------------------------------------------
# shipping the finished runs as assets/successors/KIND-eltec (then `ctxmodels quality` and `ship --cards`)


def started_as(kind: str, args: argparse.Namespace) -> str:
    """The command that started the kind's run, with this machine's folders taken out."""
    first = json.loads((args.out / "runs" / kind / "metrics.jsonl").read_text().splitlines()[0])
    return without_folders(first["command"], args).split(" --stop-at")[0]


def without_folders(text: str, args: argparse.Namespace) -> str:
    """``text`` with this machine's folders written as a checkout's (the corpus beside it in ../shared)."""
    return text.replace(str(args.corpus), "../shared/data/corpus/eltec-eng.txt").replace(str(ROOT) + "/", "")


def card_intro(kind: str, args: argparse.Namespace, state: dict) -> str:
    steps, _ = plan(kind, args, state)
    budget = args.budget * state["flops"]["bert"]
    return (f"# {kind}-eltec: a small {OBJECTIVE_TITLES[kind]} trained with ctxmodels on ELTeC-eng novels\n\n"
            f"One of the objectives that came after BERT, trained from random weights to the same compute as the "
            f"others by `python bench/bench_objectives.py` ({budget / 1e12:.1f} TFLOP: {args.budget:,} steps of "
            f"BERT's; this kind's step costs {state['flops'][kind] / 1e9:.1f} GFLOP, so {steps:,} steps), on one "
            f"CPU thread. Started as `{started_as(kind, args)}` (stopped at snapshots and resumed; the schedule ran "
            f"to its end). A small model trained briefly: its guesses are rough, and it is here to show how its "
            f"objective works (the How they learn page), not to be used for a task. Weights stored in fp16 (every "
            f"loader widens them to float32).\n\n")


OBJECTIVE_TITLES = {"roberta": "RoBERTa (masked words only)", "albert": "ALBERT (masked words + sentence order)",
                    "electra": "ELECTRA (replaced-token detection; its generator in generator/)",
                    "gpt": "GPT (a left-to-right language model)"}


def ship_kind(kind: str, args: argparse.Namespace, state: dict) -> None:
    from ctxmodels.release.shipping import ship

    steps, _ = plan(kind, args, state)
    if not (args.out / "snapshots" / kind / f"step-{steps}").exists():
        print(f"{kind}: not finished, not shipped")
        return
    folder = ROOT / "assets" / "successors" / f"{kind}-eltec"
    ship(args.out / "runs" / kind, folder)
    card = folder / "README.md"
    text = card.read_text(encoding="utf-8")
    text = without_folders(text.replace("# ", "## Training run: ", 1), args)
    card.write_text(card_intro(kind, args, state) + text, encoding="utf-8")
    print(f"{kind}: shipped to {folder}")


# ----------------------------------------------------------------------------------------------------------
# the state file


def state_path(args: argparse.Namespace) -> Path:
    return args.out / "bench.json"


def load_state(args: argparse.Namespace) -> dict:
    path = state_path(args)
    state = json.loads(path.read_text()) if path.exists() else {}
    for key in ("flops", "train_s", "measures"):
        state.setdefault(key, {})
    return state


def save_state(args: argparse.Namespace, state: dict) -> None:
    """Write ``state`` merged into what is on disk: a training and a measuring process may run side by side."""
    path = state_path(args)
    disk = load_state(args)
    for key, value in state.items():
        if isinstance(value, dict):
            for inner, v in value.items():
                disk[key][inner] = {**disk[key].get(inner, {}), **v} if isinstance(v, dict) else v
        else:
            disk[key] = value
    state.update(disk)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(disk, indent=1))
    os.replace(tmp, path)


def machine() -> str:
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch threads per run"


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--corpus", type=Path, default=Path(os.environ.get("CTXMODELS_DATA", ROOT.parent / "shared" /
                                                                       "data")) / "corpus" / "eltec-eng.txt")
    p.add_argument("--out", type=Path, default=ROOT / "runs" / "objectives")
    p.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    p.add_argument("--budget", type=int, default=3000, help="BERT steps of compute per kind (default 3000)")
    p.add_argument("--points", type=float, nargs="+", default=[0, 0.25, 0.5, 1.0],
                   help="fractions of the budget measured (default 0 0.25 0.5 1; 0: the untrained start)")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--pos-steps", type=int, default=300)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--phase", choices=("all", "flops", "train", "measure", "report", "ship"), default="all",
                   help="ship: copy the finished runs to assets/successors/KIND-eltec (fp16) with a card saying how "
                        "they were made (not part of all)")
    p.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "objectives.json")
    p.add_argument("--figure", type=Path, default=ROOT / "docs" / "images" / "objectives-by-compute.png",
                   help="where the figure's picture goes (Chromium photographs it); '' for none")
    p.add_argument("--app-json", type=Path, default=ROOT / "assets" / "successors" / "compute.json",
                   help="the measures as the app's How they learn page shows them; '' for none")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    args.out = args.out.resolve()
    args.figure = args.figure if str(args.figure) not in ("", ".") else None
    args.app_json = args.app_json if str(args.app_json) not in ("", ".") else None
    args.out.mkdir(parents=True, exist_ok=True)
    state = load_state(args)
    kinds = trainable_kinds(args.kinds)
    if "bert" not in kinds and "bert" not in state["flops"]:
        raise SystemExit("the budget is counted in BERT's steps: --kinds must include bert (or have counted it)")
    if args.phase in ("all", "flops", "train"):
        flops_phase(kinds, args, state)
    if args.phase in ("all", "train"):
        typed = argv if argv is not None else sys.argv[1:]
        state.setdefault("command", " ".join(["python bench/bench_objectives.py", *typed]))
        for kind in kinds:
            train_kind(kind, args, state)
    if args.phase in ("all", "measure"):
        for kind in kinds:
            measure_kind(kind, args, state)
    if args.phase == "ship":
        for kind in kinds:
            if kind != "bert":
                ship_kind(kind, args, state)
        return
    report(args, state, state.get("command", ""))


if __name__ == "__main__":
    main()
