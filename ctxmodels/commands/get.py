"""``ctxmodels get``: download a published model once, so that its name loads offline from then on."""

from __future__ import annotations

import argparse
import re
import sys

from ..download import ELMO_RELEASES, DownloadError, elmo_folder, get_elmo, get_hub, tqdm_progress


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="a Hugging Face model id ORG/NAME (into the Hugging Face cache) or a published "
                                f"AllenNLP ELMo: {', '.join(ELMO_RELEASES)} (into $CTXMODELS_CACHE/models/)")
    p.add_argument("--revision", default=None,
                   help="a hub model's branch, tag or commit (default: main); not for the ELMo files")
    p.add_argument("--sha256", default=None, metavar="HEX",
                   help="the SHA-256 the ELMo weights file must have (no sums are recorded for the published "
                        "files: pin the one printed by a download you trust)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    name = args.name.strip()
    if name in ELMO_RELEASES:
        if args.revision is not None:
            raise ValueError(f"--revision is for Hugging Face models; {name} is a published AllenNLP file")
        sha = args.sha256.strip().lower() if args.sha256 else None
        if sha is not None and not re.fullmatch(r"[0-9a-f]{64}", sha):
            raise ValueError(f"--sha256 must be 64 hexadecimal digits, got {args.sha256[:80]!r}")
        bars = []

        def progress(file: str):
            update, close = tqdm_progress(file)
            bars.append(close)
            return update

        try:
            folder = get_elmo(name, weights_sha256=sha, progress=None if args.no_progress else progress,
                              report=lambda line: print(line, file=sys.stderr))
        finally:
            for close in bars:
                close()
        print(folder)
        print(f"ctxmodels: {name} is in {folder}; `--model {name}` and ctxmodels.load({name!r}) read it offline",
              file=sys.stderr)
        return 0
    if args.sha256 is not None:
        raise ValueError("--sha256 is for the published ELMo files; a hub download is checked by huggingface_hub")
    if "/" not in name:
        raise DownloadError(f"{name!r} is neither a published ELMo ({', '.join(ELMO_RELEASES)}) nor a Hugging Face "
                            f"id ORG/NAME (ELMo files would go to {elmo_folder(name).parent})")
    tqdm_class = None
    if args.no_progress:
        from tqdm import tqdm

        class tqdm_class(tqdm):  # noqa: N801 - the name snapshot_download expects to construct
            def __init__(self, *a, **kw):
                kw["disable"] = True
                super().__init__(*a, **kw)

    snapshot = get_hub(name, args.revision, tqdm_class=tqdm_class)
    print(snapshot)
    print(f"ctxmodels: {name} is in the Hugging Face cache; `--model {name}` and ctxmodels.load({name!r}) read it "
          "offline", file=sys.stderr)
    return 0
