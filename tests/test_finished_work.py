"""Long work is never thrown away because of where its result goes: ``ctxmodels quality`` (and ``eval``, ``probe``)
refuse an output option they cannot honour before measuring, and when the write still fails afterwards (the disk
filled, the folder went) the finished report is kept elsewhere and the one error line says where. ``speeches-text``
refuses an OUT that is one of its inputs, under any path, before reading anything."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from ctxmodels import checkpoint, cli
from ctxmodels.commands import quality as quality_command


def _one_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("ctxmodels: error: ") and sum("error" in x for x in lines) == 1, err
    assert "Traceback" not in err, err
    return lines[-1]


@pytest.fixture
def no_measuring(monkeypatch):
    """Fail the test if the measuring starts."""
    def measure(*args, **kwargs):
        raise AssertionError("measured before checking the output options")
    monkeypatch.setattr(quality_command, "measure", measure)


def _bad_outputs(tmp_path: Path) -> dict[str, list[str]]:
    """Output options that cannot be honoured, each as the options that give it."""
    (tmp_path / "a file").write_text("x")
    (tmp_path / "a folder").mkdir()
    os.mkfifo(tmp_path / "a pipe")
    (tmp_path / "not json").write_text("{nope")
    (tmp_path / "no models.json").write_text('{"x": 1}')
    (tmp_path / "models a list.json").write_text('{"models": [1, 2]}')
    (tmp_path / "figures not objects.json").write_text('{"models": {"m": 3}}')
    return {
        "out under a file": ["--out", str(tmp_path / "a file" / "q.json")],
        "out a folder": ["--out", str(tmp_path / "a folder")],
        "out a pipe": ["--out", str(tmp_path / "a pipe")],
        "fp32 report missing": ["--fp32-report", str(tmp_path / "missing.json")],
        "fp32 report a folder": ["--fp32-report", str(tmp_path / "a folder")],
        "fp32 report not JSON": ["--fp32-report", str(tmp_path / "not json")],
        "fp32 report without models": ["--fp32-report", str(tmp_path / "no models.json")],
        "fp32 report models a list": ["--fp32-report", str(tmp_path / "models a list.json")],
        "fp32 report figures not objects": ["--fp32-report", str(tmp_path / "figures not objects.json")],
    }


def test_quality_refuses_every_bad_output_option_before_measuring(tmp_path, tiny_assets, capsys, no_measuring):
    model = str(tiny_assets / "static-eltec")
    for case, options in _bad_outputs(tmp_path).items():
        rc = cli.main(["quality", "--model", model, "--no-senses", *options])
        assert rc == 2, case
        _one_error(capsys.readouterr().err)


@pytest.mark.parametrize("error", [errno.ENOSPC, errno.EACCES, errno.EROFS, errno.EIO, errno.ENOENT])
def test_a_report_that_cannot_be_written_after_measuring_is_kept_and_its_place_named(
        tmp_path, tiny_assets, capsys, monkeypatch, error):
    out = tmp_path / "reports" / "q.json"
    monkeypatch.setattr(checkpoint.tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    real = checkpoint.write_text_atomic

    def failing(path, text):
        if Path(path) == out:
            raise OSError(error, os.strerror(error), str(path))
        real(path, text)

    monkeypatch.setattr(checkpoint, "write_text_atomic", failing)
    rc = cli.main(["quality", "--model", str(tiny_assets / "static-eltec"), "--no-senses", "--out", str(out)])
    captured = capsys.readouterr()
    line = _one_error(captured.err)
    assert rc == 2 and "the report is saved in " in line and os.strerror(error) in line, line
    kept = Path(line.split("the report is saved in ")[1].split(" instead")[0])
    assert kept.parent == tmp_path / "tmp"
    assert "static-eltec" in json.loads(kept.read_text())["models"]
    assert "static-eltec" in captured.out  # the summary was shown too


def test_a_report_no_folder_takes_is_printed(tmp_path, capsys, monkeypatch):
    def nowhere(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(checkpoint, "write_text_atomic", nowhere)
    monkeypatch.setattr(checkpoint.tempfile, "mkstemp", nowhere)
    with pytest.raises(checkpoint.WorkKeptElsewhere, match="saved in standard output"):
        checkpoint.write_finished(tmp_path / "r.json", '{"a": 1}\n', "the report")
    assert capsys.readouterr().out == '{"a": 1}\n'
