"""What several test modules share: generated corpora the tiny models learn in seconds, a tiny BERT saved with its
masked-LM head, and the torchrun rank wrapper of the distributed-training tests."""

from __future__ import annotations

import contextlib
import random
from pathlib import Path

# ----------------------------------------------------------------------------------------------------------
# a syllable language for BERT


def synthetic_corpus(n_docs: int = 12, paragraphs: int = 20, seed: int = 0) -> str:
    """A small language with structure an MLM can learn: fixed sentence frames, number agreement between noun
    and verb ("-s" on one of them), and a topic per document that fixes which nouns, verbs and adjectives occur.
    Words are made of syllables, so WordPiece splits the rarer ones into several pieces."""
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ta", "re", "su", "no", "vi", "de", "po", "ga", "bu"]

    def word() -> str:
        return "".join(rng.choice(syllables) for _ in range(rng.randint(2, 3)))

    topics = [{k: [word() for _ in range(6)] for k in ("nouns", "verbs", "adjs")} for _ in range(4)]
    docs = []
    for d in range(n_docs):
        t = topics[d % len(topics)]
        paras = []
        for _ in range(paragraphs):
            sents = []
            for _ in range(rng.randint(2, 4)):
                adj, n1, n2, verb = (rng.choice(t[k]) for k in ("adjs", "nouns", "nouns", "verbs"))
                if rng.random() < 0.5:
                    sents.append(f"The {adj} {n1} {verb}s the {n2}.")
                else:
                    sents.append(f"The {adj} {n1}s {verb} the {n2}s.")
            paras.append(" ".join(sents))
        docs.append("\n".join(paras))
    return "\n\n".join(docs) + "\n"


# ----------------------------------------------------------------------------------------------------------
# a generated language with plenty of structure, so that a tiny model learns it in seconds

NAMES = ["Anna", "Ben", "Clara", "David", "Emma", "Frank", "Grace", "Henry"]
VERBS = ["sees", "likes", "finds", "takes", "paints", "sells", "buys", "hides"]
ADJS = ["red", "old", "small", "green", "heavy", "bright"]
NOUNS = ["box", "horse", "letter", "garden", "river", "bank", "lamp", "coat", "ship", "bird"]


def generated_paragraph(rng: random.Random, n_sentences: int = 6) -> str:
    out = []
    for _ in range(n_sentences):
        if rng.random() < 0.5:
            out.append(f"{rng.choice(NAMES)} {rng.choice(VERBS)} the {rng.choice(ADJS)} {rng.choice(NOUNS)}.")
        else:
            out.append(f"The {rng.choice(NOUNS)} is {rng.choice(ADJS)}, said {rng.choice(NAMES)}!")
    return " ".join(out)


def write_corpus(path: Path, n_docs: int = 4, paragraphs: int = 40, seed: int = 0) -> Path:
    rng = random.Random(seed)
    docs = ["\n".join(generated_paragraph(rng) for _ in range(paragraphs)) for _ in range(n_docs)]
    path.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    return path


# ----------------------------------------------------------------------------------------------------------
# distributed training

# Each rank runs the real CLI; wrapping Trainer.train lets it report a hash of its own final weights.
RANK_SCRIPT = """
import hashlib, os, sys
from ctxmodels import cli
from ctxmodels.training import trainer

def state_hash(model):
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()

original = trainer.Trainer.train

def train_and_report(self, *args, **kwargs):
    result = original(self, *args, **kwargs)
    path = os.path.join(os.environ["HASH_DIR"], f"rank{self.info.rank}.txt")
    with open(path, "w") as f:
        f.write(f"{self.info.world_size} {state_hash(self.task.model)}")
    return result

trainer.Trainer.train = train_and_report
sys.exit(cli.main(sys.argv[1:]))
"""


def show_past_capture(config, line: str) -> None:
    """Print ``line`` at the end of a test module even though pytest captures output (a harness's case count).
    In a pytest-xdist worker, the main process prints it at the end of the run."""
    from tests import parallel

    if parallel.in_worker(config):
        parallel.send_line(config, line)
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        if reporter is not None:
            reporter.write_line("\n" + line)
        else:
            print(line)


# ----------------------------------------------------------------------------------------------------------
# a tiny BERT that fills in blanks

BANK_TEXTS = ["The bank of the river was steep.", "She put her money in the bank.",
              "Bankers lend money to rivers."] * 10


def save_tiny_mlm_bert(directory: Path):
    """A random 2-layer BERT with a peaked masked-LM output (so rankings are not ties) and a 60-piece WordPiece
    vocabulary trained on :data:`BANK_TEXTS`, saved into ``directory``: (model in eval mode, tokenizer)."""
    import torch

    from ctxmodels.bert import BertConfig, BertForPreTraining
    from ctxmodels.formats.huggingface import save_pretrained
    from ctxmodels.tokenization import WordPieceTokenizer

    tok = WordPieceTokenizer.train(BANK_TEXTS, vocab_size=60, min_frequency=1)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=40, max_position_embeddings=64)
    model = BertForPreTraining(config).eval()
    with torch.no_grad():
        model.cls.predictions.bias.normal_(0, 2)
        model.cls.predictions.transform.LayerNorm.weight.normal_(1, 1)
    save_pretrained(model, tok, directory)
    return model, tok
