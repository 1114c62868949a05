"""Tiny random-weight models for the app's tests and for trying the app by hand.

``build_tiny_assets(folder)`` writes ``bert-eltec``, ``elmo-eltec`` and ``static-eltec`` (the shipped short names)
plus ``bert-no-mlm`` (an encoder without its masked-LM head), a small training corpus ``corpus.txt`` and a copy
of the example sets (``examples/``: the app's preset sentences sit beside the models).
Point ``CTXMODELS_ASSETS`` at the folder and the app opens on them::

    python tests/app_fixtures.py /tmp/tiny-assets
    CTXMODELS_ASSETS=/tmp/tiny-assets streamlit run app/Home.py

The weights are random, so the pictures mean nothing; the shapes, names and code paths are the real ones.

For the AppTest modules (registered in ``tests/conftest.py``): the ``tiny_assets`` fixture (built once per test
session), ``app_env`` (a test module opts in with ``pytestmark = pytest.mark.usefixtures("app_env")``) and
:func:`page`, which runs one page of the app with a query string.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SENSES = ROOT / "assets" / "examples" / "senses"
TINY_NAMES = ("bert-eltec", "elmo-eltec", "static-eltec", "bert-no-mlm")
HOME = str(ROOT / "app" / "Home.py")
TIMEOUT = 180  # seconds per script run: generous for a busy 2-core machine, never reached in practice
OPERATOR_SETTINGS = ("CTXMODELS_APP_MODELS", "CTXMODELS_APP_CORPORA", "CTXMODELS_ALLOW_PATHS",
                     "CTXMODELS_ALLOW_UPLOADS", "CTXMODELS_ALLOW_TRAINING", "CTXMODELS_HEAVY_PER_SESSION",
                     "CTXMODELS_UPLOAD_MB", "CTXMODELS_ALLOW_DOWNLOADS", "CTXMODELS_VISITOR_SECONDS",
                     "CTXMODELS_VISITOR_MB")


@pytest.fixture(scope="session")
def tiny_assets(tmp_path_factory) -> Path:
    return build_tiny_assets(tmp_path_factory.mktemp("tiny-assets"))


def with_successors(monkeypatch, tiny_assets: Path, tmp_path: Path) -> Path:
    """The tiny models as the app's assets, with an empty ``successors/`` beside them (the shipped RoBERTa, ALBERT,
    ELECTRA and GPT's folder) for the caller to fill; returns that folder."""
    assets = tmp_path / "assets"
    (assets / "successors").mkdir(parents=True)
    for item in tiny_assets.iterdir():
        (assets / item.name).symlink_to(item)
    monkeypatch.setenv("CTXMODELS_ASSETS", str(assets))
    return assets / "successors"


