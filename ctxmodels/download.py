"""Getting published models onto this machine: ``ctxmodels get NAME`` and ``ctxmodels.load(..., download=True)``.

Two sources, each into the cache its readers already search:

* a Hugging Face hub id ``ORG/NAME``: :func:`get_hub` runs ``huggingface_hub.snapshot_download`` into the standard
  Hugging Face cache (the first of :func:`ctxmodels.paths.hf_cache_dirs`), fetching only what an encoder needs
  (config, weights — safetensors when the repository has them — tokenizer files, card and licence). ``HF_ENDPOINT``
  and ``HF_TOKEN`` work as they do for ``huggingface_hub``.
* a published AllenNLP ELMo (:data:`ELMO_RELEASES`: ``elmo-small``, ``elmo-medium``, ``elmo-original``,
  ``elmo-original-5.5b``): :func:`get_elmo` fetches ``options.json`` and the weights ``.hdf5`` from the URLs AllenNLP
  publishes (``$CTXMODELS_ELMO_ENDPOINT`` for a mirror) into ``$CTXMODELS_CACHE/models/NAME/``.

A file is written as ``NAME.part``, resumed with an HTTP Range request when a transfer breaks (up to ``attempts``
tries per call, and again on the next call), checked (its length against the server's, its SHA-256 against a
recorded or given sum, its contents against the release), and only then renamed into place: a name in the cache is
always a whole, checked file. A ``.part`` whose checksum or contents are wrong is deleted (resuming it could only
reproduce the same wrong file); a ``.part`` left by a broken transfer is kept for the next try.

Downloads happen only when asked for (``ctxmodels get``, ``download=True``, ``CTXMODELS_ALLOW_DOWNLOADS=1``) and
never while ``CTXMODELS_OFFLINE=1`` (everything) or ``HF_HUB_OFFLINE=1`` (the hub) is set: :func:`offline_reason`.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .checkpoint import CheckpointError, write_json, write_text_atomic
from .paths import cache_dir, hf_cache_dirs

OFFLINE_ENV = "CTXMODELS_OFFLINE"
ALLOW_ENV = "CTXMODELS_ALLOW_DOWNLOADS"
ELMO_ENDPOINT_ENV = "CTXMODELS_ELMO_ENDPOINT"
# Where AllenNLP publishes its ELMo files (the host AllenNLP's own guides link to; the older path-style address
# https://s3-us-west-2.amazonaws.com/allennlp/models/elmo is the same bucket).
ELMO_ENDPOINT = "https://allennlp.s3.amazonaws.com/models/elmo"
CHUNK = 1 << 20
MANIFEST = "download.json"

#: ``ORG/NAME`` as the hub spells repository ids
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
# What an encoder needs from a hub repository; weights are chosen separately (safetensors first).
HUB_FILES = ["config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
             "added_tokens.json", "vocab.txt", "vocab.json", "merges.txt", "*.model", "README.md", "LICENSE*",
             "license*", "COPYING*"]
HUB_SAFETENSORS = ["model.safetensors", "model.safetensors.index.json", "model-*.safetensors"]
HUB_BIN = ["pytorch_model.bin", "pytorch_model.bin.index.json", "pytorch_model-*.bin"]

Progress = Callable[[int, "int | None"], None]


class DownloadError(CheckpointError):
    """A download that did not happen or did not give the expected file; the message says what to do."""


# ----------------------------------------------------------------------------------------------------------
# the switches


def _on(var: str) -> bool:
    return os.environ.get(var, "").strip().lower() in ("1", "true", "yes", "on")


def offline_reason(hub: bool = False) -> str | None:
    """Why nothing may be downloaded now ("CTXMODELS_OFFLINE=1 is set", …), or None. ``HF_HUB_OFFLINE`` counts
    for the Hugging Face hub only (``hub=True``); ``CTXMODELS_OFFLINE`` for every download."""
    if _on(OFFLINE_ENV):
        return f"{OFFLINE_ENV}=1 is set"
    if hub and _on("HF_HUB_OFFLINE"):
        return "HF_HUB_OFFLINE=1 is set"
    return None


def downloads_allowed(download: bool | None = None) -> bool:
    """Whether :func:`ctxmodels.load` may download a missing model: ``download=True``, or ``None`` (the default)
    with ``CTXMODELS_ALLOW_DOWNLOADS=1``. ``False`` never downloads, whatever the environment: the app passes it,
    because its downloads run in the background and never inside a page run. The offline switches are checked by
    the caller, per source."""
    if download is not None:
        return download
    return _on(ALLOW_ENV)


# ----------------------------------------------------------------------------------------------------------
# one file over HTTP(S), resumable, checked, renamed into place


@dataclass
class FileResult:
    path: Path
    size: int
    sha256: str
    checked: str  # "recorded" / "given" (the sum was compared) or "not recorded"
    resumed_from: int = 0


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def _total_from_content_range(value: str | None) -> int | None:
    m = re.fullmatch(r"bytes (?:(\d+)-(\d+)|\*)/(\d+)", (value or "").strip())
    return int(m.group(3)) if m else None


def _start_from_content_range(value: str | None) -> int | None:
    m = re.fullmatch(r"bytes (\d+)-\d+/(?:\d+|\*)", (value or "").strip())
    return int(m.group(1)) if m else None


class _Cut(Exception):
    """The transfer ended before the whole file arrived (the .part is kept for a resume)."""


def _fetch_once(url: str, part: Path, timeout: float, progress: Progress | None) -> int:
    """Append the rest of ``url`` to ``part`` (a Range request when part holds a beginning); the file's total size.
    _Cut when the connection ends early; DownloadError for an answer that is not the file."""
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"User-Agent": "ctxmodels"})
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        response = urllib.request.urlopen(request, timeout=timeout)  # noqa: S310 - http(s) only, checked by caller
    except urllib.error.HTTPError as e:
        if e.code == 416 and have:  # nothing after `have`: complete already, or a part longer than the file
            total = _total_from_content_range(e.headers.get("Content-Range"))
            e.close()
            if total == have:
                return total
            part.unlink(missing_ok=True)
            raise _Cut(f"the partial file was longer than the file on the server ({have} > {total} bytes)") from None
        e.close()
        raise DownloadError(f"{url}: the server answered {e.code} {e.reason}" + (
            "; the file is not (or no longer) published there: check the name, or set "
            f"{ELMO_ENDPOINT_ENV} to a mirror that has it" if e.code in (403, 404, 410) else "")) from None
    with response:
        if have and response.status == 206:
            start = _start_from_content_range(response.headers.get("Content-Range"))
            if start != have:
                part.unlink(missing_ok=True)
                raise _Cut(f"the server resumed at byte {start}, not {have}")
            total = _total_from_content_range(response.headers.get("Content-Range"))
            mode = "ab"
        else:  # a full answer (first request, or a server that ignores Range): start over
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            have, mode = 0, "wb"
        done = have
        if progress:
            progress(done, total)
        try:
            with open(part, mode) as f:
                while True:
                    block = response.read(CHUNK)
                    if not block:
                        break
                    f.write(block)
                    done += len(block)
                    if progress:
                        progress(done, total)
                f.flush()
                os.fsync(f.fileno())
        except (OSError, ValueError) as e:  # a reset or timed-out connection (a full disk is not a cut)
            if isinstance(e, OSError) and e.errno not in (None, errno.ECONNRESET, errno.ETIMEDOUT, errno.EPIPE):
                raise  # a full disk or a permission: not something a resume mends
            raise _Cut(f"the connection broke after {done} bytes ({type(e).__name__})") from None
        except Exception as e:  # http.client.IncompleteRead and kin
            raise _Cut(f"the connection broke after {done} bytes ({type(e).__name__})") from None
    if total is not None and done < total:
        raise _Cut(f"the connection ended after {done} of {total} bytes")
    if total is not None and done > total:
        part.unlink(missing_ok=True)
        raise DownloadError(f"{url}: the server sent {done} bytes for a file of {total}; nothing was kept")
    return done


def download_file(url: str, dest: Path, *, sha256: str | None = None, given: bool = False,
                  check: Callable[[Path], None] | None = None, progress: Progress | None = None,
                  attempts: int = 3, timeout: float = 60.0) -> FileResult:
    """Download ``url`` to ``dest`` through ``dest.part`` (resumed with HTTP Range, up to ``attempts`` tries), check
    its length, its SHA-256 (when ``sha256`` is given; ``given`` says it came from the user, not the registry) and
    ``check(part)`` (raises CheckpointError), then rename it to ``dest`` in one step. DownloadError otherwise."""
    if not url.startswith(("http://", "https://")):
        raise DownloadError(f"{url}: only http(s) addresses are downloaded")
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    resumed_from = part.stat().st_size if part.exists() else 0
    last = ""
    for _ in range(max(1, attempts)):
        try:
            size = _fetch_once(url, part, timeout, progress)
            break
        except _Cut as e:
            last = str(e)
        except urllib.error.URLError as e:
            reason = getattr(e, "reason", e)
            raise DownloadError(f"cannot reach {url} ({reason}): no network here? Download it where there is one "
                                f"(`ctxmodels get`) and copy {dest.parent} to the same place on this machine") \
                from None
        except TimeoutError:
            last = f"no answer within {timeout:g} s"
    else:
        kept = part.stat().st_size if part.exists() else 0
        raise DownloadError(f"{url}: the transfer broke off ({last}); {kept} bytes are kept in {part}: run the same "
                            "command again to resume")
    digest = sha256_of(part)
    if sha256 and digest != sha256.lower():
        part.unlink(missing_ok=True)
        source = "the --sha256 you gave" if given else "the sum recorded for this file"
        raise DownloadError(f"{url}: SHA-256 {digest} does not match {source} ({sha256.lower()}); the file was "
                            "deleted. Try again later or from another network; if it persists, the published file "
                            "has changed")
    if check is not None:
        try:
            check(part)
        except CheckpointError as e:
            part.unlink(missing_ok=True)
            raise DownloadError(f"{url}: the downloaded file is not what was expected ({e}); it was deleted") from None
    os.replace(part, dest)  # the whole, checked file appears under its name in one step
    return FileResult(dest, size, digest, ("given" if given else "recorded") if sha256 else "not recorded",
                      resumed_from)


def tqdm_progress(desc: str) -> tuple[Progress, Callable[[], None]]:
    """A progress callback drawing a tqdm bar (bytes), and the function that closes the bar."""
    from tqdm import tqdm

    bars: list[Any] = []  # made at the first answer, so a refused connection leaves no empty bar behind

    def update(done: int, total: int | None) -> None:
        if not bars:
            bars.append(tqdm(desc=desc, total=total, initial=done, unit="B", unit_scale=True, unit_divisor=1024))
        bar = bars[0]
        if total is not None and bar.total != total:
            bar.total = total
            bar.refresh()
        bar.update(done - bar.n)
        if total is not None and done >= total:
            bar.close()  # this file is whole: its line stays, the next file's bar goes below it

    return update, lambda: bars and bars[0].close()


# ----------------------------------------------------------------------------------------------------------
# the published AllenNLP ELMos


@dataclass(frozen=True)
class ElmoRelease:
    """One published ELMo: where its two files are and what they must hold.

    The architecture comes from the release's name (AllenNLP names a model ``LAYERSxLSTM_PROJECTION_FILTERScnn_
    HIGHWAYxhighway``) and from the table on https://allennlp.org/elmo ("Pre-trained ELMo Models": parameters in
    millions, LSTM hidden/output size, highway layers). No SHA-256 sums of these files are published next to them,
    and none could be found recorded anywhere we could check, so none is recorded here (``None``): ``ctxmodels get``
    then checks the length, the options and the weights' shapes, prints the sums it computed, and
    ``--sha256`` pins one."""

    name: str
    folder: str  # under the endpoint
    n_layers: int
    lstm_dim: int
    projection_dim: int
    cnn_filters: int  # the character CNN's filters, summed over widths
    n_highway: int
    parameters_millions: float | None  # allennlp.org/elmo, as rounded there
    options_sha256: str | None = None
    weights_sha256: str | None = None
    description: str = ""

    @property
    def options_file(self) -> str:
        return f"elmo_{self.folder}_options.json"

    @property
    def weights_file(self) -> str:
        return f"elmo_{self.folder}_weights.hdf5"


ELMO_RELEASES: dict[str, ElmoRelease] = {r.name: r for r in (
    ElmoRelease("elmo-small", "2x1024_128_2048cnn_1xhighway", 2, 1024, 128, 2048, 1, 13.6,
                description="ELMo small: 1 Billion Word Benchmark, 1024/128, 1 highway layer"),
    ElmoRelease("elmo-medium", "2x2048_256_2048cnn_1xhighway", 2, 2048, 256, 2048, 1, 28.0,
                description="ELMo medium: 1 Billion Word Benchmark, 2048/256, 1 highway layer"),
    ElmoRelease("elmo-original", "2x4096_512_2048cnn_2xhighway", 2, 4096, 512, 2048, 2, 93.6,
                description="ELMo original: 1 Billion Word Benchmark, 4096/512, 2 highway layers"),
    ElmoRelease("elmo-original-5.5b", "2x4096_512_2048cnn_2xhighway_5.5B", 2, 4096, 512, 2048, 2, 93.6,
                description="ELMo original (5.5B): Wikipedia and WMT 2008-2012 news, 5.5B tokens; 4096/512"),
)}


def elmo_endpoint() -> str:
    return (os.environ.get(ELMO_ENDPOINT_ENV) or ELMO_ENDPOINT).rstrip("/")


def elmo_folder(name: str) -> Path:
    """Where ``get elmo-…`` puts a release: ``$CTXMODELS_CACHE/models/NAME``."""
    return cache_dir() / "models" / name


def elmo_cached(name: str) -> Path | None:
    """The folder of a downloaded release when both of its files are there (whole: they are renamed into place
    only when checked), else None."""
    release = ELMO_RELEASES.get(name)
    if release is None:
        return None
    folder = elmo_folder(name)
    if (folder / release.options_file).is_file() and (folder / release.weights_file).is_file():
        return folder
    return None


def cached_elmos() -> list[dict[str, str]]:
    """``{"name", "path"}`` of every downloaded release (for model lists)."""
    return [{"name": n, "path": str(p)} for n in ELMO_RELEASES if (p := elmo_cached(n)) is not None]


def check_options(path: Path, release: ElmoRelease) -> None:
    """CheckpointError unless ``path`` is the options.json of ``release`` (its LSTM and character CNN)."""
    try:
        options = json.loads(path.read_text(encoding="utf-8"))
        lstm, cnn = options["lstm"], options["char_cnn"]
        found = {"lstm.n_layers": lstm.get("n_layers"), "lstm.dim": lstm.get("dim"),
                 "lstm.projection_dim": lstm.get("projection_dim"), "char_cnn.n_highway": cnn.get("n_highway"),
                 "char_cnn.filters (summed)": sum(int(n) for _, n in cnn["filters"])}
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise CheckpointError(f"not an ELMo options file ({type(e).__name__}: {str(e)[:120]})") from None
    want = {"lstm.n_layers": release.n_layers, "lstm.dim": release.lstm_dim,
            "lstm.projection_dim": release.projection_dim, "char_cnn.n_highway": release.n_highway,
            "char_cnn.filters (summed)": release.cnn_filters}
    wrong = [f"{k} {found[k]!r} (expected {v})" for k, v in want.items() if found[k] != v]
    if wrong:
        raise CheckpointError(f"options of another model: {', '.join(wrong)}")


def check_weights_hdf5(path: Path, release: ElmoRelease) -> int:
    """The number of weights in an ELMo .hdf5; CheckpointError unless it opens, has the bilm-tf groups and (when the
    release's size is published) about the published number of parameters."""
    import h5py

    try:
        with h5py.File(path, "r") as f:
            missing = [g for g in ("char_embed", "CNN", "RNN_0", "RNN_1") if g not in f]
            sizes: list[int] = []
            f.visititems(lambda _, obj: sizes.append(obj.size) if isinstance(obj, h5py.Dataset) else None)
    except Exception as e:  # noqa: BLE001 - h5py reports a damaged file in many types
        raise CheckpointError(f"not a readable HDF5 file ({type(e).__name__}: {' '.join(str(e).split())[:120]})") \
            from None
    if missing:
        raise CheckpointError(f"not ELMo weights (no {', '.join(missing)})")
    n = int(sum(sizes))
    if release.parameters_millions is not None:
        # The published figure is rounded to 0.1 M; 2 % also covers how one counts the character table.
        if abs(n / 1e6 - release.parameters_millions) > 0.02 * release.parameters_millions:
            raise CheckpointError(f"{n:,} weights ({n / 1e6:.3g} M), but {release.name} has "
                                  f"{release.parameters_millions:g} M")
    return n


def get_elmo(name: str, *, weights_sha256: str | None = None, progress: Callable[[str], Progress] | None = None,
             attempts: int = 3, timeout: float = 60.0, report: Callable[[str], None] | None = None) -> Path:
    """Download the published ELMo ``name`` into :func:`elmo_folder` (nothing when it is there already) and return
    the folder. ``weights_sha256`` pins the weights file's sum (``ctxmodels get --sha256``); ``progress(file)``
    gives a callback per file; ``report`` receives lines for the person waiting (sums, what was checked)."""
    release = ELMO_RELEASES.get(name)
    if release is None:
        raise DownloadError(f"no published ELMo called {name!r}; the names are {', '.join(ELMO_RELEASES)}")
    say = report or (lambda _line: None)
    folder = elmo_folder(name)
    if elmo_cached(name) is not None and weights_sha256 is None:
        say(f"{name} is already in {folder}")
        return folder
    reason = offline_reason()
    if reason:
        raise DownloadError(f"{name} is not downloaded and downloads are off ({reason}); where there is a network, "
                            f"run `ctxmodels get {name}` and copy the folder {folder} to the same place here")
    base = f"{elmo_endpoint()}/{release.folder}"
    folder.mkdir(parents=True, exist_ok=True)
    with _only_writer(folder, name):
        results = _get_elmo_files(release, folder, base, weights_sha256, progress, attempts, timeout)
    for r in results:
        note = {"recorded": "matches the recorded SHA-256", "given": "matches the --sha256 given",
                "kept": "was already here"}.get(r.checked, "no SHA-256 is recorded for this file: pin this one "
                                                           "with --sha256 after checking it")
        say(f"{r.path.name}: {r.size:,} bytes, sha256 {r.sha256} ({note})")
    return folder


@contextmanager
def _only_writer(folder: Path, name: str) -> Iterator[None]:
    """Hold the folder for one download at a time (two processes appending to one .part would garble it)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock, as before
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise DownloadError(f"another download of {name} into {folder} is running; wait for it to end") from None
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _get_elmo_files(release: ElmoRelease, folder: Path, base: str, weights_sha256: str | None,
                    progress: Callable[[str], Progress] | None, attempts: int, timeout: float) -> list[FileResult]:
    results = []
    for file, recorded, check in (
            (release.options_file, release.options_sha256, lambda p: check_options(p, release)),
            (release.weights_file, weights_sha256 or release.weights_sha256,
             lambda p: check_weights_hdf5(p, release))):
        dest = folder / file
        given = file == release.weights_file and weights_sha256 is not None
        if dest.is_file() and not given:
            results.append(FileResult(dest, dest.stat().st_size, sha256_of(dest), "kept"))
            continue
        if dest.is_file():  # a pinned sum for a file we already have: check it in place
            digest = sha256_of(dest)
            if digest != weights_sha256.lower():  # type: ignore[union-attr]
                raise DownloadError(f"{dest}: SHA-256 {digest} does not match the --sha256 you gave "
                                    f"({weights_sha256}); delete the folder {folder} and download again")
            results.append(FileResult(dest, dest.stat().st_size, digest, "given"))
            continue
        callback = progress(file) if progress else None
        results.append(download_file(f"{base}/{file}", dest, sha256=recorded, given=given, check=check,
                                     progress=callback, attempts=attempts, timeout=timeout))
    _write_manifest(folder, release, base, results)
    return results


def _write_manifest(folder: Path, release: ElmoRelease, base: str, results: list[FileResult]) -> None:
    files = {r.path.name: {"size": r.size, "sha256": r.sha256, "sha256_checked": r.checked} for r in results}
    write_json(folder / MANIFEST, {"name": release.name, "source": base, "files": files,
                                   "downloaded": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    lines = [f"# {release.name}", "", release.description + ".", "",
             f"Published by AllenNLP (https://allennlp.org/elmo), downloaded from {base}/ by `ctxmodels get "
             f"{release.name}`.", "", "| file | bytes | sha256 |", "|---|---|---|"]
    lines += [f"| {n} | {f['size']:,} | `{f['sha256']}` ({f['sha256_checked']}) |" for n, f in files.items()]
    write_text_atomic(folder / "README.md", "\n".join(lines) + "\n")


# ----------------------------------------------------------------------------------------------------------
# Hugging Face hub encoders


def _has_weights(folder: Path) -> bool:
    return any(folder.glob("*.safetensors")) or any(folder.glob("pytorch_model*.bin"))


def get_hub(name: str, revision: str | None = None, *, tqdm_class: Any = None) -> Path:
    """Download the encoder ``ORG/NAME`` (at ``revision``) into the Hugging Face cache with
    ``huggingface_hub.snapshot_download`` and return its snapshot folder. Only the files an encoder needs
    (:data:`HUB_FILES`), with safetensors weights when the repository has them, else ``pytorch_model.bin``.
    ``tqdm_class`` is handed to ``snapshot_download`` for its progress bars."""
    if not isinstance(name, str) or not HUB_ID.fullmatch(name.strip()):
        raise DownloadError(f"{str(name)[:100]!r} is not a Hugging Face model id; write it as ORG/NAME, e.g. "
                            "bert-base-uncased's google-bert/bert-base-uncased")
    name = name.strip()
    reason = offline_reason(hub=True)
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import (
            GatedRepoError,
            HfHubHTTPError,
            LocalEntryNotFoundError,
            RepositoryNotFoundError,
            RevisionNotFoundError,
        )
    except ImportError:
        raise DownloadError("downloading from the Hugging Face hub needs the huggingface_hub package: "
                            "pip install huggingface_hub") from None
    cache = hf_cache_dirs()[0]  # where hf_cached() looks first, whatever huggingface_hub read at import time

    # HF_ENDPOINT read now, not when huggingface_hub was imported: a mirror set later (or by a test) counts too
    endpoint = os.environ.get("HF_ENDPOINT") or None

    def fetch(weights: list[str], local: bool = False) -> Path:
        return Path(snapshot_download(name, revision=revision, cache_dir=cache, allow_patterns=HUB_FILES + weights,
                                      tqdm_class=tqdm_class, endpoint=endpoint, local_files_only=local))

    if reason:  # nothing leaves this machine; a model already in the cache is still "got"
        try:
            snapshot = fetch(HUB_SAFETENSORS, local=True)
            if _has_weights(snapshot):
                return snapshot
        except Exception:  # noqa: BLE001, S110 - not cached (or half): the message below says what to do
            pass
        raise DownloadError(f"cannot download {name}: downloads are off ({reason}); where there is a network, run "
                            f"`ctxmodels get {name}` and copy its folder models--{name.replace('/', '--')} into "
                            f"the Hugging Face cache here ({cache})")
    try:
        snapshot = fetch(HUB_SAFETENSORS)
        if not _has_weights(snapshot):  # an older repository: PyTorch weights only
            snapshot = fetch(HUB_BIN)
    except GatedRepoError:
        raise DownloadError(f"{name} is gated on the hub: accept its terms on huggingface.co and log in "
                            "(`hf auth login` or HF_TOKEN) first") from None
    except RepositoryNotFoundError:
        raise DownloadError(f"{name}: no such model on the Hugging Face hub (or it is private: set HF_TOKEN)") \
            from None
    except RevisionNotFoundError:
        raise DownloadError(f"{name}: no revision {revision!r} on the hub") from None
    except LocalEntryNotFoundError as e:  # no connection: huggingface_hub fell back to the cache and found nothing
        raise DownloadError(f"cannot download {name}: the hub cannot be reached ({' '.join(str(e).split())[:160]}). "
                            f"Where there is a network, run `ctxmodels get {name}` and copy its folder "
                            f"models--{name.replace('/', '--')} into the Hugging Face cache here ({cache})") from None
    except HfHubHTTPError as e:
        raise DownloadError(f"{name}: the hub answered {' '.join(str(e).split())[:200]}") from None
    except OSError as e:
        raise DownloadError(f"cannot download {name}: {e}") from None
    except Exception as e:  # noqa: BLE001 - an endpoint answering nonsense; the user gets one line, not a traceback
        raise DownloadError(f"cannot download {name}: the hub's answer could not be used ({type(e).__name__}: "
                            f"{' '.join(str(e).split())[:200]})") from None
    if not _has_weights(snapshot):
        raise DownloadError(f"{name}: the repository has no model.safetensors or pytorch_model.bin; it is not a "
                            "model ctxmodels can load")
    return snapshot


def get(name: str, revision: str | None = None, **kwargs: Any) -> Path:
    """:func:`get_elmo` for a release name, :func:`get_hub` for ``ORG/NAME``."""
    if name in ELMO_RELEASES:
        if revision is not None:
            raise DownloadError(f"{name} is an AllenNLP file, not a hub repository: it has no revisions")
        return get_elmo(name, **kwargs)
    return get_hub(name, revision, **{k: v for k, v in kwargs.items() if k == "tqdm_class"})
