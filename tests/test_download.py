"""``ctxmodels get`` and downloads on first use, with no network: the published-ELMo path against an HTTP server on
127.0.0.1 serving the ELMo reference fixture under AllenNLP's file names (success, a wrong checksum, a transfer cut
halfway and resumed, a server that ignores Range, a 404, wrong contents), the Hugging Face path through a stand-in
``snapshot_download`` writing the cache layout, and the offline switches."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import h5py
import numpy as np
import pytest

import ctxmodels
from ctxmodels import download
from ctxmodels.cli import main
from ctxmodels.download import DownloadError, elmo_cached, elmo_folder, get_elmo, get_hub
from ctxmodels.loading import ModelNotFoundError, clear_cache, load

SWITCHES = ("CTXMODELS_OFFLINE", "HF_HUB_OFFLINE", "CTXMODELS_ALLOW_DOWNLOADS", "CTXMODELS_ELMO_ENDPOINT")
SENTENCE = ["The", "old", "bank", "by", "the", "river"]


class Server:
    """Files over HTTP on 127.0.0.1 with Range support, and ways to misbehave: ``cut`` (paths whose next answer
    stops halfway through the body and closes the connection), ``ignore_range``; ``log`` holds (path, Range)."""

    def __init__(self, files: dict[str, bytes]):
        self.files = dict(files)
        self.cut: set[str] = set()
        self.ignore_range = False
        self.log: list[tuple[str, str | None]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):  # noqa: N802 - http.server's name
                server.log.append((self.path, self.headers.get("Range")))
                body = server.files.get(self.path)
                if body is None:
                    self.send_error(404, "Not Found")
                    return
                start, status = 0, 200
                rng = self.headers.get("Range")
                if rng and not server.ignore_range:
                    start = int(rng.removeprefix("bytes=").split("-")[0])
                    if start >= len(body):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(body)}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    status = 206
                self.send_response(status)
                rest = body[start:]
                self.send_header("Content-Length", str(len(rest)))
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                self.end_headers()
                if self.path in server.cut:
                    server.cut.discard(self.path)
                    self.wfile.write(rest[: len(rest) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(rest)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def weights_count(path: Path) -> int:
    sizes = []
    with h5py.File(path, "r") as f:
        f.visititems(lambda _, o: sizes.append(o.size) if isinstance(o, h5py.Dataset) else None)
    return sum(sizes)


@pytest.fixture
def clean(monkeypatch, tmp_path):
    for var in SWITCHES:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CTXMODELS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    clear_cache()
    yield
    clear_cache()


@pytest.fixture
def elmo_server(clean, elmo_reference, monkeypatch):
    """The reference ELMo served as AllenNLP publishes elmo-small (its names and URL layout); the registry entry
    describes the fixture's architecture, so the release's checks run on it."""
    real = download.ELMO_RELEASES["elmo-small"]
    weights = (elmo_reference / "lm_weights.hdf5").read_bytes()
    release = dataclasses.replace(real, lstm_dim=64, projection_dim=16, cnn_filters=4 + 8 + 16 + 32 + 64, n_highway=2,
                                  parameters_millions=weights_count(elmo_reference / "lm_weights.hdf5") / 1e6)
    monkeypatch.setitem(download.ELMO_RELEASES, "elmo-small", release)
    base = f"/{real.folder}"
    server = Server({f"{base}/{real.options_file}": (elmo_reference / "options.json").read_bytes(),
                     f"{base}/{real.weights_file}": weights})
    monkeypatch.setenv("CTXMODELS_ELMO_ENDPOINT", server.url)
    server.weights_path = f"{base}/{real.weights_file}"
    server.options_path = f"{base}/{real.options_file}"
    server.release = release
    server.weights_sha = hashlib.sha256(weights).hexdigest()
    yield server
    server.close()


def final_and_parts(folder: Path) -> tuple[list[str], list[str]]:
    names = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
    return [n for n in names if not n.endswith(".part")], [n for n in names if n.endswith(".part")]


def test_get_elmo_then_it_loads_offline(elmo_server, elmo_reference, monkeypatch):
    lines: list[str] = []
    progress: list[tuple[int, int | None]] = []
    folder = get_elmo("elmo-small", report=lines.append, progress=lambda _file: lambda d, t: progress.append((d, t)))
    release = elmo_server.release
    assert folder == elmo_folder("elmo-small") and elmo_cached("elmo-small") == folder
    assert (folder / release.weights_file).read_bytes() == (elmo_reference / "lm_weights.hdf5").read_bytes()
    final, parts = final_and_parts(folder)
    assert parts == [] and set(final) == {release.options_file, release.weights_file, "README.md", "download.json"}
    assert any(elmo_server.weights_sha in line and "no SHA-256 is recorded" in line for line in lines)
    assert progress[-1][0] == progress[-1][1] == (elmo_reference / "lm_weights.hdf5").stat().st_size  # sizes known

    # From now on the name loads with every download switched off, and equals the fixture loaded directly.
    monkeypatch.setenv("CTXMODELS_OFFLINE", "1")
    elmo_server.close()
    m = ctxmodels.load("elmo-small")
    assert m.kind == "elmo" and m.name == "elmo-small" and "AllenNLP" in m.card
    direct = load(elmo_reference)
    np.testing.assert_allclose(m.embed([SENTENCE])[0], direct.embed([SENTENCE])[0], atol=0, rtol=0)
    # A second `get` finds it there and fetches nothing.
    assert get_elmo("elmo-small", report=lines.append) == folder and "already" in lines[-1]


def test_a_wrong_checksum_leaves_nothing(elmo_server):
    with pytest.raises(DownloadError, match="does not match the --sha256 you gave.*deleted"):
        get_elmo("elmo-small", weights_sha256="0" * 64)
    final, parts = final_and_parts(elmo_folder("elmo-small"))
    assert elmo_server.release.weights_file not in final and parts == []
    assert elmo_cached("elmo-small") is None
    with pytest.raises(ModelNotFoundError, match="ctxmodels get elmo-small"):
        load("elmo-small")
    # The right sum, given, is checked and recorded as such.
    folder = get_elmo("elmo-small", weights_sha256=elmo_server.weights_sha.upper())
    assert '"sha256_checked": "given"' in (folder / "download.json").read_text()


def test_a_recorded_sum_is_checked(elmo_server, monkeypatch):
    wrong = dataclasses.replace(elmo_server.release, weights_sha256="ab" * 32)
    monkeypatch.setitem(download.ELMO_RELEASES, "elmo-small", wrong)
    with pytest.raises(DownloadError, match="the sum recorded for this file"):
        get_elmo("elmo-small")
    assert elmo_cached("elmo-small") is None and final_and_parts(elmo_folder("elmo-small"))[1] == []
    right = dataclasses.replace(elmo_server.release, weights_sha256=elmo_server.weights_sha)
    monkeypatch.setitem(download.ELMO_RELEASES, "elmo-small", right)
    lines: list[str] = []
    get_elmo("elmo-small", report=lines.append)
    assert any("matches the recorded SHA-256" in line for line in lines)


def test_a_cut_transfer_is_resumed_in_the_same_call(elmo_server, elmo_reference):
    elmo_server.cut.add(elmo_server.weights_path)
    folder = get_elmo("elmo-small")
    assert (folder / elmo_server.release.weights_file).read_bytes() == (elmo_reference / "lm_weights.hdf5").read_bytes()
    ranges = [r for p, r in elmo_server.log if p == elmo_server.weights_path]
    half = (elmo_reference / "lm_weights.hdf5").stat().st_size // 2
    assert ranges == [None, f"bytes={half}-"]  # the second request asked only for the rest


def test_a_cut_transfer_keeps_its_part_for_the_next_run(elmo_server, elmo_reference):
    elmo_server.cut.add(elmo_server.weights_path)
    with pytest.raises(DownloadError, match="broke off.*run the same command again to resume"):
        get_elmo("elmo-small", attempts=1)
    folder = elmo_folder("elmo-small")
    final, parts = final_and_parts(folder)
    size = (elmo_reference / "lm_weights.hdf5").stat().st_size
    assert elmo_server.release.weights_file not in final and elmo_cached("elmo-small") is None
    assert parts == [elmo_server.release.weights_file + ".part"]
    assert (folder / parts[0]).stat().st_size == size // 2
    # The next run resumes from the kept bytes and ends with the whole file.
    get_elmo("elmo-small", attempts=1)
    assert (folder / elmo_server.release.weights_file).read_bytes() == (elmo_reference / "lm_weights.hdf5").read_bytes()
    assert elmo_server.log[-1] == (elmo_server.weights_path, f"bytes={size // 2}-")
    assert final_and_parts(folder)[1] == []


def test_a_server_that_ignores_range_starts_over(elmo_server, elmo_reference):
    elmo_server.cut.add(elmo_server.weights_path)
    elmo_server.ignore_range = True
    folder = get_elmo("elmo-small")
    assert (folder / elmo_server.release.weights_file).read_bytes() == (elmo_reference / "lm_weights.hdf5").read_bytes()


def test_a_complete_part_is_finished_without_fetching_again(elmo_server, elmo_reference):
    folder = elmo_folder("elmo-small")
    folder.mkdir(parents=True)
    (folder / (elmo_server.release.weights_file + ".part")).write_bytes(
        (elmo_reference / "lm_weights.hdf5").read_bytes())  # a run killed between the last byte and the rename
    get_elmo("elmo-small")
    assert elmo_cached("elmo-small") == folder
    assert (elmo_server.weights_path, "bytes=450896-") in elmo_server.log  # answered 416: nothing more to send


def test_one_download_of_a_release_at_a_time(elmo_server):
    import fcntl

    folder = elmo_folder("elmo-small")
    folder.mkdir(parents=True)
    fd = os.open(folder, os.O_RDONLY)  # as another process's download holds it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(DownloadError, match="another download of elmo-small"):
            get_elmo("elmo-small")
    finally:
        os.close(fd)
    assert elmo_server.log == [] and final_and_parts(folder) == ([], [])
    assert get_elmo("elmo-small") == folder  # free again


def test_a_404_writes_nothing(elmo_server):
    del elmo_server.files[elmo_server.weights_path]
    with pytest.raises(DownloadError, match="404.*not \\(or no longer\\) published there"):
        get_elmo("elmo-small")
    final, parts = final_and_parts(elmo_folder("elmo-small"))
    assert elmo_server.release.weights_file not in final and parts == []
    assert elmo_cached("elmo-small") is None


def test_a_file_of_another_model_is_refused(elmo_server, monkeypatch):
    other = dataclasses.replace(elmo_server.release, lstm_dim=1024)  # what elmo-small really is: not this fixture
    monkeypatch.setitem(download.ELMO_RELEASES, "elmo-small", other)
    with pytest.raises(DownloadError, match="lstm.dim 64 \\(expected 1024\\).*deleted"):
        get_elmo("elmo-small")
    assert final_and_parts(elmo_folder("elmo-small")) == ([], [])
    big = dataclasses.replace(elmo_server.release, parameters_millions=13.6)
    monkeypatch.setitem(download.ELMO_RELEASES, "elmo-small", big)
    with pytest.raises(DownloadError, match="weights \\(0.105 M\\), but elmo-small has 13.6 M"):
        get_elmo("elmo-small")
    assert elmo_cached("elmo-small") is None and final_and_parts(elmo_folder("elmo-small"))[1] == []


def test_load_downloads_only_when_allowed(elmo_server, monkeypatch):
    with pytest.raises(ModelNotFoundError, match="nothing is downloaded unless allowed"):
        load("elmo-small")
    assert elmo_server.log == []
    monkeypatch.setenv("CTXMODELS_OFFLINE", "1")
    with pytest.raises(ModelNotFoundError, match="CTXMODELS_OFFLINE=1.*ctxmodels get elmo-small.*copy that folder"):
        load("elmo-small", download=True)
    assert elmo_server.log == []
    monkeypatch.delenv("CTXMODELS_OFFLINE")
    assert load("elmo-small", download=True).kind == "elmo"
    assert len(elmo_server.log) == 2


def test_downloads_on_first_use_with_the_environment_switch(elmo_server, monkeypatch):
    monkeypatch.setenv("CTXMODELS_ALLOW_DOWNLOADS", "1")
    # download=False wins over the switch: the app loads that way, so a page run never starts a download
    with pytest.raises(ModelNotFoundError, match="not on this machine"):
        load("elmo-small", download=False)
    assert elmo_server.log == []
    assert load("elmo-small").kind == "elmo"


def test_cli_get_elmo_then_every_command_reads_it(elmo_server, capsys, tmp_path, monkeypatch):
    assert main(["get", "elmo-small", "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == str(elmo_folder("elmo-small")) and elmo_server.weights_sha in err
    clear_cache()
    elmo_server.close()
    monkeypatch.setenv("CTXMODELS_OFFLINE", "1")
    (tmp_path / "in.txt").write_text(" ".join(SENTENCE) + "\n", encoding="utf-8")
    assert main(["embed", "--model", "elmo-small", "--input", str(tmp_path / "in.txt"),
                 "--out", str(tmp_path / "out.npz")]) == 0
    assert np.load(tmp_path / "out.npz")["s0"].shape == (3, len(SENTENCE), 32)
    capsys.readouterr()
    for argv, message in ((["get", "elmo-small", "--sha256", "xyz"], "64 hexadecimal"),
                          (["get", "elmo-small", "--revision", "v1"], "--revision is for Hugging Face"),
                          (["get", "no-such-model"], "neither a published ELMo")):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_cli_get_reports_a_404_in_one_line(elmo_server, capsys):
    elmo_server.files.clear()
    assert main(["get", "elmo-small", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "404" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_cli_without_a_network(clean, monkeypatch, capsys):
    monkeypatch.setenv("CTXMODELS_ELMO_ENDPOINT", "http://127.0.0.1:9")  # the discard port: nothing listens
    assert main(["get", "elmo-medium", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "cannot reach" in err and "copy" in err and len(err.strip().splitlines()) == 1
    assert final_and_parts(elmo_folder("elmo-medium")) == ([], [])


# ----------------------------------------------------------------------------------------------------------
# the Hugging Face hub


def write_snapshot(cache: Path, repo_id: str, files: dict[str, bytes | Path], commit: str = "c0ffee") -> Path:
    """What snapshot_download leaves behind: models--ORG--NAME/{refs/main, snapshots/COMMIT/...}."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    snap = repo / "snapshots" / commit
    snap.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (snap / name).write_bytes(content.read_bytes() if isinstance(content, Path) else content)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    return snap


