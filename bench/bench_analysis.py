"""Analysis benchmark: projections, sense tables and attention, ours vs the plain library call, in the same run.

    python bench/bench_analysis.py            # everything (~10 minutes on a loaded 2-core machine)
    python bench/bench_analysis.py --quick    # 300 points only, no cold starts, 2 repeats
    python bench/bench_analysis.py --torch-threads 1   # steadier attention figures on a busy small machine

Projection rows (clustered random vectors: 6 centres + noise, cosine geometry), for PCA, UMAP and t-SNE at
300 and 1000 points of width 256 and 512:

- ours  ``project(X, method)`` with its defaults: rows L2-normalised, PCA pre-reduction to 50 dimensions before
        UMAP/t-SNE, exact neighbours handed to UMAP, BLAS/OpenMP limited to half the cores.
- ref   the library called directly on the raw vectors the way a notebook would: ``PCA(2)``,
        ``umap.UMAP(metric="cosine", random_state=0)``, ``TSNE(metric="cosine", init="pca", random_state=0)``.

"warm" is the median of ``--repeats`` calls in this process after one untimed call (ours and ref interleaved, so
background load hits both alike); "cold" is one call in a fresh Python process, imports and numba compilation
included. ``trust`` is sklearn's trustworthiness (10 neighbours, cosine) of the layout: 1 = every neighbour in
the layout is a neighbour in the input.

Sense rows: ``sense_table`` for 300 occurrences x 5 layers x 512 dims, k = 1 and 5 (both LOO k-NN, centroid, MFS,
silhouette) vs sklearn's ``cross_val_predict(KNeighborsClassifier, LeaveOneOut())`` for the same two k plus
``silhouette_score``; the 1-NN accuracies of both are printed to show they agree.

Attention rows: a random "mini" BERT (4 layers, 4 heads, 256 wide): ``compute_attention`` (tokenise, forward with
attention maps, to numpy) vs the bare forward pass without maps (the SDPA path), and the word merge, [CLS]/[SEP]
hiding, rollout and head summaries, for a 60-piece and a 512-piece input.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ctxmodels.analysis.projections import project  # noqa: E402


def clustered(n: int, dim: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(6, dim)) * 1.5 + 3.0  # a shared offset: anisotropic, like real word vectors
    return centres[rng.integers(0, 6, size=n)] + rng.normal(size=(n, dim))


def reference(X: np.ndarray, method: str) -> np.ndarray:
    if method == "pca":
        from sklearn.decomposition import PCA

        return PCA(2).fit_transform(X)
    if method == "umap":
        import umap

        return umap.UMAP(metric="cosine", random_state=0, n_jobs=1).fit_transform(X)
    from sklearn.manifold import TSNE

    return TSNE(metric="cosine", init="pca", random_state=0).fit_transform(X)


def ours(X: np.ndarray, method: str) -> np.ndarray:
    return project(X, method=method).coords


def timed(fn, *args) -> tuple[float, object]:
    t = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t, out


def cold_child(which: str, method: str, n: int, dim: int) -> None:
    """Run in a fresh process: one timed call (imports and compilation included), then one warm call."""
    X = clustered(n, dim)
    fn = ours if which == "ours" else reference
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first, _ = timed(fn, X, method)
        second, _ = timed(fn, X, method)
    print(json.dumps({"first": first, "second": second}))


def cold(which: str, method: str, n: int, dim: int) -> float:
    out = subprocess.run(
        [sys.executable, __file__, "--cold-child", which, method, str(n), str(dim)],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])["first"]


def bench_projections(sizes, repeats: int, with_cold: bool) -> list[dict]:
    from sklearn.manifold import trustworthiness

    rows = []
    for method in ("pca", "umap", "tsne"):
        for n, dim in sizes:
            X = clustered(n, dim)
            row = {"method": method, "n": n, "dim": dim}
            if with_cold and (n, dim) in (sizes[0], sizes[-1]):
                row["ours_cold"] = cold("ours", method, n, dim)
                row["ref_cold"] = cold("ref", method, n, dim)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ours(X, method), reference(X, method)  # untimed: imports and compilation
                t_ours, t_ref = [], []
                for _ in range(repeats):
                    t, Y_ours = timed(ours, X, method)
                    t_ours.append(t)
                    t, Y_ref = timed(reference, X, method)
                    t_ref.append(t)
            row["ours_warm"], row["ref_warm"] = statistics.median(t_ours), statistics.median(t_ref)
            row["ours_trust"] = trustworthiness(X, Y_ours, n_neighbors=10, metric="cosine")
            row["ref_trust"] = trustworthiness(X, Y_ref, n_neighbors=10, metric="cosine")
            rows.append(row)
            print_projection_row(row)
    return rows


def print_projection_row(r: dict) -> None:
    def s(key):
        return f"{r[key]:7.2f}" if key in r else "      -"

    ratio = r["ref_warm"] / r["ours_warm"]
    print(f"{r['method']:5} {r['n']:5} {r['dim']:4} | {s('ours_cold')} {s('ref_cold')} | {s('ours_warm')} "
          f"{s('ref_warm')} {ratio:6.1f}x | {r['ours_trust']:5.3f} {r['ref_trust']:5.3f}", flush=True)


def sense_data(n: int = 300, layers: int = 5, dim: int = 512, senses: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, senses, size=n)
    centres = rng.normal(size=(layers, senses, dim))
    strength = np.linspace(0.2, 1.2, layers)  # senses separate more in higher layers
    V = rng.normal(size=(n, layers, dim)) + 4.0
    V += strength[None, :, None] * centres[:, labels].transpose(1, 0, 2)
    return V, [f"s{c}" for c in labels]


def sklearn_sense_reference(V: np.ndarray, labels: list[str]) -> list[float]:
    from sklearn.metrics import silhouette_score
    from sklearn.model_selection import LeaveOneOut, cross_val_predict
    from sklearn.neighbors import KNeighborsClassifier

    acc1 = []
    y = np.array(labels)
    for layer in range(V.shape[1]):
        X = V[:, layer]
        for k in (1, 5):
            pred = cross_val_predict(KNeighborsClassifier(k, metric="cosine", algorithm="brute"), X, y,
                                     cv=LeaveOneOut())
            if k == 1:
                acc1.append(float(np.mean(pred == y)))
        silhouette_score(X, y, metric="cosine")
    return acc1


def bench_senses(repeats: int) -> None:
    from ctxmodels.analysis.senses import contextuality_table, sense_table

    V, labels = sense_data()
    sense_table(V[:20], labels[:20])  # untimed: imports
    t_ours, t_ref = [], []
    for _ in range(repeats):
        t, table = timed(sense_table, V, labels)
        t_ours.append(t)
        t, ref_acc = timed(sklearn_sense_reference, V, labels)
        t_ref.append(t)
    agree = np.allclose(table["knn1_accuracy"], ref_acc)
    print(f"sense_table 300 occ x 5 layers x 512 | ours {statistics.median(t_ours):6.3f} s | sklearn LOO "
          f"{statistics.median(t_ref):6.3f} s | {statistics.median(t_ref) / statistics.median(t_ours):5.1f}x | "
          f"1-NN acc per layer {np.round(table['knn1_accuracy'].to_numpy(), 3).tolist()} "
          f"(sklearn {'agrees' if agree else 'DIFFERS: ' + str(np.round(ref_acc, 3).tolist())})")

    rng = np.random.default_rng(1)
    vocab = [f"w{i}" for i in range(150)]
    words = [[vocab[j] for j in rng.integers(0, 150, size=20)] for _ in range(100)]
    sents = [rng.normal(size=(5, 20, 512)).astype(np.float32) + 1.0 for _ in words]
    t, _ = timed(contextuality_table, sents, None, None, words)
    print(f"contextuality_table 100 sentences x 20 words x 5 layers x 512 (self-sim over word types) | ours {t:6.3f} s")


def bench_attention(repeats: int) -> None:
    import torch

    from ctxmodels.analysis.attention import (
        attention_rollout,
        compute_attention,
        head_summaries,
        hide_special,
        merge_word_pieces,
    )
    from ctxmodels.bert import BertConfig, BertForPreTraining
    from ctxmodels.tokenization import WordPieceTokenizer

    rng = np.random.default_rng(0)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = ["".join(rng.choice(letters, size=rng.integers(2, 11))) for _ in range(400)]
    corpus = [" ".join(rng.choice(vocab, size=30)) for _ in range(300)]
    tokenizer = WordPieceTokenizer.train(corpus, vocab_size=1000, min_frequency=1)
    torch.manual_seed(0)
    model = BertForPreTraining(BertConfig.preset("mini", vocab_size=tokenizer.vocab_size)).eval()
    cfg = model.config
    print(f"random mini BERT: {cfg.num_hidden_layers} layers, {cfg.num_attention_heads} heads, "
          f"{cfg.hidden_size} wide; torch threads {torch.get_num_threads()}")
    for target in (60, 512):
        words = []
        while len(tokenizer.encode(words)) < target:
            words.append(str(rng.choice(vocab)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            enc = tokenizer.encode(words, max_length=target)
            compute_attention(model, tokenizer, words, max_length=target)  # untimed warm-up
            ids = torch.tensor([enc.ids])
            t_ours, t_ref = [], []
            for _ in range(repeats):
                t, maps = timed(compute_attention, model, tokenizer, words, None, target)
                t_ours.append(t)
                with torch.no_grad():
                    t, _ = timed(model.bert, ids)
                t_ref.append(t)
        steps = {}
        steps["merge"], merged = timed(merge_word_pieces, maps)
        steps["hide"], _ = timed(hide_special, merged)
        steps["rollout"], _ = timed(attention_rollout, maps)
        steps["summaries"], _ = timed(head_summaries, maps)
        mb = maps.attentions.nbytes / 2**20
        t_ours_ms = statistics.median(t_ours) * 1e3
        print(f"T={maps.n_tokens:3} ({len(enc.words)} words) | compute_attention {t_ours_ms:7.1f} ms"
              f" | bare forward (no maps) {statistics.median(t_ref) * 1e3:7.1f} ms | maps {mb:6.1f} MiB | "
              + " ".join(f"{k} {v * 1e3:.1f} ms" for k, v in steps.items()))
    base = 12 * 12 * 512 * 512 * 4 / 2**20
    print(f"(BERT-base maps at T=512 would take 12 x 12 x 512 x 512 x 4 B = {base:.0f} MiB)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--no-cold", action="store_true", help="skip the fresh-process (cold start) runs")
    ap.add_argument("--torch-threads", type=int, default=None,
                    help="torch.set_num_threads for the attention rows (1 gives steady figures on a busy 2-core box)")
    ap.add_argument("--cold-child", nargs=4, metavar=("WHICH", "METHOD", "N", "DIM"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.cold_child:
        which, method, n, dim = args.cold_child
        cold_child(which, method, int(n), int(dim))
        return
    repeats = args.repeats or (2 if args.quick else 3)
    sizes = [(300, 256), (300, 512)] if args.quick else [(300, 256), (300, 512), (1000, 256), (1000, 512)]
    with_cold = not (args.quick or args.no_cold)

    print("seconds; cold = first call in a fresh process (imports + numba compile); warm = median of "
          f"{repeats}; ratio = ref warm / ours warm")
    print("meth      n  dim | ours_c   ref_c | ours_w   ref_w  ratio | trust: ours   ref")
    bench_projections(sizes, repeats, with_cold)
    print()
    bench_senses(repeats)
    print()
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
    bench_attention(repeats)


if __name__ == "__main__":
    main()
