"""ELMo training and inference speed on this machine, by hand: ``python bench/bench_elmo.py``.

Prints one table: for each preset and window length, training tokens/s with the sampled softmax and with the
exact full softmax (median over a few optimizer steps, after one warm-up step), their ratio, the time of one
held-out evaluation, and the inference latency of one 20-word sentence returning all layers (median of many).

The output vocabulary is the real one (``--vocab-size`` most frequent words of the ELTeC corpus, the shipped
default's data) because the softmax cost depends on it. The encoded corpus is cached (``--data-cache``), so
only the first run pays for tokenising 11.6 M words. Timings on a shared machine are noisy: read the medians,
compare ratios within one run, and note the load average printed with the table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ctxmodels.checkpoint import file_sha256  # noqa: E402
from ctxmodels.elmo import ElmoConfig  # noqa: E402
from ctxmodels.paths import data_dir  # noqa: E402
from ctxmodels.training.elmo_task import ElmoLMTask, load_corpus  # noqa: E402
from ctxmodels.training.trainer import TrainConfig, make_optimizer  # noqa: E402

SENTENCE = "The old man walked slowly down to the bank of the river and sat there until the sun set ."  # 20 words


def parse_args() -> argparse.Namespace:
    data = data_dir()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", default=str(data / "corpus" / "eltec-eng.txt"))
    p.add_argument("--data-cache", default="/tmp/ctxmodels-bench-elmo-cache")
    p.add_argument("--vocab-size", type=int, default=30_000)
    p.add_argument("--presets", default="tiny,mini,small-cpu,published-small")
    p.add_argument("--seq-lens", default="20,64")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--n-samples", type=int, default=1024)
    p.add_argument("--steps", type=int, default=4, help="timed optimizer steps per row (after one warm-up step)")
    p.add_argument("--eval-tokens", type=int, default=5_000)
    p.add_argument("--latency-runs", type=int, default=30)
    p.add_argument("--threads", type=int, default=2)
    return p.parse_args()


def median_seconds(fn, runs: int) -> float:
    times = []
    for i in range(runs):
        t = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def train_speed(task: ElmoLMTask, steps: int) -> float:
    """Tokens per second of whole optimizer steps (batch making, forward, backward, AdamW)."""
    model = task.model
    model.train()
    opt = make_optimizer(task, TrainConfig(lr=1e-3))

    def step(i: int) -> None:
        batch = task.get_batch(0, i)
        loss, _ = task.loss(model, batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    step(0)  # warm-up: allocations, first-call overheads
    seconds = median_seconds(lambda i: step(i + 1), steps)
    return task.batch_size * task.seq_len / seconds


@torch.no_grad()
def inference_latency(bilm, words: list[str], runs: int) -> float:
    """Seconds to embed one tokenised sentence, all layers (char ids, boundaries, forward), median."""
    bilm.eval()
    bilm.embed_sentences([words])  # warm-up
    return median_seconds(lambda i: bilm.embed_sentences([words]), runs)


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    corpus = Path(args.corpus)
    t = time.perf_counter()
    encoded, info = load_corpus(corpus, None, 0, args.vocab_size, file_sha256(corpus), Path(args.data_cache))
    print(f"corpus {corpus.name}: {encoded.n_train_tokens:,} training tokens, output vocabulary {len(encoded.vocab):,} "
          f"(loaded in {time.perf_counter() - t:.1f} s)")
    print(f"torch {torch.__version__}, {args.threads} threads, batch {args.batch_size} windows, "
          f"sampled softmax {args.n_samples} candidates, load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores (shared machine: expect noise)\n")

    header = (f"{'preset':<16} {'params':>7} {'seq':>4} {'sampled tok/s':>14} {'full tok/s':>11} {'ratio':>6} "
              f"{'eval s':>7} {'latency ms':>11}")
    print(header)
    print("-" * len(header))
    words = SENTENCE.split()
    for preset in args.presets.split(","):
        latency = None
        for seq_len in (int(s) for s in args.seq_lens.split(",")):
            speeds = {}
            for name, n_samples in (("sampled", args.n_samples), ("full", 0)):
                task = ElmoLMTask(encoded, ElmoConfig.preset(preset), seq_len=seq_len, batch_size=args.batch_size,
                                  n_samples=n_samples, eval_tokens=args.eval_tokens)
                speeds[name] = train_speed(task, args.steps)
            task.model.eval()
            t = time.perf_counter()
            with torch.no_grad():
                task.evaluate(task.model)
            eval_s = time.perf_counter() - t
            if latency is None:
                latency = 1000 * inference_latency(task.model.bilm, words, args.latency_runs)
            n_params = sum(p.numel() for p in task.model.parameters()) / 1e6
            print(f"{preset:<16} {n_params:>6.1f}M {seq_len:>4} {speeds['sampled']:>14,.0f} {speeds['full']:>11,.0f} "
                  f"{speeds['sampled'] / speeds['full']:>5.2f}x {eval_s:>7.1f} {latency:>11.1f}", flush=True)
    print(f"\neval s: exact full-softmax perplexity (both directions) over {args.eval_tokens:,} held-out tokens; "
          f"latency: one {len(words)}-word sentence, all layers, median of {args.latency_runs}. "
          f"Load average now {os.getloadavg()[0]:.1f}.")


if __name__ == "__main__":
    main()