@pytest.fixture
def app_env(tiny_assets, tmp_path, monkeypatch):
    """The app on the tiny models, writing only under the test's folder, with every operator setting off."""
    monkeypatch.setenv("CTXMODELS_ASSETS", str(tiny_assets))
    monkeypatch.setenv("CTXMODELS_APP_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("CTXMODELS_CACHE", str(tmp_path / "cache"))
    for var in OPERATOR_SETTINGS:
        monkeypatch.delenv(var, raising=False)
    # The installed model packages (minilm) stay out unless a test asks: the tiny models are the ones under test.
    monkeypatch.setenv("CTXMODELS_APP_PACKAGED", "0")


@pytest.fixture(scope="module", autouse=True)
def fresh_app_server():
    """Each test module starts on a server that has seen nothing: what the app keeps once per process (the models
    loaded or added, the shared results and background jobs, the cached data) is forgotten first. Those stores are
    keyed by model names, and another module's tiny models have the same names in another folder; without this a
    module's outcome would depend on which modules ran before it in the same process."""
    forget_app_state()
    yield


def forget_app_state() -> None:
    """Forget what the app keeps once per process (as a restarted server would), but UMAP's warm-up."""
    if "app.kit.registry" in sys.modules:  # nothing to forget where no test imported the app yet
        import streamlit as st

        from app.kit import background, downloads, registry, shared

        background.training_runner().stop()  # a job a test left running ends with the server it belonged to
        for cached in (registry.registry, registry.get_model, shared.shared, background.jobs, background.workers,
                       background.training_runner, downloads.downloads):
            cached.clear()
        st.cache_data.clear()


def page(name: str, **query):
    """Run page ``name`` (its folder ``app/views/NAME/``) through AppTest with ``query`` as its URL parameters."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(HOME, default_timeout=TIMEOUT)
    at.query_params.update(query)
    return opening(at, name).run()


def opening(at, name: str):
    """``at`` (an AppTest before its first run), set to open page ``name`` as a link to ``/NAME`` does.

    Streamlit knows a page by the hash of its url_path, and so does a link. AppTest's ``switch_page`` finds a page
    by its script's path once a run has registered the pages, but before the first run only by the script's file
    name, and every page's script is ``page.py``: so the first run asks for the url_path's hash itself. After a
    run, use ``at.switch_page(script(name))``."""
    from streamlit.util import calc_hash

    at._page_hash = calc_hash(name)
    return at


def script(name: str) -> str:
    """Page ``name``'s script, as ``AppTest.switch_page`` takes it (relative to app/)."""
    from app.kit.pages import script as page_script

    return page_script(name)


def open_explanation(at):
    """Open the page's "What am I looking at?" box (written only when open) and run the page again."""
    at.session_state["explain_open"] = True
    return at.run()


def texts(elements) -> list[str]:
    """The elements' text as a visitor reads it: a glossary word's hover help (app/kit/glossary.py) taken off."""
    return [unglossed(str(e.value)) for e in elements]


def unglossed(text: str) -> str:
    return re.sub(r'<abbr class="gloss" title="[^"]*">(.*?)</abbr>', r"\1", text)


def assert_clean(at) -> None:
    assert not at.exception, texts(at.exception)
    assert not at.error, texts(at.error)


def charts(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def example_texts() -> list[str]:
    """The preset sentences (without labels): every preset word is then in the tiny vocabularies."""
    from ctxmodels.analysis.vectors import parse_labelled

    texts = []
    for path in sorted(SENSES.glob("*.txt")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                texts.append(parse_labelled(line)[0])
    return texts


def write_corpus(path: Path, n_docs: int = 4) -> Path:
    """A small corpus in the trainers' format: paragraphs a line, blank lines between documents."""
    texts = example_texts()
    per_doc = max(1, len(texts) // n_docs)
    docs = [texts[i: i + per_doc] for i in range(0, len(texts), per_doc)]
    path.write_text("\n\n".join("\n".join(d) for d in docs) + "\n", encoding="utf-8")
    return path


RIVER, MONEY = "bank%1:17:01::", "bank%1:14:00::"
GLOSSES = {RIVER: "sloping land (especially the slope beside a body of water)",
           MONEY: "a financial institution that accepts deposits and channels the money into lending activities"}


def write_semcor(root: Path) -> Path:
    """A SemCor with 12 tagged "bank"s (6 river, 6 money) in two documents, and the glosses of both senses."""
    (root / "semcor").mkdir(parents=True)
    (root / "wordnet").mkdir()
    sentences, tags = ["sent_uid\ttokens"], ["sent_uid\ttok_idx\tword\tlemma\tpos\tsense_keys\tsynsets"]
    river = ["We sat on the bank of the river .", "The boat reached the bank at dusk .",
             "Reeds grew along the bank of the stream .", "The river overflowed its bank in spring .",
             "Fishermen lined the bank all morning .", "Mud covered the bank after the flood ."]
    money = ["The bank lent her the money .", "He deposited his wages at the bank .",
             "The bank raised its interest rates .", "She opened an account at the bank .",
             "The bank refused the loan .", "Robbers broke into the bank at night ."]
    for i, (text, key) in enumerate([(t, RIVER) for t in river] + [(t, MONEY) for t in money]):
        uid = f"brown1/br-{'a' if i % 2 else 'b'}01.s{i}"
        words = text.split()
        sentences.append(f"{uid}\t{text}")
        tags.append(f"{uid}\t{words.index('bank')}\tbank\tbank\tNN\t{key}\t")
    (root / "semcor" / "sentences.tsv").write_text("\n".join(sentences) + "\n", encoding="utf-8")
    (root / "semcor" / "tags.tsv").write_text("\n".join(tags) + "\n", encoding="utf-8")
    senses = ["sense_key\tsynset\tlemmas\tgloss\texamples"]
    senses += [f"{k}\teng30-0000000{i}-n\tbank\t{g}\t" for i, (k, g) in enumerate(GLOSSES.items())]
    (root / "wordnet" / "senses.tsv").write_text("\n".join(senses) + "\n", encoding="utf-8")
    return root


def write_sense_corpus(path: Path, n: int) -> Path:
    """A corpus of ``n`` sentences with "bank" (river and money contexts alternating) over three documents."""
    contexts = ["The boat drifted to the bank of the river near the willows.",
                "The bank lent the farmer money for the new barn."]
    docs = [[contexts[i % 2] for i in range(d, n, 3)] for d in range(3)]
    path.write_text("\n\n".join("\n".join(doc) for doc in docs) + "\n", encoding="utf-8")
    return path


def build_tiny_assets(folder: str | Path) -> Path:
    """Write the tiny models into ``folder`` (skipped when already there) and return the folder."""
    import torch

    from ctxmodels.bert import BertConfig, BertForPreTraining
    from ctxmodels.elmo import ElmoConfig, ElmoLanguageModel
    from ctxmodels.formats.allennlp import save_elmo
    from ctxmodels.formats.huggingface import save_pretrained
    from ctxmodels.static import StaticVectors
    from ctxmodels.text import tokenize
    from ctxmodels.tokenization import WordPieceTokenizer

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    texts = example_texts()
    torch.manual_seed(0)
    if not (folder / "bert-eltec" / "config.json").is_file() or not (folder / "bert-no-mlm").is_dir():
        tok = WordPieceTokenizer.train(texts, vocab_size=600, min_frequency=1)
        cfg = BertConfig.preset("tiny", vocab_size=tok.vocab_size, max_position_embeddings=128)
        save_pretrained(BertForPreTraining(cfg).eval(), tok, folder / "bert-eltec",
                        card="# tiny BERT\n\nRandom weights, for tests.")
        save_pretrained(BertForPreTraining(cfg, mlm_head=False, nsp_head=False).eval(), tok, folder / "bert-no-mlm",
                        card="# tiny BERT without MLM head\n\nRandom weights, for tests.")
    if not (folder / "elmo-eltec" / "config.json").is_file():
        save_elmo(ElmoLanguageModel(ElmoConfig.preset("tiny")).eval(), folder / "elmo-eltec",
                  card="# tiny ELMo\n\nRandom weights, for tests.")
    if not (folder / "static-eltec" / "config.json").is_file():
        words = sorted({w.lower() for t in texts for w in tokenize(t)})
        vectors = torch.randn(len(words), 16).numpy()
        StaticVectors.from_vectors(words, vectors, lowercase=True).save(
            folder / "static-eltec", card="# tiny static vectors\n\nRandom vectors, for tests.")
    if not (folder / "corpus.txt").is_file():
        write_corpus(folder / "corpus.txt")
    if not (folder / "examples" / "senses").is_dir():
        shutil.copytree(SENSES.parent, folder / "examples", dirs_exist_ok=True)
    return folder


def perturb_top_layer(model, scale: float = 0.5, head: int | None = None, seed: int = 0):
    """``model`` (a BertForPreTraining) with its top layer changed in place: every weight of the layer with noise
    of ``scale`` times its own spread, or, with ``head``, only that attention head's query weights (the other
    heads then attend exactly as before)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    top = model.bert.encoder.layer[-1]
    with torch.no_grad():
        if head is None:
            for p in top.parameters():
                p.add_(torch.randn(p.shape, generator=g) * scale * (p.std() if p.numel() > 1 else 1.0))
        else:
            size = model.config.hidden_size // model.config.num_attention_heads
            rows = slice(head * size, (head + 1) * size)
            q = top.attention.self.query.weight
            q[rows] += torch.randn(q[rows].shape, generator=g) * scale * 10 * q.std()
    return model


def write_finetuned(base: Path, out: Path, task: str = "pos", kind: str = "token", labels=("NOUN", "VERB"),
                    scale: float = 0.5, head: int | None = None, base_model: str | None = None) -> Path:
    """A stand-in for a folder ``ctxmodels finetune`` writes: the BERT at ``base`` with its top layer perturbed
    (:func:`perturb_top_layer`), saved as a BERT folder, plus a ``finetune.json`` naming its base and task. The
    metrics in it are placeholders (the page shows them, they measure nothing)."""
    from ctxmodels.formats.huggingface import load_bert, save_pretrained

    model, tok = load_bert(base)
    perturb_top_layer(model, scale=scale, head=head)
    save_pretrained(model.eval(), tok, out, card="# stand-in fine-tuned BERT\n\nA perturbed top layer, for tests.")
    info = {"base_model": base_model or str(base), "base_path": str(base), "task": task, "task_kind": kind,
            "labels": list(labels), "mode": "finetune", "steps": 0,
            "metrics": {"dev": {"accuracy": 0.5, "macro_f1": 0.4}, "test": {"accuracy": 0.45, "macro_f1": 0.35}}}
    (out / "finetune.json").write_text(json.dumps(info, indent=1), encoding="utf-8")
    return out


def tag_of(word: str) -> str:
    """A made-up word class, easy to learn: determiners, prepositions, punctuation and the rest."""
    w = word.lower()
    if w in ("the", "a", "an", "its", "her", "his", "their"):
        return "DET"
    if w in ("on", "of", "at", "to", "in", "by", "from", "with"):
        return "ADP"
    return "OTHER" if any(c.isalnum() for c in word) else "PUNCT"


def write_tag_task(path: Path, per_doc: int = 10) -> Path:
    """A CoNLL-style token task (word<TAB>tag, blank line between sentences, ``# doc:`` blocks) from the preset
    sentences, tagged by :func:`tag_of`."""
    from ctxmodels.text import tokenize

    lines = []
    for i, text in enumerate(example_texts()):
        if i % per_doc == 0:
            lines.append(f"# doc: d{i // per_doc}")
        lines += [f"{w}\t{tag_of(w)}" for w in tokenize(text)] + [""]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def finetune_tiny(base: Path, task: Path, out: Path, steps: int = 20) -> Path:
    """A real fine-tuned folder: ``ctxmodels finetune`` on ``task`` for ``steps`` steps (a few seconds)."""
    import subprocess

    cmd = [sys.executable, "-m", "ctxmodels.cli", "finetune", "--model", str(base), "--task", str(task), "--out",
           str(out), "--steps", str(steps), "--threads", "1", "--no-progress"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return out


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/tmp/ctxmodels-tiny-assets")
    print(build_tiny_assets(target))


def figure_array(value) -> np.ndarray:
    """A figure's array as the browser gets it: a list, or Plotly's typed array ({dtype, bdata, shape})."""
    if isinstance(value, dict) and "bdata" in value:
        a = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        return a.reshape([int(s) for s in str(shape).split(",")]) if shape else a
    return np.asarray(value, dtype=float)
