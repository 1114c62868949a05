"""The compact SemCor + WordNet copy shipped in ``assets/semcor``, so the app names senses without the shared data.

``python -m ctxmodels.release.semcor_copy SRC_DATA_DIR DEST_DIR`` reads ``SRC_DATA_DIR/semcor/sentences.tsv``,
``tags.tsv`` and ``SRC_DATA_DIR/wordnet/senses.tsv`` (plain or gzipped) and writes to ``DEST_DIR``:

* ``sentences.tsv.gz`` and ``tags.tsv.gz``: the shared tables byte for byte, gzipped. Keeping every byte makes the
  copy read exactly like the shared folder, and its text sizes (in the gzip trailers) match the shared files', so
  the probe results cached beside the shipped models are found with either.
* ``senses.tsv.gz``: the rows of the senses table whose sense key SemCor uses, unchanged, header first.
* ``LICENSE``: the WordNet 3.0 licence, copied verbatim (its terms require the notice on every copy).
* ``README.md``: credits, sources, how the copy was made and its sizes.

The output is deterministic: gzip members are written by hand with a zero timestamp, no file name and a fixed
header, so running it again on the same data gives identical bytes (with the same zlib version).
"""

from __future__ import annotations

import hashlib
import shutil
import struct
import sys
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..checkpoint import atomic_file, write_bytes_to, write_text_atomic
from ..semcor import SemCor, SemcorError, table_file
from ..wordnet import COLUMNS, WordnetError, read_senses

USAGE = "usage: python -m ctxmodels.release.semcor_copy SRC_DATA_DIR DEST_DIR"


@dataclass(frozen=True)
class CopiedFile:
    name: str
    size: int           # bytes on disk
    text_size: int      # bytes of the table's text (uncompressed)
    rows: int           # data lines, header left out
    sha256: str


def gzip_bytes(data: bytes) -> bytes:
    """One gzip member holding ``data``, the same bytes on every run and every Python version.

    ``gzip.compress`` is not used because its header changed between Python versions (3.11 lets zlib write it,
    with the operating system's byte); here the header is fixed: no timestamp, no name, OS "unknown".
    """
    c = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS, 9)
    body = c.compress(data) + c.flush()
    header = b"\x1f\x8b\x08\x00" + b"\x00\x00\x00\x00" + b"\x02\xff"   # deflate, no flags, mtime 0, max level
    return header + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)


def _read_text_bytes(path: Path) -> bytes:
    import gzip

    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def _write(path: Path, data: bytes) -> None:
    with atomic_file(path, size=len(data)) as tmp, open(tmp, "wb") as f:
        write_bytes_to(f, data)


def _rows(text: bytes) -> int:
    lines = [ln for ln in text.split(b"\n")[1:] if ln.strip()]   # the first line is the header
    return len(lines)


def _sense_rows(senses_text: bytes, used: set[str]) -> bytes:
    """The header and the rows whose sense key is in ``used``, as they are (line endings included)."""
    lines = senses_text.splitlines(keepends=True)
    if not lines or not lines[0].startswith(COLUMNS[0].encode()):
        raise WordnetError("the senses table has no header line starting with 'sense_key'")
    kept = [lines[0]] + [ln for ln in lines[1:] if ln.split(b"\t", 1)[0].decode("utf-8") in used]
    return b"".join(kept)


def make_semcor_copy(src_data_dir: str | Path, dest: str | Path,
                     log: Callable[[str], None] = print) -> list[CopiedFile]:
    """Write the compact copy of ``src_data_dir``'s SemCor and WordNet senses into ``dest`` (made if needed; the
    five files are replaced, nothing else there is touched). Returns what was written, the README last."""
    src, dest = Path(src_data_dir), Path(dest)
    semcor_dir, wordnet_dir = src / "semcor", src / "wordnet"
    licence = wordnet_dir / "LICENSE"
    if not licence.is_file():
        raise WordnetError(f"{licence}: file not found; the WordNet licence has to travel with any copy of its data")

    # Read through the project's readers first: a malformed source fails here, before anything is written.
    log(f"reading {semcor_dir} ...")
    semcor = SemCor.load(semcor_dir)
    senses_path = table_file(wordnet_dir, "senses")
    senses = read_senses(senses_path)
    used = {key for s in semcor.sentences for tag in s.tags.values() for key in tag.sense_keys}

    tables = {
        "sentences.tsv.gz": _read_text_bytes(table_file(semcor_dir, "sentences")),
        "tags.tsv.gz": _read_text_bytes(table_file(semcor_dir, "tags")),
        "senses.tsv.gz": _sense_rows(_read_text_bytes(senses_path), used),
    }
    written: list[CopiedFile] = []
    for name, text in tables.items():
        packed = gzip_bytes(text)
        _write(dest / name, packed)
        written.append(CopiedFile(name, len(packed), len(text), _rows(text), hashlib.sha256(packed).hexdigest()))
        log(f"  {dest / name}: {len(text):,} bytes of text -> {len(packed):,}")
    with atomic_file(dest / "LICENSE") as tmp:
        shutil.copyfile(licence, tmp)
    lic = (dest / "LICENSE").read_bytes()
    written.append(CopiedFile("LICENSE", len(lic), len(lic), 0, hashlib.sha256(lic).hexdigest()))

    # The copy must read back as what it was made from.
    again = SemCor.load(dest)
    if [(s.uid, s.tokens, sorted(s.tags)) for s in again.sentences] != \
            [(s.uid, s.tokens, sorted(s.tags)) for s in semcor.sentences]:
        raise SemcorError(f"{dest}: the copy does not read back as {semcor_dir}")
    copied_senses = read_senses(dest / "senses.tsv.gz")
    if copied_senses != {k: v for k, v in senses.items() if k in used}:
        raise WordnetError(f"{dest}: the senses copy does not read back as {senses_path}")

    n_tags = sum(len(s.tags) for s in semcor.sentences)
    readme = readme_text(written, n_sentences=len(semcor), n_tags=n_tags, n_keys=len(used),
                         n_senses=len(copied_senses), n_all_senses=len(senses))
    write_text_atomic(dest / "README.md", readme)
    data = readme.encode("utf-8")
    written.append(CopiedFile("README.md", len(data), len(data), 0, hashlib.sha256(data).hexdigest()))
    total = sum(f.size for f in written)
    log(f"wrote {dest}: {total:,} bytes in {len(written)} files")
    return written


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


