"""Training speed of BERT and its successors on the same batch: one full step of each kind, tokens per second.

    python bench/bench_successors.py                    # mini, batch 8 x 128 pieces, 6 timed steps each
    python bench/bench_successors.py --preset tiny --steps 3 --threads 1
    python bench/bench_successors.py --device cuda --bf16
    python bench/bench_successors.py --preset tiny --batch 32 --flops   # and FLOPs of one step (FlopCounterMode)

A step is what ``ctxmodels train KIND`` runs: forward, loss, backward, gradient clipping at 1.0, AdamW. Every
model has the preset's size (layers, width, heads, feed-forward) and sees the same token ids, the same 15% of
positions chosen for the masked LMs (at most 20 per 128, as BERT), batch and sequence length:

- bert          ours (ctxmodels.bert.BertForPreTraining): masked LM at the chosen positions + next-sentence loss
- roberta       transformers' RobertaForMaskedLM as ``train roberta`` runs it: the encoder, then the LM head on
                the chosen positions only (``RobertaTask.score``)
- roberta-hf    the same model called as transformers' own class is: ``model(input_ids, labels=...)``, the head
                on every position
- gpt           transformers' GPT2LMHeadModel as ``train gpt`` runs it: next-piece loss at every position
- electra       ELECTRA as ``train electra`` runs it (``ElectraPair``): a generator 1/4 as wide, its vocabulary
                head on the chosen positions only, samples replacing them, the discriminator's loss on every
                piece, loss = generator + 50 x discriminator, embeddings shared
- electra-hf    the same two models called as transformers' own classes are: ``generator(input_ids,
                labels=...)`` (the head on every position), samples at the chosen positions, then
                ``discriminator(input_ids, labels=...)``
- albert        ALBERT as ``train albert`` runs it (``AlbertTask.score``): factorised embeddings (half the hidden
                size, at most 128), one group of shared layers, the vocabulary head on the chosen positions only,
                plus the sentence-order loss
- albert-hf     the same model called as transformers' own class is: ``model(input_ids, labels=...,
                sentence_order_label=...)``, the head on every position

Steps of all kinds are interleaved (A, B, C, D, A, ...) after two untimed ones, and the median is reported, so
background load hits all of them alike. The table is printed; ``--results FILE`` also writes it as JSON (the
docs' speed table is generated from ``bench/results/successors.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

VOCAB = 16_000  # train bert's default vocabulary
PAD, CLS, SEP, MASK = 0, 2, 3, 4


def make_batch(batch: int, seq: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """Random pieces (no specials inside), 15% of them chosen (at most 15% of seq, rounded up) with 80/10/10."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, VOCAB, (batch, seq), generator=g)
    ids[:, 0], ids[:, -1] = CLS, SEP
    n_pred = -(-15 * seq // 100)
    positions = torch.stack([torch.randperm(seq - 2, generator=g)[:n_pred] + 1 for _ in range(batch)]).sort().values
    labels = torch.full((batch, seq), -100)
    labels.scatter_(1, positions, ids.gather(1, positions))
    masked = ids.clone()
    masked.scatter_(1, positions, MASK)
    return {"ids": ids, "masked": masked, "positions": positions, "mlm_labels": ids.gather(1, positions),
            "labels": labels, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids),
            "nsp": torch.randint(0, 2, (batch,), generator=g)}


