"""One visitor's actions stay theirs: nothing a visitor does writes under the assets folder or changes what another
visitor sees (a probe run on the ELMo layers page is kept in that visitor's session; the shipped result stays).
AppTest sessions on the tiny models of tests/app_fixtures.py."""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

import pytest

from tests.app_fixtures import assert_clean, charts, page, texts
from tests.test_app import PAGES, write_probe_cache

pytest.importorskip("streamlit.testing.v1")
pytestmark = pytest.mark.usefixtures("app_env")

SHIPPED = [0.2, 0.5, 0.3]  # the made-up weights write_probe_cache stores beside the tiny ELMo


def snapshot(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file and folder under ``folder``: its bytes' sha256 (files) and its permission bits."""
    found = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "folder"
        found[str(path.relative_to(folder))] = (digest, stat.S_IMODE(info.st_mode))
    return found


def differences(before: dict, after: dict) -> list[str]:
    return sorted(f"{k}: {before.get(k)} -> {after.get(k)}" for k in before.keys() | after.keys()
                  if before.get(k) != after.get(k))


@pytest.fixture
def shipped_probe(tiny_assets):
    """A part-of-speech probe result stored beside the tiny ELMo, as one is shipped; removed afterwards."""
    write_probe_cache(tiny_assets)
    yield tiny_assets
    for p in (tiny_assets / "elmo-eltec" / "probes").glob("*"):
        p.unlink()


def bars(at) -> list[list[float]]:
    return [list(t["y"]) for spec in charts(at) for t in spec["data"] if t.get("type") == "bar"]


def run_probe(at, again: bool = False):
    """Visitor ``at`` runs a small part-of-speech probe on the ELMo layers page."""
    at.selectbox(key="probe_task").set_value("pos")
    at.number_input(key="probe_sentences").set_value(20)
    at.number_input(key="probe_epochs").set_value(1)
    if again:
        at.checkbox(key="probe_again").check()
    next(b for b in at.get("form_submit_button") if b.label == "Run probe").click()
    return at.run()


@pytest.mark.slow
def test_a_visitors_probe_run_is_theirs_and_the_next_visitor_sees_the_shipped_one(shipped_probe, semcor_data,
                                                                                    monkeypatch):
    monkeypatch.setenv("CTXMODELS_DATA", str(semcor_data))  # the shipped SemCor: the tiny assets hold none
    before = snapshot(shipped_probe)
    first = page("elmo_layers")
    assert_clean(first)
    assert bars(first) == [SHIPPED]

    run_probe(first)
    assert_clean(first)
    [mine] = bars(first)
    assert mine != SHIPPED and abs(sum(mine) - 1) < 1e-3

    second = page("elmo_layers")  # another visitor, after the first one's run
    assert_clean(second)
    assert bars(second) == [SHIPPED]
    lesson = page("lesson", step="4", reveal="1")
    assert_clean(lesson)
    assert any("weights 0.20 / 0.50 / 0.30" in m for m in texts(lesson.markdown))
    assert differences(before, snapshot(shipped_probe)) == []

    # each page says which result it shows; the first visitor can go back to the stored one
    assert any("your run just now" in m for m in texts(first.markdown))
    assert any("the shipped measurement" in m for m in texts(second.markdown))
    first.button(key="probe::elmo-eltec::pos::drop").click()
    first.run()
    assert bars(first) == [SHIPPED]
    assert any("the shipped measurement" in m for m in texts(first.markdown))


@pytest.mark.slow
def test_a_run_over_the_app_leaves_the_assets_folder_as_it_was(tiny_assets, semcor_data, monkeypatch):
    """Every page on its defaults and a probe run (then run again, "recompute" ticked): the assets' bytes and file
    modes are unchanged."""
    monkeypatch.setenv("CTXMODELS_DATA", str(semcor_data))
    before = snapshot(tiny_assets)
    for name in PAGES:
        assert_clean(page(name))
    at = run_probe(page("elmo_layers"))
    assert_clean(at)
    assert bars(at)
    assert_clean(run_probe(at, again=True))
    assert differences(before, snapshot(tiny_assets)) == []