@pytest.fixture
def tiny_bert(tmp_path) -> Path:
    from tests.test_loading import make_bert_dir

    return make_bert_dir(tmp_path, "tiny-src")


def fake_snapshot_download(calls: list[dict], source: Path, only_bin: bool = False):
    """A stand-in for huggingface_hub.snapshot_download: records its arguments and copies the files of ``source``
    that the allow_patterns select (with ``only_bin``, the repository has PyTorch weights only)."""
    import fnmatch

    def fake(repo_id, **kwargs):
        calls.append({"repo_id": repo_id, **kwargs})
        files = {}
        for f in source.iterdir():
            name = "pytorch_model.bin" if only_bin and f.name == "model.safetensors" else f.name
            if any(fnmatch.fnmatch(name, p) for p in kwargs["allow_patterns"]):
                files[name] = f
        return str(write_snapshot(Path(kwargs["cache_dir"]), repo_id, files))

    return fake


def test_get_hub_downloads_what_an_encoder_needs_then_loads_offline(clean, tiny_bert, tmp_path, monkeypatch):
    import huggingface_hub

    calls: list[dict] = []
    (tiny_bert / "flax_model.msgpack").write_bytes(b"not wanted")
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download(calls, tiny_bert))
    snap = get_hub("someorg/tiny", revision="v1")
    assert len(calls) == 1
    call = calls[0]
    assert call["repo_id"] == "someorg/tiny" and call["revision"] == "v1" and call["cache_dir"] == tmp_path / "hub"
    patterns = call["allow_patterns"]
    assert {"config.json", "model.safetensors", "tokenizer.json", "vocab.txt", "README.md"} <= set(patterns)
    assert not any(p.endswith(".bin") or "msgpack" in p for p in patterns)  # safetensors preferred, nothing else
    assert not (snap / "flax_model.msgpack").exists()

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("CTXMODELS_OFFLINE", "1")
    m = ctxmodels.load("someorg/tiny")
    assert m.kind == "bert" and m.path == snap
    np.testing.assert_array_equal(m.embed([SENTENCE])[0], load(tiny_bert).embed([SENTENCE])[0])


