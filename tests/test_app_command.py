"""``ctxmodels app``: the server it starts has the checkout's server options and hands the operator's options to
the app as ``streamlit run app/Home.py -- ...`` does; the app's runs go where they may be written."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from ctxmodels.commands import app as app_command

ROOT = Path(__file__).resolve().parents[1]


def parsed(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    app_command.add_arguments(p)
    return p.parse_args(list(argv))


def test_the_server_options_are_the_checkouts():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 on
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    flat = {f"{section}.{name}": str(value).lower() if isinstance(value, bool) else str(value)
            for section, values in config.items() for name, value in values.items()}
    assert app_command.SERVER_OPTIONS == flat


def test_from_a_checkout_it_runs_the_checkouts_app():
    assert app_command.app_script() == ROOT / "app" / "Home.py"


def test_the_operators_options_reach_the_apps_settings():
    from app.kit.settings import settings

    cmd = app_command.command(parsed("--models", "a", "b,c", "--corpus", "x.txt", "--allow-paths", "--allow-training",
                                     "--heavy-per-session", "3", "--port", "9999"))
    assert cmd[1:4] == ["-m", "streamlit", "run"] and "--server.port=9999" in cmd
    after = cmd[cmd.index("--") + 1:]
    s = settings(after)
    assert (s.models, s.corpora, s.heavy_per_session) == (["a", "b", "c"], ["x.txt"], 3)
    assert s.allow_paths and s.allow_training and not s.allow_uploads and not s.allow_downloads


def test_no_operator_option_no_separator():
    assert "--" not in app_command.command(parsed())


def test_runs_of_an_installed_app_go_to_the_cache(monkeypatch, tmp_path):
    from app.kit import settings

    assert settings.default_runs_dir() == ROOT / "runs" / "app"
    monkeypatch.setattr(settings, "ROOT", tmp_path / "site-packages" / "ctxmodels" / "_explorer")
    monkeypatch.setenv("CTXMODELS_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("CTXMODELS_APP_RUNS", raising=False)
    assert settings.settings([]).runs_dir == tmp_path / "cache" / "app-runs"


@pytest.mark.parametrize("argv", [["--port", "0"], ["--port", "70000"], ["--heavy-per-session", "0"]])
def test_out_of_range_numbers_are_refused(argv):
    with pytest.raises(SystemExit):
        parsed(*argv)


def test_every_file_of_the_app_goes_into_the_wheel():
    """setup.py ships every package under app/ (a folder with __init__.py) with its *.md files: a file of another
    kind, or a folder of modules without __init__.py, would be missing from an app installed from a wheel."""
    files = [p for p in (ROOT / "app").rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert [str(p) for p in files if p.suffix not in (".py", ".md")] == []
    folders = {p.parent for p in files}
    assert [str(f) for f in folders if not (f / "__init__.py").is_file()] == []