def build(preset: str, seq: int) -> dict[str, tuple[torch.nn.Module, object]]:
    """{row: (model, loss function of the batch)} at the preset's size, each from the same seed."""
    import transformers

    from ctxmodels.bert import BertConfig, BertForPreTraining
    from ctxmodels.training.gpt_task import GptTask
    from ctxmodels.training.roberta_task import RobertaTask

    size = BertConfig.preset(preset, vocab_size=VOCAB, pad_token_id=PAD)
    shape = dict(hidden_size=size.hidden_size, num_hidden_layers=size.num_hidden_layers,
                 num_attention_heads=size.num_attention_heads, intermediate_size=size.intermediate_size)
    torch.manual_seed(0)
    bert = BertForPreTraining(size)
    roberta_config = transformers.RobertaConfig(vocab_size=VOCAB, max_position_embeddings=seq + PAD + 2,
                                                type_vocab_size=1, pad_token_id=PAD, **shape)
    torch.manual_seed(0)
    roberta = transformers.RobertaForMaskedLM(roberta_config)
    torch.manual_seed(0)
    roberta_hf = transformers.RobertaForMaskedLM(roberta_config)
    torch.manual_seed(0)
    gpt = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=VOCAB, n_positions=seq, n_embd=size.hidden_size, n_layer=size.num_hidden_layers,
        n_head=size.num_attention_heads, n_inner=size.intermediate_size, bos_token_id=CLS, eos_token_id=SEP))

    def bert_loss(b):
        out = bert(input_ids=b["masked"], token_type_ids=b["token_type_ids"], attention_mask=b["attention_mask"],
                   mlm_positions=b["positions"])
        logits = out.prediction_logits.float()
        return (F.cross_entropy(logits.reshape(-1, logits.shape[-1]), b["mlm_labels"].reshape(-1))
                + F.cross_entropy(out.seq_relationship_logits.float(), b["nsp"]))

    def roberta_loss(b):
        total, n, _ = RobertaTask.score(roberta, {"input_ids": b["masked"], "attention_mask": b["attention_mask"],
                                                  "labels": b["labels"]})
        return total / n

    def roberta_hf_loss(b):
        return roberta_hf(input_ids=b["masked"], attention_mask=b["attention_mask"], labels=b["labels"]).loss

    def gpt_loss(b):
        total, n, _ = GptTask.score(gpt, {"input_ids": b["ids"], "attention_mask": b["attention_mask"],
                                          "labels": b["ids"]})
        return total / n

    rows = {"bert": (bert, bert_loss), "roberta": (roberta, roberta_loss), "roberta-hf": (roberta_hf, roberta_hf_loss),
            "gpt": (gpt, gpt_loss)}
    return rows | electra_rows(preset, seq) | albert_rows(preset)


def electra_rows(preset: str, seq: int) -> dict[str, tuple[torch.nn.Module, object]]:
    """ELECTRA's two rows: the pair as ``train electra`` scores it, and the same models through transformers' own
    loss paths (the same weights at the start)."""
    import transformers

    from ctxmodels.training.bert_data import IGNORE_INDEX
    from ctxmodels.training.electra_task import ElectraPair, ElectraSettings, electra_configs, replaced_token_labels

    tok = type("Tok", (), {"vocab_size": VOCAB, "pad_id": PAD, "cls_id": CLS, "sep_id": SEP})()
    disc_config, gen_config = electra_configs(ElectraSettings(preset=preset), tok, 0.25)
    pairs = []
    for _ in range(2):
        torch.manual_seed(0)
        pairs.append(ElectraPair(transformers.ElectraForMaskedLM(gen_config),
                                 transformers.ElectraForPreTraining(disc_config), 50.0))
    ours, theirs = pairs

    def electra_loss(b):
        return ours.loss(ours({"input_ids": b["masked"], "attention_mask": b["attention_mask"],
                               "labels": b["labels"]}))[0]

    def electra_hf_loss(b):
        gen = theirs.generator(input_ids=b["masked"], attention_mask=b["attention_mask"], labels=b["labels"])
        chosen = b["labels"] != IGNORE_INDEX
        with torch.no_grad():
            sampled = torch.multinomial(gen.logits[chosen].float().softmax(-1), 1).squeeze(-1)
        corrupted, target = replaced_token_labels(b["masked"], b["labels"], b["attention_mask"], sampled)
        disc = theirs.discriminator(input_ids=corrupted, attention_mask=b["attention_mask"], labels=target.clamp(min=0))
        return gen.loss + 50.0 * disc.loss

    return {"electra": (ours, electra_loss), "electra-hf": (theirs, electra_hf_loss)}


