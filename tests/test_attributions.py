"""Which words an answer rests on, by integrated gradients: the integral on functions with known answers, our BERT
against the same integral written out through transformers' ``inputs_embeds``, every encoder family transformers
reads, and the command line. ELMo's are in test_elmo_blanks.py."""

from __future__ import annotations

import json
import math

import pytest
import torch
import transformers

import ctxmodels
from ctxmodels.analysis import blanks
from ctxmodels.analysis.fill_in import fill_mask, guess_attributions, mask_word, word_attributions
from ctxmodels.analysis.integrated_gradients import FIRST_STEPS, RELATIVE_TOLERANCE, TOLERANCE, integrate
from ctxmodels.cli import main as cli_main
from tests.helpers import save_tiny_mlm_bert


def test_integrate_is_exact_where_the_gradient_is_linear_along_the_path():
    torch.manual_seed(0)
    w, x, b = torch.randn(5, 3), torch.randn(5, 3), torch.randn(5, 3)
    ig = integrate(lambda z: (w * z**2).sum(dim=(1, 2)), x, b, steps=3, rows_per_run=2)
    # f = Σ w z²: along the straight path the gradient is linear in α, which the trapezoid rule integrates exactly
    assert torch.allclose(ig.attributions, (w * (x**2 - b**2)).sum(-1), atol=1e-5)
    assert ig.score == pytest.approx(float((w * x**2).sum()), abs=1e-5)
    assert ig.baseline_score == pytest.approx(float((w * b**2).sum()), abs=1e-5)
    assert abs(ig.gap) < 1e-4


def test_integrate_reports_the_error_of_too_few_steps():
    torch.manual_seed(0)
    x, b = torch.randn(4, 6) * 3, torch.zeros(4, 6)
    gaps = [abs(integrate(lambda z: torch.sin(z).sum(dim=(1, 2)), x, b, steps=n).gap) for n in (1, 4, 64)]
    assert gaps[0] > gaps[1] > gaps[2] and gaps[0] > 0.1 and gaps[2] < 1e-2


def test_integrate_without_a_number_of_steps_refines_until_the_scores_add_up():
    torch.manual_seed(0)
    x, b = torch.rand(4, 6) * 3, torch.zeros(4, 6)

    def f(z):  # a gradient convex along the path: the trapezoid rule's errors add up instead of cancelling
        return torch.exp(3 * z).sum(dim=(1, 2))

    first = integrate(f, x, b, steps=FIRST_STEPS)
    assert abs(first.gap) > RELATIVE_TOLERANCE * first.score > TOLERANCE  # so the first rule is not enough here
    result = integrate(f, x, b)
    assert result.steps > FIRST_STEPS and abs(result.gap) <= RELATIVE_TOLERANCE * result.score
    # the refined rule reuses the coarser one's points and gives what that many intervals give directly
    direct = integrate(f, x, b, steps=result.steps)
    assert torch.allclose(result.attributions, direct.attributions, atol=1e-5)
    assert integrate(lambda z: (z**2).sum(dim=(1, 2)), x, b).steps == FIRST_STEPS  # exact at once: no refining
    # a gap above the absolute tolerance but small beside the whole rise is small enough
    quartic = integrate(lambda z: (z**4).sum(dim=(1, 2)), x, b)
    assert quartic.steps == FIRST_STEPS and TOLERANCE < abs(quartic.gap) <= RELATIVE_TOLERANCE * quartic.score
    # and a gap above the relative tolerance but below the absolute one is small enough too
    scale = abs(first.gap) / (TOLERANCE / 2)
    small = integrate(lambda z: f(z) / scale, x, b)
    assert small.steps == FIRST_STEPS and RELATIVE_TOLERANCE * small.score < abs(small.gap) <= TOLERANCE


def test_integrate_bad_input():
    x = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="steps must be at least 1"):
        integrate(lambda z: z.sum(dim=(1, 2)), x, x, steps=0)
    with pytest.raises(ValueError, match="differ in shape"):
        integrate(lambda z: z.sum(dim=(1, 2)), x, torch.zeros(3, 3))
    with pytest.raises(ValueError, match="NaN or infinite"):
        integrate(lambda z: z.sum(dim=(1, 2)) / 0.0, x, x)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    directory = tmp_path_factory.mktemp("bert")
    return (*save_tiny_mlm_bert(directory), directory)


def _written_out(directory, enc, hidden: list[int], mask_id: int, position: int, answer: int,
                 steps: int) -> list[float]:
    """The integral per piece, written out another way: transformers' BertForMaskedLM reading the blends as
    ``inputs_embeds``, one blend at a time, the trapezoid rule by hand."""
    hf = transformers.BertForMaskedLM.from_pretrained(directory).eval()
    table = hf.get_input_embeddings().weight.detach()
    ids = torch.tensor(enc.ids)
    base = ids.clone()
    base[hidden] = mask_id
    x, b = table[ids], table[base]
    total = torch.zeros_like(x)
    for k in range(steps + 1):
        z = (b + k / steps * (x - b)).requires_grad_(True)
        logp = hf(inputs_embeds=z[None]).logits[0, position].log_softmax(-1)[answer]
        (g,) = torch.autograd.grad(logp, z)
        total += g * (0.5 if k in (0, steps) else 1.0) / steps
    return ((x - b) * total).sum(-1).tolist()


