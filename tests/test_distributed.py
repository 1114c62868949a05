"""`ctxmodels train bert` under torchrun: 2 processes (gloo on CPU) finish and end with identical weights."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest
import torch

from tests.helpers import RANK_SCRIPT, synthetic_corpus


@pytest.mark.slow
def test_two_process_training_ends_with_identical_weights(tmp_path):
    from ctxmodels.formats.huggingface import load_bert

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(synthetic_corpus(n_docs=8, paragraphs=10))
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    out = tmp_path / "run"
    env = dict(os.environ, HASH_DIR=str(tmp_path), OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(script),
           "train", "bert", "--corpus", str(corpus), "--out", str(out), "--preset", "tiny", "--vocab-size", "120",
           "--max-seq-len", "32", "--batch-size", "4", "--steps", "6", "--log-every", "1", "--eval-sequences", "8",
           "--no-progress"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    reports = [(tmp_path / f"rank{r}.txt").read_text().split() for r in range(2)]
    assert reports[0][0] == reports[1][0] == "2"
    assert reports[0][1] == reports[1][1], "the ranks hold different weights"

    # rank 0 wrote the model; it is the weights both ranks hold, and training went through every step
    model, _ = load_bert(out)
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.contiguous().numpy().tobytes())
    assert h.hexdigest() == reports[0][1]
    steps = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in steps if "loss" in r] == [1, 2, 3, 4, 5, 6]
    state = torch.load(out / "checkpoint" / "trainer_state.pt", weights_only=True)
    assert state["world_size"] == 2 and state["step"] == 6
