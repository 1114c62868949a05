"""The README and docs/: generated figures match the files they are written from, links lead somewhere, and the
README stays a front page that CI can read its test command from."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from ctxmodels.release import docs

ROOT = Path(__file__).resolve().parents[1]
PAGES = docs.pages(ROOT)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_the_pages_are_found():
    assert ROOT / "README.md" in PAGES and ROOT / "docs" / "app.md" in PAGES


def test_generated_figures_are_fresh():
    stale = docs.stale(ROOT)
    assert stale == [], (f"generated parts differ from the files they are written from: {stale}; "
                         f"refresh them with: {docs.COMMAND}")


def test_every_generated_part_is_used_and_every_marker_known():
    used = {m[1] for page in PAGES for m in docs.MARKED.finditer(page.read_text(encoding="utf-8"))}
    assert used == set(docs.PARTS), f"unused: {set(docs.PARTS) - used}; unknown: {used - set(docs.PARTS)}"


def test_a_stale_part_is_found_and_rewritten(tmp_path):
    (tmp_path / "assets").mkdir()
    shutil.copy(ROOT / "assets" / "quality.json", tmp_path / "assets" / "quality.json")
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "page.md"
    page.write_text("Perplexity <!-- generated:elmo-perplexity -->1.0 / 2.0<!-- end generated:elmo-perplexity -->."
                    "\n\n<!-- generated:quality-table -->\n| old |\n<!-- end generated:quality-table -->\n")
    assert docs.stale(tmp_path) == ["docs/page.md: elmo-perplexity", "docs/page.md: quality-table"]
    assert docs.main(["--check", str(tmp_path)]) == 1
    assert docs.write(tmp_path) == [page]
    text = page.read_text()
    assert f"Perplexity <!-- generated:elmo-perplexity -->{docs.render('elmo-perplexity', tmp_path)}<!--" in text
    assert f"<!-- generated:quality-table -->\n{docs.render('quality-table', tmp_path)}\n<!-- end" in text
    assert docs.stale(tmp_path) == [] and docs.main(["--check", str(tmp_path)]) == 0


def test_a_missing_source_or_unknown_part_is_named(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("<!-- generated:pos-accuracy -->0.9<!-- end generated:pos-accuracy -->")
    with pytest.raises(FileNotFoundError, match="finetune.json"):
        docs.stale(tmp_path)
    with pytest.raises(ValueError, match="no generated part named 'nope'"):
        docs.render("nope", tmp_path)


def test_layer_names_and_ordinals_read_well():
    elmo = ["layer 0 (char CNN)", "layer 1 (LSTM)", "layer 2 (LSTM)"]
    assert docs._layer_names(elmo) == " (char CNN, LSTM 1, LSTM 2)"
    assert docs._layer_names(["embeddings"] + [f"layer {i}" for i in range(1, 7)]) == " (embeddings, layers 1–6)"
    assert docs._layer_names(["static"]) == ""
    assert [docs._ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 192, 407)] == \
        ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "192nd", "407th"]


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_lead_somewhere(page):
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        goal = (page.parent / path).resolve() if path else page
        if not goal.exists():
            broken.append(target)
        elif anchor and goal.suffix == ".md" and anchor not in _anchors(goal):
            broken.append(target)
    assert broken == [], f"{page.relative_to(ROOT)}: links to nothing: {broken}"


def test_the_readme_is_a_front_page_with_the_commands_ci_reads():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200, "the README is the front page: move details into docs/"
    for marker in ("<!-- run-command -->", "<!-- test-command -->"):
        block = re.search(re.escape(marker) + r"\n```bash\n(.+?)\n```", text, flags=re.S)
        assert block, f"{marker} must stand right above a bash block (.ci/run reads the test command from it)"
    assert "pytest" in re.search(r"<!-- test-command -->\n```bash\n(.+?)\n```", text, flags=re.S)[1]
    assert "streamlit run app/Home.py" in re.search(r"<!-- run-command -->\n```bash\n(.+?)\n```", text, flags=re.S)[1]