def readme_text(files: Sequence[CopiedFile], n_sentences: int, n_tags: int, n_keys: int, n_senses: int,
                n_all_senses: int) -> str:
    by = {f.name: f for f in files}
    table = "\n".join(
        f"| `{f.name}` | {_mb(f.size)} | {_mb(f.text_size)} | {f.rows:,} | `{f.sha256[:16]}` |"
        for f in files if f.name.endswith(".gz"))
    total = sum(f.size for f in files if f.name.endswith(".gz")) + by["LICENSE"].size
    dropped = n_all_senses - n_senses
    senses_note = ("every row of the shared table (all its sense keys occur in SemCor)" if dropped == 0 else
                   f"the rows whose sense key occurs in `tags.tsv` ({dropped:,} other rows left out)")
    return f"""# SemCor 3.0 and WordNet 3.0 glosses (compact copy)

Sense-tagged English sentences and the WordNet glosses that name their senses, shipped so that the explorer
and `ctxmodels.analysis.sources` work without the shared data folder. When the shared data is present
(`$CTXMODELS_DATA`, by default `../shared/data`) it is read instead; both give the same sentences, tags and
glosses.

**Credit.** SemCor 3.0 (the Princeton semantic concordance, its sense tags in WordNet 3.0) and WordNet 3.0 are
by Princeton University: "WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved." They are
distributed under the WordNet 3.0 licence, copied verbatim in [`LICENSE`](LICENSE); its notice must accompany
every copy of these files, modified ones included.

## Files

| file | size | text | rows | sha256 (first 16) |
|---|---|---|---|---|
{table}

{_mb(total)} with the licence. The tables are gzipped TSV files with the same columns and header lines as the
shared data's, so `ctxmodels.semcor` and `ctxmodels.wordnet` read both:

- `sentences.tsv.gz`: `sent_uid<TAB>tokens` — {n_sentences:,} sentences of the Brown corpus, tokens separated by
  spaces, multi-word expressions joined with `_`.
- `tags.tsv.gz`: `sent_uid, tok_idx, word, lemma, pos, sense_keys, synsets` — {n_tags:,} sense-tagged words
  (`tok_idx` counts the sentence's tokens from 0; WordNet 3.0 sense keys, `;`-separated).
- `senses.tsv.gz`: `sense_key, synset, lemmas, gloss, examples` — {n_senses:,} WordNet 3.0 senses, the synset's
  gloss and example phrases (` | `-separated), for {n_senses:,} of the {n_keys:,} distinct sense keys of `tags.tsv`
  (the rest are keys SemCor 3.0 spells differently from WordNet 3.0; the app shows those by their key).

## Where they come from

- SemCor: repository rubenIzquierdo/wsd_corpora at commit c31b9b8, folder `semcor3.0`, converted from NAF to the
  two tables of the project's shared data folder (`semcor/sentences.tsv`, `semcor/tags.tsv`).
- WordNet: Debian's packages wordnet-base and wordnet-sense-index 1:3.0-37 (`index.sense`, `data.*`), turned into
  the shared data's `wordnet/senses.tsv` (one row per sense key that occurs in SemCor).

## How this copy was made

```bash
python -m ctxmodels.release.semcor_copy ../shared/data assets/semcor   # also in assets/reproduce.sh
```

`sentences.tsv` and `tags.tsv` are the shared files byte for byte; `senses.tsv` keeps
{senses_note}, unchanged.
Each is gzipped at level 9 with a fixed header (no timestamp, no file name), so the command gives identical
bytes when run again on the same data. `LICENSE` is the shared data's `wordnet/LICENSE`, verbatim. The command
reads the copy back and checks it against the source before writing this file.
"""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in args):
        print(f"{USAGE}\n\nWrites the compact SemCor + WordNet copy (assets/semcor) from the shared data folder.")
        return 0
    if len(args) != 2:
        print(USAGE, file=sys.stderr)
        return 2
    try:
        make_semcor_copy(args[0], args[1])
    except (SemcorError, WordnetError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
