"""``ctxmodels finetune --model M --task T --out DIR``: fine-tune a BERT, another encoder transformers reads
(RoBERTa, DistilBERT, ALBERT, ELECTRA, DeBERTa-v2), a GPT (as ``ctxmodels train gpt`` writes it) or ELMo on a
labelled task; all but ELMo also on sentence pairs and on extractive question answering
(:mod:`ctxmodels.training.finetune_qa`).

The run goes through the shared trainer (progress bar, metrics.jsonl, checkpoints, Ctrl-C then ``--resume``, the
NaN guard); at the end dev and test are scored and ``finetune.json`` and the model card are written
(:mod:`ctxmodels.training.finetune_task`).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from ..bounds import float_range, int_range
from ..training.run_lock import LOCK_NAME
from . import BATCH_SIZE, SEED, THREADS, bounded


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None,
                   help="the pre-trained model: anything ctxmodels.load accepts (bert-eltec, elmo-eltec, a BERT or "
                        "ELMo folder, a Hugging Face encoder folder or cache name: BERT, RoBERTa, DistilBERT, "
                        "ALBERT, ELECTRA, DeBERTa-v2; a GPT-2 folder such as gpt-eltec); not needed with --resume")
    p.add_argument("--task", default=None,
                   help="pos, ner, wsd:LEMMA, period, or a file: .tsv (text<TAB>label; a first line "
                        "text_a<TAB>text_b<TAB>label makes it a sentence-pair task), SQuAD v1.1 .json (question "
                        "answering) or CoNLL; not needed with --resume")
    p.add_argument("--out", required=True, help="folder for the fine-tuned model (must be new, unless --resume)")
    p.add_argument("--mode", choices=["finetune", "feature"], default=None,
                   help="finetune: train every weight (default); feature: freeze the pre-trained model and train "
                        "only the task layer (ELMo: the scalar mix and the task layer)")
    p.add_argument("--steps", type=bounded(int_range(1, 10_000_000)), default=None,
                   help="optimizer steps (default: --epochs passes over the training examples)")
    p.add_argument("--epochs", type=bounded(int_range(1, 1000)), default=None, help="passes (default 3)")
    p.add_argument("--lr", type=bounded(float_range(0, 1, lo_open=True)), default=None,
                   help="peak learning rate (default: BERT and the other encoders 3e-5 from hidden size 768, "
                        "1e-4 for 384-512, 3e-4 up to 256; ELMo fine-tuned 5e-4; anything in feature mode 1e-3)")
    p.add_argument("--batch-size", type=bounded(BATCH_SIZE), default=None, help="examples per step (default 32)")
    p.add_argument("--max-length", type=bounded(int_range(8, 4096)), default=None,
                   help="longest input: word pieces with the specials ([CLS]/[SEP], <s>/</s>), ELMo words; "
                        "longer ones are cut at a word boundary (default 128)")
    p.add_argument("--max-examples", type=bounded(int_range(1, 10_000_000)), default=None,
                   help="use at most this many examples of each split (quick runs)")
    p.add_argument("--max-answer-length", type=bounded(int_range(1, 4096)), default=None,
                   help="question answering: the longest answer predicted, in word pieces (default 30)")
    p.add_argument("--doc-stride", type=bounded(int_range(1, 4096)), default=None,
                   help="question answering: a context longer than --max-length is read in windows, each starting "
                        "this many word pieces after the one before (default: half a window)")
    p.add_argument("--semcor-dir", default=None, help="SemCor tables for pos/ner/wsd (default: the shipped copy)")
    p.add_argument("--corpus", default=None, help="the novels for the period task (default: the shared corpus)")
    p.add_argument("--seed", type=bounded(SEED), default=None, help="seed of the data order and the new head")
    p.add_argument("--eval-every", type=bounded(int_range(0, 10_000_000)), default=None,
                   help="score the dev split every N steps (default: four times a run)")
    p.add_argument("--save-every", type=bounded(int_range(0, 10_000_000)), default=None,
                   help="checkpoint every N steps, and on Ctrl-C (default 500)")
    p.add_argument("--threads", type=bounded(THREADS), default=None, help="torch CPU threads")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (logs still go to metrics.jsonl)")
    p.add_argument("--resume", action="store_true",
                   help="continue the run in --out (after Ctrl-C or --steps); its options are read from run.json")


def _check_out(out: Path, resume: bool) -> None:
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file; give a folder for the fine-tuned model")
    if resume:
        if not (out / "run.json").is_file():
            raise ValueError(f"--out {out} holds no fine-tuning run to resume (no run.json); start one without "
                             "--resume")
    elif out.is_dir() and any(p.name != LOCK_NAME for p in out.iterdir()):
        raise ValueError(f"--out {out} already exists and is not empty; pass --resume to continue the run in it, or "
                         "choose a new folder")


def run(args: argparse.Namespace) -> int:
    from ..training.run_lock import hold_folder

    with hold_folder(args.out):  # from the folder check on: nothing else writes the run meanwhile
        return _fine_tune(args)


def _fine_tune(args: argparse.Namespace) -> int:
    import torch

    from .. import load
    from ..loading import resolve
    from ..tasks import load_task
    from ..training.finetune_qa import QaTask
    from ..training.finetune_task import FinetuneSettings, FinetuneTask, build_task, final_metrics
    from ..training.trainer import Trainer, TrainingDiverged, TrainingInterrupted

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    out = Path(args.out)
    _check_out(out, args.resume)
    if not args.resume and (args.model is None or args.task is None):
        raise ValueError("--model and --task are needed to start a fine-tuning run")
    given = {"model": args.model, "task": args.task, "mode": args.mode, "steps": args.steps, "epochs": args.epochs,
             "lr": args.lr, "batch_size": args.batch_size, "max_length": args.max_length,
             "max_examples": args.max_examples, "seed": args.seed, "eval_every": args.eval_every,
             "max_answer_length": args.max_answer_length, "doc_stride": args.doc_stride,
             "save_every": args.save_every,
             "semcor_dir": str(Path(args.semcor_dir).resolve()) if args.semcor_dir else None,
             "corpus": str(Path(args.corpus).resolve()) if args.corpus else None}
    if args.model is not None:
        given["model_path"] = str(resolve(args.model)[0])
    settings = FinetuneSettings.resolve(given, out, args.resume)
    backbone = load(settings.model_path or settings.model)
    data = load_task(settings.task, semcor_dir=settings.semcor_dir, corpus=settings.corpus,
                     max_examples=settings.max_examples, seed=settings.seed)
    task, cfg = build_task(backbone, data, settings, QaTask if data.kind == "qa" else FinetuneTask)
    cfg.progress = not args.no_progress
    out.mkdir(parents=True, exist_ok=True)
    settings.save(out)
    command = "ctxmodels " + " ".join(shlex.quote(a) for a in getattr(args, "argv", []))
    trainer = Trainer(task, cfg, out, command=command)
    print(f"fine-tuning {settings.model} ({backbone.kind}, {settings.mode}) on {data.name}: {task.sizes()}, "
          f"{cfg.max_steps} steps, lr {cfg.lr:g}", file=sys.stderr)
    if task.cut_words:
        print(f"note: {task.cut_examples} example(s) longer than {task.max_length} "
              f"{'word pieces' if task.tokenizer is not None else 'words'} were cut at a word boundary",
              file=sys.stderr)
    try:
        trainer.train(resume=args.resume)
    except (TrainingDiverged, TrainingInterrupted) as e:
        print(f"ctxmodels: {e}", file=sys.stderr)
        return 1 if isinstance(e, TrainingDiverged) else 130
    info = final_metrics(task, trainer)
    shown = task.shown(info["metrics"])
    print(f"done: {trainer.step} steps in {info['train_seconds']:.0f} s ({info['examples_per_second']:.1f} "
          f"examples/s), model in {out}; {shown}")
    return 0
