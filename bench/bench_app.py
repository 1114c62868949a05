"""Speed of the explorer against the issue's targets (run by hand; prints a table).

    python bench/bench_app.py                       # tiny random models + a random BERT "mini" stand-in
    python bench/bench_app.py --bert PATH --elmo PATH   # real models (e.g. the shipped ones once they exist)
    python bench/bench_app.py --server              # also: server start to first page in headless Chromium
    python bench/bench_app.py --shipped --server    # the shipped models (assets/), as a user gets them

Each row times what the page does for one interaction, outside Streamlit's own overhead (which the server
adds on top; the --server row includes it): the analysis core, the figure, and the figure's JSON (what goes
to the browser). Medians over ``--repeat`` runs. The targets are the ones in issue 6.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402


def median_time(fn, repeat: int) -> float:
    times = []
    for i in range(repeat):
        t = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def occurrence_set(n_target: int = 300) -> tuple[list[str], str]:
    """Preset sentences (all words) with enough occurrences of "the" to reach about ``n_target``."""
    from app.kit.presets import preset_sentences, preset_words
    from ctxmodels.analysis.vectors import find_occurrences

    lines = [s for w in preset_words() for s in preset_sentences(w)]
    found = find_occurrences(lines, "the")
    per_line = len(found.occurrences) / len(lines)
    keep = int(n_target / per_line) + 1
    return lines[:keep], "the"


def bench_layer_switch(model, repeat: int) -> tuple[float, int]:
    """Changing the layer: vectors from the cache, a joint PCA of 2 x n occurrences, two scatters to JSON."""
    from app.kit.figures import highlight
    from app.kit.scatter import sense_scatter
    from ctxmodels.analysis import projections, vectors
    from ctxmodels.analysis.word_senses import centred_directions

    lines, target = occurrence_set()
    ov = vectors.word_vectors(model, lines, target)  # first call embeds (not timed: the page caches it)
    hover = [highlight(o.sentence, o.char_span) for o in ov.occurrences]

    def step(i: int) -> None:
        layer = 1 + i % (model.n_layers - 1)
        ov2 = vectors.word_vectors(model, lines, target)
        sets = [centred_directions(ov2.vectors[:, 0]), centred_directions(ov2.vectors[:, layer])]
        proj = projections.project(sets, method="pca", metric="euclidean")
        for xy in proj.coords:
            sense_scatter(xy, ov2.labels, hover).to_json()

    return median_time(step, repeat), len(ov)


def bench_umap(repeat: int) -> float:
    from ctxmodels.analysis import projections

    projections.warm_up_umap()
    X = np.random.default_rng(0).normal(size=(300, 128)).astype(np.float32)
    return median_time(lambda i: projections.project(X, method="umap", seed=i), repeat)


def bench_fill_in(model, repeat: int) -> float:
    from app.views.fill_in import figures
    from ctxmodels.analysis.fill_in import fill_mask

    words = "the boat drifted slowly towards the far bank of the river while".split()

    def keystroke(i: int) -> None:  # each keystroke is a new text (no cache hit)
        text = " ".join(words[: 3 + i % (len(words) - 3)]) + " [MASK] ."
        for preds in fill_mask(model.model, model.tokenizer, text, top_k=5):
            figures.fill_bars(preds).to_json()

    return median_time(keystroke, repeat)


def bench_attention(model, repeat: int) -> float:
    from app.kit.figures import attention_heatmap
    from app.views.attention import figures
    from ctxmodels.analysis import attention as att

    base = ("the bank raised its interest rates so she moved her savings to a small cooperative by the river "
            "where the clerk knew her name and the boats came in at dusk ").split()
    text = " ".join((base * 3)[:55])  # about 60 pieces with [CLS]/[SEP]

    def page(i: int) -> None:
        maps = att.compute_attention(model, None, text + (" ." * (i % 2)))
        words = att.merge_word_pieces(maps)
        figures.attention_grid(words.attentions, max_tokens=48).to_json()
        m = words.attentions[0, 0]
        attention_heatmap(m, words.tokens).to_json()
        figures.attention_lines(m, words.tokens).to_json()
        att.rank_heads(att.head_summaries(words), by="to_prev")

    return median_time(page, repeat)


def bench_server_start(assets: Path | None) -> float | None:
    """Seconds from `streamlit run` to the overview page's title in headless Chromium (None without Chromium)."""
    if not Path("/usr/bin/chromium").is_file():
        return None
    from playwright.sync_api import sync_playwright

    port = 8765
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("CTXMODELS_ASSETS", None)
    if assets is not None:
        env["CTXMODELS_ASSETS"] = str(assets)
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app/Home.py", "--server.port", str(port),
                             "--server.headless", "true"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
            page = b.new_page()
            while True:
                try:
                    page.goto(f"http://127.0.0.1:{port}/", timeout=5000)
                    break
                except Exception:  # noqa: BLE001 - not listening yet
                    time.sleep(0.2)
            page.wait_for_selector("h1", timeout=120_000)
            elapsed = time.perf_counter() - t0
            b.close()
        return elapsed
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bert", default=None, help="a BERT model (default: a random 'mini' BERT stand-in)")
    ap.add_argument("--elmo", default=None, help="an ELMo model (default: the tiny random one)")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--server", action="store_true", help="also time server start to first page (Chromium)")
    ap.add_argument("--shipped", action="store_true", help="the shipped bert-eltec / elmo-eltec, and the server on "
                                                           "the repository's assets/")
    args = ap.parse_args()

    import torch

    import ctxmodels
    from tests.app_fixtures import build_tiny_assets, example_texts

    torch.set_num_threads(1)
    tmp = Path(tempfile.mkdtemp(prefix="bench-app-"))
    assets = build_tiny_assets(tmp / "assets")
    if args.shipped:
        args.bert, args.elmo = args.bert or "bert-eltec", args.elmo or "elmo-eltec"
    bert_path = args.bert
    if bert_path is None:  # a BERT the size of the project's "mini" preset, random weights
        from ctxmodels.bert import BertConfig, BertForPreTraining
        from ctxmodels.formats.huggingface import save_pretrained
        from ctxmodels.tokenization import WordPieceTokenizer

        tok = WordPieceTokenizer.train(example_texts(), vocab_size=4000, min_frequency=1)
        mini = BertForPreTraining(BertConfig.preset("mini", vocab_size=tok.vocab_size)).eval()
        save_pretrained(mini, tok, tmp / "bert-mini")
        bert_path = str(tmp / "bert-mini")
    bert = ctxmodels.load(bert_path)
    elmo = ctxmodels.load(args.elmo or str(assets / "elmo-eltec"))

    rows = []
    t, n = bench_layer_switch(bert, args.repeat)
    rows.append((f"layer switch, {n} occurrences ({bert.name})", 0.5, t))
    t, n = bench_layer_switch(elmo, args.repeat)
    rows.append((f"layer switch, {n} occurrences ({elmo.name})", 0.5, t))
    rows.append(("UMAP of 300 points, warm", 2.0, bench_umap(max(3, args.repeat // 3))))
    rows.append((f"fill-in per keystroke ({bert.name})", 0.1, bench_fill_in(bert, args.repeat)))
    rows.append((f"attention page, ~60 pieces ({bert.name})", 1.0, bench_attention(bert, max(3, args.repeat // 3))))
    if args.server:
        s = bench_server_start(None if args.shipped else assets)
        if s is not None:
            rows.append(("server start to first page (Chromium, one run)", 5.0, s))

    print(f"\n{'measure':<52} {'target s':>9} {'median s':>9} {'ratio':>7}")
    for name, target, value in rows:
        print(f"{name:<52} {target:>9.2f} {value:>9.3f} {value / target:>7.2f}")
    print("ratio = median / target (below 1 meets the target). Machine: shared 2-core CPU, other jobs running.")


if __name__ == "__main__":
    main()
