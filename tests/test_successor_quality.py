"""``ctxmodels quality --corpus`` on BERT's successors trained here (RoBERTa, ALBERT, ELECTRA, GPT): the run's own
held-out figures measured again from the folder (equal on the same sequences), the top-5 as transformers scores
the same pieces, ELECTRA's precision, the shipped folder (generator and settings kept) and its measured card."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from ctxmodels import cli
from ctxmodels.checkpoint import read_json
from ctxmodels.release import successors
from ctxmodels.release.report_shape import check_report
from tests import lm_fixtures
from tests.helpers import synthetic_corpus

KINDS = ("roberta", "albert", "electra", "gpt")
EVAL = 4  # the runs' --eval-sequences
TINY = ["--preset", "tiny", "--max-seq-len", "32", "--batch-size", "4", "--eval-sequences", str(EVAL),
        "--no-progress", "--threads", "1", "--log-every", "1", "--eval-every", "0", "--vocab-size", "150"]


corpus_file = lm_fixtures.corpus_file  # a module fixture
_restore_torch_threads = lm_fixtures._restore_torch_threads  # autouse


@pytest.fixture(scope="module")
def runs(tmp_path_factory, corpus_file) -> dict[str, Path]:
    """A 3-step run of each kind, evaluated at its end on EVAL held-out sequences."""
    root = tmp_path_factory.mktemp("runs")
    for kind in KINDS:
        threads = torch.get_num_threads()
        assert cli.main(["train", kind, "--corpus", str(corpus_file), "--out", str(root / kind), "--steps", "3",
                         *TINY]) == 0
        torch.set_num_threads(threads)
    return {kind: root / kind for kind in KINDS}


def run_eval(run: Path) -> dict[str, float]:
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return [r["eval"] for r in records if "eval" in r][-1]


def quality(models: list[Path], corpus: Path, out: Path, *more: str) -> dict:
    argv = ["quality", "--corpus", str(corpus), "--no-senses", "--out", str(out), "--threads", "1", *more]
    for m in models:
        argv += ["--model", str(m)]
    assert cli.main(argv) == 0
    return read_json(out)


@pytest.fixture(scope="module")
def report(runs, corpus_file, tmp_path_factory) -> dict:
    """The four runs measured on as many held-out sequences as their own evaluation."""
    return quality(list(runs.values()), corpus_file, tmp_path_factory.mktemp("report") / "report.json",
                   "--bert-sequences", str(EVAL))


@pytest.mark.parametrize("kind", KINDS)
def test_quality_gives_the_runs_own_heldout_figures(runs, report, kind):
    entry = report["models"][kind]
    held, own = entry["heldout"], run_eval(runs[kind])
    assert entry["trained_as"] == kind and entry["heldout_sequences"] == EVAL
    assert entry["heldout_settings"] == {"seed": 0, "heldout_docs": 1, "max_seq_len": 32, "max_predictions": 5,
                                         "whole_word_masking": False, "source": "run.json"}
    assert own and set(own) <= set(held)
    for key, value in own.items():  # the same sequences, masks and samples, scored by the same code
        assert held[key] == pytest.approx(value, rel=1e-6, abs=1e-9), key
    more = {"roberta": {"top5"}, "albert": {"top5"}, "gpt": {"top5"}, "electra": {"gen_top5", "disc_precision"}}
    assert set(held) - set(own) == more[kind]
    top1, top5 = ("gen_top1", "gen_top5") if kind == "electra" else ("top1", "top5")
    assert 0 <= held[top1] <= held[top5] <= 1


def _guesses_by_transformers(kind: str, task) -> tuple[torch.Tensor, torch.Tensor]:
    """(the top-5 pieces, the right ones) at every predicted position of the task's held-out set, from the
    transformers class's own full forward (its own heads and output layer)."""
    guesses, answers = [], []
    with torch.no_grad():
        for b in task.eval_batches():
            if kind == "gpt":
                logits = task.lm(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits[:, :-1]
                labels = b["labels"][:, 1:]
            elif kind == "albert":
                out = task.lm(input_ids=b["input_ids"], token_type_ids=b["token_type_ids"],
                              attention_mask=b["attention_mask"]).prediction_logits
                logits = out[torch.arange(len(out))[:, None], b["mlm_positions"]]
                labels = b["mlm_labels"]
            else:
                lm = task.lm.generator if kind == "electra" else task.lm
                logits = lm(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits
                labels = b["labels"]
            chosen = labels != -100
            guesses.append(logits[chosen].topk(5, dim=-1).indices)
            answers.append(labels[chosen])
    return torch.cat(guesses), torch.cat(answers)


@pytest.mark.parametrize("kind", KINDS)
def test_top5_is_what_transformers_scores_on_the_same_pieces(runs, report, corpus_file, kind):
    from ctxmodels.tokenization import WordPieceTokenizer
    from ctxmodels.training.bert_corpus import batch_encoder, tokenize_documents
    from ctxmodels.training.corpus import heldout_documents

    settings, source = successors.run_settings(runs[kind], kind)
    settings.eval_sequences = EVAL
    docs, held = heldout_documents(corpus_file, settings.heldout_docs, settings.seed)
    tok = WordPieceTokenizer.load(runs[kind])
    task = successors._task(kind, runs[kind], tok, tokenize_documents([docs[i] for i in held], batch_encoder(tok)),
                            settings)
    task.lm.eval()
    guesses, answers = _guesses_by_transformers(kind, task)
    top5 = int((guesses == answers[:, None]).any(-1).sum()) / len(answers)
    entry = report["models"][kind]["heldout"]
    assert entry["gen_top5" if kind == "electra" else "top5"] == pytest.approx(top5, abs=1e-9)
    top1 = int((guesses[:, 0] == answers).sum()) / len(answers)
    assert entry["gen_top1" if kind == "electra" else "top1"] == pytest.approx(top1, abs=1e-9)


@pytest.mark.parametrize("kind", ["roberta", "albert"])
def test_the_runs_evaluation_set_starts_the_measured_one(runs, corpus_file, kind):
    """What the card says: the run's EVAL sequences (and their masks) are the first EVAL of a larger measurement."""
    from ctxmodels.tokenization import WordPieceTokenizer
    from ctxmodels.training.bert_corpus import batch_encoder, tokenize_documents
    from ctxmodels.training.corpus import heldout_documents

    def rows(n: int) -> list[tuple]:
        settings, _ = successors.run_settings(runs[kind], kind)
        settings.eval_sequences = n
        docs, held = heldout_documents(corpus_file, settings.heldout_docs, settings.seed)
        tok = WordPieceTokenizer.load(runs[kind])
        task = successors._task(kind, runs[kind], tok,
                                tokenize_documents([docs[i] for i in held], batch_encoder(tok)), settings)
        labels = "mlm_labels" if kind == "albert" else "labels"
        return [(tuple(ids[mask.bool()].tolist()), tuple(lab[lab != -100].tolist()))
                for b in task.eval_batches() for ids, mask, lab in zip(b["input_ids"], b["attention_mask"], b[labels])]

    assert rows(8)[:EVAL] == rows(EVAL)


def test_electra_precision_counts_the_replaced_calls():
    from ctxmodels.training.electra_task import PairScores

    # 10 real pieces, 4 replaced; the discriminator calls 5 replaced, 3 of them rightly: 3 + 4 of 10 calls right
    s = PairScores(gen_total=0, masked=4, gen_right=0, disc_total=0, real=10, disc_right=7, replaced=4, spotted=3)
    assert successors.disc_precision(s) == pytest.approx(3 / 5)
    assert successors.disc_precision(s._replace(disc_right=6, spotted=0)) == 0  # nothing called replaced


def test_the_measured_figures_stay_put(runs, report, corpus_file, tmp_path):
    """Measuring again gives the same figures (fixed masks and samples); asking for more sequences than the
    held-out text has measures them all, and the report says how many."""
    again = quality([runs["electra"]], corpus_file, tmp_path / "again.json", "--bert-sequences", str(EVAL))
    assert again["models"]["electra"]["heldout"] == report["models"]["electra"]["heldout"]
    more = quality([runs["roberta"]], corpus_file, tmp_path / "more.json", "--bert-sequences", "1000")
    assert EVAL < more["models"]["roberta"]["heldout_sequences"] < 1000


def test_other_encoders_get_no_heldout_figures(runs, corpus_file, tmp_path):
    generator = tmp_path / "generator-alone"
    shutil.copytree(runs["electra"] / "generator", generator)
    entry = quality([generator], corpus_file, tmp_path / "r.json")["models"]["generator-alone"]
    assert "heldout" not in entry and "trained_as" not in entry


def test_another_text_than_the_runs_is_measured_with_a_warning(runs, tmp_path, capsys):
    other = tmp_path / "other.txt"
    other.write_text(synthetic_corpus(n_docs=6, paragraphs=6, seed=1), encoding="utf-8")
    capsys.readouterr()
    entry = quality([runs["roberta"]], other, tmp_path / "r.json", "--bert-sequences", "2")["models"]["roberta"]
    assert "heldout" in entry
    assert "warning: other.txt is not the text its run trained on (run.json names synthetic.txt)" in \
        capsys.readouterr().err


def test_without_a_record_the_trainers_defaults_draw_the_set(runs, corpus_file, tmp_path):
    bare = tmp_path / "bare"
    shutil.copytree(runs["gpt"], bare, ignore=shutil.ignore_patterns("run.json", "checkpoint", "data"))
    entry = quality([bare], corpus_file, tmp_path / "r.json", "--bert-sequences", "2")["models"]["bare"]
    assert entry["heldout_settings"]["source"] == "the trainers' defaults"
    assert entry["heldout_settings"]["max_seq_len"] == 128 and entry["heldout_sequences"] == 2


def test_shipped_successors_are_measured_and_carded(runs, corpus_file, tmp_path, capsys):
    """ship keeps ELECTRA's generator and the run's settings (no paths); quality reads them; ship --cards writes
    each model's held-out table."""
    assets = tmp_path / "assets"
    for kind in KINDS:
        assert cli.main(["ship", str(runs[kind]), str(assets / f"{kind}-tiny")]) == 0
    shipped = [assets / f"{kind}-tiny" for kind in KINDS]
    assert (assets / "electra-tiny" / "generator" / "model.safetensors").is_file()
    record = read_json(assets / "albert-tiny" / "train_args.json")
    assert record["kind"] == "albert" and record["settings"]["corpus"] == corpus_file.name
    assert str(tmp_path) not in (assets / "albert-tiny" / "train_args.json").read_text()
    path = tmp_path / "report.json"
    report = quality(shipped, corpus_file, path, "--bert-sequences", "8")
    check_report(report, path)
    for kind in KINDS:
        entry = report["models"][f"{kind}-tiny"]
        assert entry["heldout_settings"]["source"] == "train_args.json" and entry["heldout_sequences"] == 8
    capsys.readouterr()
    assert cli.main(["ship", "--cards", str(path), *map(str, shipped), "--command", "ctxmodels quality …"]) == 0
    titles = {"roberta": "masked language model (RoBERTa)", "albert": "sentence order (ALBERT)",
              "electra": "generator and discriminator (ELECTRA)", "gpt": "next-word prediction (GPT)"}
    for kind in KINDS:
        card = (assets / f"{kind}-tiny" / "README.md").read_text(encoding="utf-8")
        assert "### Held-out novels: " in card and titles[kind] in card
        held = report["models"][f"{kind}-tiny"]["heldout"]
        top5 = held["gen_top5" if kind == "electra" else "top5"]
        assert f"top-5 | {100 * top5:.1f}% |" in card
        # the run's own evaluation was the first EVAL of these 8 sequences, drawn alike
        assert f"the first {EVAL} of these{', with the same masks' * (kind != 'gpt')}, scored by" in card
    electra = (assets / "electra-tiny" / "README.md").read_text(encoding="utf-8")
    (assets / "electra-tiny" / "probes").mkdir()  # what `ctxmodels quality` caches beside a model it probed
    assert cli.main(["ship", str(runs["electra"]), str(assets / "electra-tiny")]) == 0  # shipped again over both
    assert (assets / "electra-tiny" / "generator" / "config.json").is_file()
    assert "replaced pieces caught (recall)" in electra and "(precision)" in electra
    assert "sentence order: accuracy" in (assets / "albert-tiny" / "README.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_word_senses_per_layer_on_each_kind(runs, shipped_semcor, tmp_path):
    """What the objectives bench runs on each kind: SemCor senses per layer, no probes."""
    argv = ["quality", "--no-probes", "--semcor", str(shipped_semcor), "--out", str(tmp_path / "r.json"),
            "--threads", "1"]
    for kind in KINDS:
        argv += ["--model", str(runs[kind])]
    assert cli.main(argv) == 0
    summary = read_json(tmp_path / "r.json")["senses"]["summary"]
    for kind in KINDS:
        assert summary[kind]["best_layer"] in summary[kind]["layers"], kind


def test_a_report_missing_what_the_card_reads_is_refused_naming_the_field(report, tmp_path):
    from ctxmodels.checkpoint import CheckpointError

    edited = json.loads(json.dumps(report))
    del edited["models"]["gpt"]["heldout_settings"]["max_seq_len"]
    with pytest.raises(CheckpointError, match="models.gpt.heldout_settings.max_seq_len is missing"):
        check_report(edited, tmp_path / "report.json")
    edited["models"]["gpt"]["heldout"]["top5"] = "high"
    with pytest.raises(CheckpointError, match="models.gpt.heldout.top5 should be a number"):
        check_report(edited, tmp_path / "report.json")