def test_get_hub_falls_back_to_pytorch_weights(clean, tiny_bert, monkeypatch):
    import huggingface_hub

    calls: list[dict] = []
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download(calls, tiny_bert, only_bin=True))
    snap = get_hub("someorg/old")
    assert len(calls) == 2 and "pytorch_model.bin" in calls[1]["allow_patterns"]
    assert "pytorch_model.bin" not in calls[0]["allow_patterns"]
    assert (snap / "pytorch_model.bin").is_file()


def test_a_hub_repository_without_weights_is_refused(clean, monkeypatch):
    import huggingface_hub

    def config_only(repo_id, **kwargs):
        return str(write_snapshot(Path(kwargs["cache_dir"]), repo_id, {"config.json": b"{}"}))

    monkeypatch.setattr(huggingface_hub, "snapshot_download", config_only)
    with pytest.raises(DownloadError, match="no model.safetensors or pytorch_model.bin"):
        get_hub("someorg/empty")


@pytest.mark.parametrize("switch", ["HF_HUB_OFFLINE", "CTXMODELS_OFFLINE"])
def test_a_hub_id_not_cached_offline(clean, switch, monkeypatch, capsys):
    import huggingface_hub
    from huggingface_hub.errors import LocalEntryNotFoundError

    online: list[dict] = []

    def cache_only(*args, **kwargs):  # the cache may be asked; the network never
        if not kwargs.get("local_files_only"):
            online.append(kwargs)
        raise LocalEntryNotFoundError("not in the cache")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", cache_only)
    monkeypatch.setenv(switch, "1")
    with pytest.raises(ModelNotFoundError) as e:
        load("someorg/not-here", download=True)
    message = str(e.value)
    assert f"{switch}=1" in message and "ctxmodels get someorg/not-here" in message
    assert "models--someorg--not-here" in message
    with pytest.raises(DownloadError, match=f"downloads are off \\({switch}=1"):
        get_hub("someorg/not-here")
    assert main(["get", "someorg/not-here"]) == 2
    assert main(["fill-mask", "--model", "someorg/not-here", "the [MASK]"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 2 and switch in err
    assert online == []


def test_a_hub_id_not_cached_without_permission(clean, monkeypatch):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda *a, **k: pytest.fail("downloaded"))
    with pytest.raises(ModelNotFoundError, match="nothing is downloaded unless allowed.*ctxmodels get someorg/x"):
        load("someorg/x")


def test_hub_errors_become_one_message(clean, monkeypatch):
    import huggingface_hub
    from huggingface_hub.errors import LocalEntryNotFoundError

    def unreachable(*args, **kwargs):
        raise LocalEntryNotFoundError("cannot reach the hub")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", unreachable)
    with pytest.raises(DownloadError, match="the hub cannot be reached.*copy its folder models--someorg--y"):
        get_hub("someorg/y")
    with pytest.raises(DownloadError, match="not a Hugging Face model id"):
        get_hub("../../etc")

    def nonsense(*args, **kwargs):  # what huggingface_hub raised for a mirror whose file tree was not a list
        raise TypeError("string indices must be integers, not 'str'")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", nonsense)
    with pytest.raises(DownloadError, match="the hub's answer could not be used \\(TypeError"):
        get_hub("someorg/y")


class LoopbackHub:
    """Just enough of the Hugging Face hub's HTTP API on 127.0.0.1 for snapshot_download: the revision, the file
    tree, and each file under /ORG/NAME/resolve/COMMIT/FILE (HEAD and GET)."""

    def __init__(self, repo_id: str, files: dict[str, bytes]):
        import json

        commit = "c" * 40
        self.log: list[tuple[str, str]] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def answer(self, head: bool):
                hub.log.append((self.command, self.path))
                path = self.path.split("?")[0]
                headers, body, code = {}, b"", 404
                if path.startswith(f"/api/models/{repo_id}/tree/"):
                    body, code = json.dumps([{"type": "file", "path": n, "size": len(b),
                                              "oid": hashlib.sha1(b).hexdigest()} for n, b in files.items()]), 200
                elif path.startswith(f"/api/models/{repo_id}/revision/"):
                    body, code = json.dumps({"id": repo_id, "sha": commit,
                                             "siblings": [{"rfilename": n} for n in files]}), 200
                elif path.startswith(f"/{repo_id}/resolve/") and path.rsplit("/", 1)[1] in files:
                    body, code = files[path.rsplit("/", 1)[1]], 200
                    headers = {"X-Repo-Commit": commit, "ETag": f'"{hashlib.sha256(body).hexdigest()}"'}
                body = body.encode() if isinstance(body, str) else body
                self.send_response(code)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not head:
                    self.wfile.write(body)

            def do_GET(self):  # noqa: N802
                self.answer(False)

            def do_HEAD(self):  # noqa: N802
                self.answer(True)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_get_hub_from_a_loopback_hub_endpoint(clean, tiny_bert, monkeypatch, capsys):
    """The real huggingface_hub against HF_ENDPOINT on 127.0.0.1: only the encoder's files come (the repository's
    old pytorch_model.bin and a flax file stay on the server), and the name then loads with the hub offline."""
    files = {p.name: p.read_bytes() for p in tiny_bert.iterdir()}
    files.update({"pytorch_model.bin": b"old weights", "flax_model.msgpack": b"flax", "tf_model.h5": b"tf"})
    hub = LoopbackHub("someorg/tiny", files)
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    try:
        assert main(["get", "someorg/tiny", "--no-progress"]) == 0
    finally:
        hub.close()
    snap = Path(capsys.readouterr().out.strip())
    assert snap.parent.parent.name == "models--someorg--tiny" and snap.is_relative_to(Path(os.environ["HF_HUB_CACHE"]))
    assert sorted(p.name for p in snap.iterdir()) == sorted(n for n in files if n not in (
        "pytorch_model.bin", "flax_model.msgpack", "tf_model.h5"))
    fetched = {path.rsplit("/", 1)[1] for cmd, path in hub.log if cmd == "GET" and "/resolve/" in path}
    assert "pytorch_model.bin" not in fetched and "model.safetensors" in fetched
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    m = ctxmodels.load("someorg/tiny")
    np.testing.assert_array_equal(m.embed([SENTENCE])[0], load(tiny_bert).embed([SENTENCE])[0])
    # Offline, `get` of a model already in the cache answers from the cache (the server is gone).
    n = len(hub.log)
    assert get_hub("someorg/tiny") == snap and len(hub.log) == n