def test_our_bert_gives_the_integral_written_out_through_transformers(saved):
    model, tok, directory = saved
    text = "the [MASK] of the river was steep"
    first = fill_mask(model, tok, text, top_k=1, whole_words=True)[0][0]
    result = guess_attributions(model, tok, text, steps=8)
    assert result.answer == first["token"] and result.prob == pytest.approx(first["prob"], rel=1e-5)
    assert result.words == text.split() and result.scores[1] is None and result.steps == 8
    enc = tok.encode(text)
    hidden = [p for w in (0, 2, 3, 4, 5, 6) for p in enc.word_pieces(w)]
    per_piece = _written_out(directory, enc, hidden, tok.mask_id, 2, tok.token_to_id(result.answer), 8)
    for w in (0, 2, 3, 4, 5, 6):  # a word's score is the sum of its pieces' ("river", "steep": several pieces)
        assert result.scores[w] == pytest.approx(sum(per_piece[p] for p in enc.word_pieces(w)), abs=1e-4)
    assert len(enc.word_pieces(6)) > 1
    # the baseline is the sentence with every word hidden: the model's probability read directly
    ids = torch.tensor([enc.ids])
    ids[0, hidden] = tok.mask_id
    with torch.no_grad():
        base = model(ids).prediction_logits[0, 2].softmax(-1)[tok.token_to_id(result.answer)]
    assert result.baseline_prob == pytest.approx(float(base), rel=1e-4)
    # completeness: with enough steps the scores add up to the log-ratio of the two probabilities
    fine = guess_attributions(model, tok, text, steps=64)
    total = sum(s for s in fine.scores if s is not None)
    assert abs(fine.gap) < 0.01 and total == pytest.approx(math.log(fine.prob / fine.baseline_prob), abs=0.01)
    assert fine.to_dict()["gap"] == fine.gap


def test_a_hidden_word_a_named_guess_and_a_second_blank(saved):
    model, tok, _ = saved
    text = "the bankers lend money to the river"
    score = mask_word(model, tok, text, "bankers")
    result = word_attributions(model, tok, text, "bankers", steps=16)
    assert result.answer == "bankers" and len(score.pieces) >= 2
    assert result.prob == pytest.approx(score.prob, rel=1e-4)  # the product of its pieces, as mask_word scores it
    assert result.scores[1] is None and all(s is not None for i, s in enumerate(result.scores) if i != 1)
    two = "the [MASK] of the [MASK]"
    fourth = fill_mask(model, tok, two, top_k=8)[1][3]
    named = guess_attributions(model, tok, two, blank=1, guess=fourth["token"], whole_words=False)
    assert named.answer == fourth["token"] and named.prob == pytest.approx(fourth["prob"], rel=1e-5)
    assert named.scores[1] is None and named.scores[4] is None  # both blanks stay blanks


def test_attributions_clear_errors(saved, monkeypatch):
    model, tok, _ = saved
    with pytest.raises(ValueError, match=r"no \[MASK\]"):
        guess_attributions(model, tok, "the bank of the river")
    with pytest.raises(ValueError, match="blank 3 does not exist: the text has 2"):
        guess_attributions(model, tok, "the [MASK] of the [MASK]", blank=2)
    with pytest.raises(ValueError, match="not one piece of this model's vocabulary"):
        guess_attributions(model, tok, "the [MASK] of the river", guess="zebrafish")
    with pytest.raises(ValueError, match="'sea' occurs not at all"):
        word_attributions(model, tok, "the bank of the river", "sea")
    with pytest.raises(ValueError, match="steps must be at least 1"):
        guess_attributions(model, tok, "the [MASK] of the river", steps=0)
    monkeypatch.setattr(blanks, "MAX_WORDS_TO_HIDE", 4)
    with pytest.raises(ValueError, match="5 words to hide .* up to 4 words: shorten it"):
        guess_attributions(model, tok, "the [MASK] of the river was")


def test_the_model_is_left_as_it_was(saved):
    model, tok, _ = saved
    model.train()
    try:
        guess_attributions(model, tok, "the [MASK] of the river", steps=2)
        assert model.training and all(p.grad is None for p in model.parameters())
    finally:
        model.eval()


@pytest.mark.parametrize("family", ["bert", "roberta", "distilbert", "albert", "electra-generator", "deberta-v2"])
def test_every_encoder_family_transformers_reads(tmp_path, family):
    from tests.hf_tiny import build

    model = ctxmodels.load(build(family, tmp_path / family))
    text = "The bank by the [MASK] was steep."
    first = fill_mask(model, None, text, top_k=1, whole_words=True)[0][0]
    result = guess_attributions(model, None, text, steps=48)
    assert result.answer == first["token"] and result.prob == pytest.approx(first["prob"], rel=1e-4)
    assert result.words[4] == "[MASK]" and result.scores[4] is None
    assert sum(s is not None for s in result.scores) == len(result.words) - 1
    assert abs(result.gap) < 0.02
    total = sum(s for s in result.scores if s is not None)
    assert total == pytest.approx(math.log(result.prob / result.baseline_prob), abs=0.02)


def test_cli_by_gradients(saved, capsys):
    model, tok, directory = saved
    argv = ["fill-mask", "--model", str(directory), "--rests-on", "--by", "gradients", "--steps", "8"]
    assert cli_main([*argv, "--json", "the [MASK] of the river"]) == 0
    out = json.loads(capsys.readouterr().out)
    expected = guess_attributions(model, tok, "the [MASK] of the river", whole_words=False, steps=8)
    assert out["rests_on"][0]["scores"] == pytest.approx(expected.scores, abs=1e-6)
    assert cli_main([*argv, "--word", "river", "the bank of the river"]) == 0
    text = capsys.readouterr().out
    assert "what 'river' rests on, by integrated gradients" in text and text.count(" nats  x") == 4
    assert cli_main(["fill-mask", "--model", str(directory), "--by", "gradients", "the [MASK] of the river"]) == 2
    assert "add --rests-on" in capsys.readouterr().err