def albert_rows(preset: str) -> dict[str, tuple[torch.nn.Module, object]]:
    """ALBERT's two rows: the model as ``train albert`` scores it, and the same weights through transformers' own
    loss path (the vocabulary head on every position)."""
    import transformers

    from ctxmodels.bert import BertConfig
    from ctxmodels.training.albert_task import AlbertSettings, AlbertTask, albert_config, default_embedding_size

    tok = type("Tok", (), {"vocab_size": VOCAB, "pad_id": PAD, "cls_id": CLS, "sep_id": SEP})()
    width = default_embedding_size(BertConfig.preset(preset).hidden_size)
    config = albert_config(AlbertSettings(preset=preset, embedding_size=width), tok)
    models = []
    for _ in range(2):
        torch.manual_seed(0)
        models.append(transformers.AlbertForPreTraining(config))
    ours, theirs = models

    def albert_loss(b):
        mlm, n, _, sop, _ = AlbertTask.score(ours, {
            "input_ids": b["masked"], "token_type_ids": b["token_type_ids"], "attention_mask": b["attention_mask"],
            "mlm_positions": b["positions"], "mlm_labels": b["mlm_labels"], "sentence_order_label": b["nsp"]})
        return mlm / n + sop / len(b["nsp"])

    def albert_hf_loss(b):
        return theirs(input_ids=b["masked"], token_type_ids=b["token_type_ids"], attention_mask=b["attention_mask"],
                      labels=b["labels"], sentence_order_label=b["nsp"]).loss

    return {"albert": (ours, albert_loss), "albert-hf": (theirs, albert_hf_loss)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--preset", default="mini")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--steps", type=int, default=6, help="timed steps per kind")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--device", default="cpu")
    p.add_argument("--bf16", action="store_true", help="bf16 autocast, as train --bf16")
    p.add_argument("--flops", action="store_true",
                   help="also count the FLOPs of one step's forward and backward (torch's FlopCounterMode: matrix "
                        "products and attention; the optimizer's elementwise work is not counted)")
    p.add_argument("--results", type=Path, help="also write the table here as JSON")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    rows = build(args.preset, args.seq)
    batch = {k: v.to(device) for k, v in make_batch(args.batch, args.seq).items()}
    optimizers = {}
    for name, (model, _) in rows.items():
        model.to(device).train()
        optimizers[name] = torch.optim.AdamW(model.parameters(), lr=1e-4)
    times: dict[str, list[float]] = {name: [] for name in rows}

    def step(name: str) -> float:
        model, loss_fn = rows[name]
        sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
        sync()
        start = time.perf_counter()
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.bf16):
            loss = loss_fn(batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizers[name].step()
        optimizers[name].zero_grad(set_to_none=True)
        sync()
        return time.perf_counter() - start

    flops = {name: count_flops(*rows[name], batch) for name in rows} if args.flops else {}
    for i in range(args.steps + 2):
        for name in rows:
            elapsed = step(name)
            if i >= 2:
                times[name].append(elapsed)
    tokens = args.batch * args.seq
    print(f"preset {args.preset}, batch {args.batch} x {args.seq} pieces, vocabulary {VOCAB}, {args.device}"
          f"{' bf16' if args.bf16 else ''}, threads {torch.get_num_threads()}, median of {args.steps} steps")
    print(f"{'kind':<12} {'params':>11} {'step ms':>9} {'tokens/s':>10}" + (f" {'GFLOP/step':>11}" if flops else ""))
    table = []
    for name, (model, _) in rows.items():
        median = statistics.median(times[name])
        n_params = sum(q.numel() for q in model.parameters())
        print(f"{name:<12} {n_params:>11,} {1000 * median:>9.1f} {tokens / median:>10,.0f}"
              + (f" {flops[name] / 1e9:>11.2f}" if flops else ""))
        table.append({"kind": name, "params": n_params, "step_ms": 1000 * median, "tokens_per_s": tokens / median,
                      "gflop": flops[name] / 1e9 if flops else None})
    if args.results:
        args.results.parent.mkdir(parents=True, exist_ok=True)
        args.results.write_text(json.dumps({
            "command": "python bench/bench_successors.py " + " ".join(sys.argv[1:]),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch threads {torch.get_num_threads()}, "
                       f"{args.device}{' bf16' if args.bf16 else ''}, load average {os.getloadavg()[0]:.1f} at the end",
            "preset": args.preset, "batch": args.batch, "seq": args.seq, "steps": args.steps, "rows": table},
            indent=1) + "\n")


def count_flops(model: torch.nn.Module, loss_fn, batch: dict[str, torch.Tensor]) -> int:
    """FLOPs of one forward and backward of ``loss_fn`` (the gradients are thrown away)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        loss_fn(batch).backward()
    model.zero_grad(set_to_none=True)
    return counter.get_total_flops()


if __name__ == "__main__":
    main()
