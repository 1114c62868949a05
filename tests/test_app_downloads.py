"""The Models page's "add a model from the hub" control: absent unless the operator allows downloads; with
``--allow-downloads`` it downloads in the background (a published ELMo from a loopback server, a hub id through a
stand-in snapshot_download), shows the progress and adds the model to every visitor's list."""

from __future__ import annotations

import time

import pytest

from app.kit.settings import settings
from tests.app_fixtures import assert_clean, page, texts
from tests.test_download import clean, elmo_server  # noqa: F401 - the loopback ELMo server and its settings

pytest.importorskip("streamlit.testing.v1")
pytestmark = pytest.mark.usefixtures("app_env")


@pytest.fixture(autouse=True)
def fresh_server_state():
    """Downloads and added models are per server (per process here): each test starts and ends without them."""
    from app.kit.downloads import downloads
    from app.kit.registry import registry

    downloads.clear()
    registry.clear()
    yield
    downloads.clear()
    registry.clear()


def download_box(at):
    return [t for t in at.text_input if t.key == "download_name"]


def submit(at, name: str):
    download_box(at)[0].set_value(name)
    next(b for b in at.get("form_submit_button") if b.label == "Download").click()
    return at.run()


def wait_for(at, what: str, seconds: float = 60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if any(what in s for s in texts(at.success) + texts(at.error)):
            return at
        time.sleep(0.5)
        at.run()
    raise AssertionError(f"no {what!r} after {seconds} s: {texts(at.markdown)[-5:]}")


def test_no_download_control_unless_the_operator_allows_it():
    at = page("models")
    assert_clean(at)
    assert not download_box(at)
    assert any("Downloading models from the app is off" in i for i in texts(at.info))
    assert not settings([]).allow_downloads and settings(["--allow-downloads"]).allow_downloads


def test_downloads_a_published_elmo_into_the_model_list(elmo_server, monkeypatch):  # noqa: F811
    monkeypatch.setenv("CTXMODELS_ALLOW_DOWNLOADS", "1")
    at = page("models")
    assert_clean(at)
    assert download_box(at)
    at = submit(at, "not a model id!")
    assert any("neither a Hugging Face id" in e for e in texts(at.error))
    at = wait_for(submit(at, "elmo-small"), "is downloaded")
    assert_clean(at)
    at.run()  # the full run after the download lists the model with the others
    assert "elmo-small" in set(at.dataframe[0].value["model"])
    assert elmo_server.log  # it really came over HTTP


def test_a_failed_download_says_why(elmo_server, monkeypatch):  # noqa: F811
    monkeypatch.setenv("CTXMODELS_ALLOW_DOWNLOADS", "1")
    elmo_server.files.clear()
    at = wait_for(submit(page("models"), "elmo-small"), "404")
    assert not at.exception and any("elmo-small" in e and "404" in e for e in texts(at.error))


def test_downloads_a_hub_model(monkeypatch, tmp_path):
    import huggingface_hub

    from tests.test_download import fake_snapshot_download
    from tests.test_loading import make_bert_dir

    calls: list[dict] = []
    monkeypatch.setattr(huggingface_hub, "snapshot_download",
                        fake_snapshot_download(calls, make_bert_dir(tmp_path, "src")))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("CTXMODELS_OFFLINE", raising=False)
    at = page("models")
    assert not download_box(at)
    monkeypatch.setattr("sys.argv", ["app/Home.py", "--allow-downloads"])  # the operator's flag, not the variable
    at = wait_for(submit(page("models"), "someorg/tiny-app-bert"), "is downloaded")
    assert_clean(at)
    assert calls and calls[0]["repo_id"] == "someorg/tiny-app-bert" and calls[0]["tqdm_class"] is not None
    at.run()
    assert "tiny-app-bert" in set(at.dataframe[0].value["model"])


def test_progress_from_the_bars_snapshot_download_makes():
    from app.kit.downloads import Progress

    p = Progress("org/x")
    assert p.fraction() == (None, "queued")
    bars = p.tqdm_class()
    files = bars(desc="Fetching 2 files", total=2)  # a files count: shown only when no byte counts come
    files.update(1)
    assert p.fraction() == (0.5, "1 of 2 files")
    transfer = bars(desc="Downloading bytes", total=0, initial=0, unit="B", unit_scale=True)
    transfer.total = 4 * 2**20  # as huggingface_hub adds each file's size to its parent bar
    transfer.refresh()
    transfer.update(2**20)
    assert p.fraction() == (0.25, "1.0 of 4.0 MB")
    transfer.close()
    files.close()
