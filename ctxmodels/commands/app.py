"""``ctxmodels app``: start the explorer app, from a checkout or from an installed wheel.

The wheel holds the app's files as package data (``ctxmodels/_explorer/app``, built from the repository's
``app/`` by ``setup.py``); a checkout runs its own ``app/``. Either way this starts
``python -m streamlit run .../app/Home.py`` with the server options of the repository's ``.streamlit/config.toml``
(:data:`SERVER_OPTIONS`: a wheel has no such file beside it, and Streamlit reads one only from the current folder
or the home folder) and the operator's options after ``--``, as ``app/kit/settings.py`` reads them. The core
never imports the app: this module only finds its script and starts a server on it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from ..paths import CHECKOUT
from . import bounded_int

# The server options of .streamlit/config.toml (tests/test_app_command.py checks they are the same): headless, no
# watching of source files (it doubled the server's time per visit), uploads up to 20 MB, no usage statistics.
SERVER_OPTIONS = {"server.headless": "true", "server.fileWatcherType": "none", "server.maxUploadSize": "20",
                  "browser.gatherUsageStats": "false", "client.toolbarMode": "minimal"}


def app_script() -> Path:
    """The app's entry script: the installed copy in the wheel, else the checkout's ``app/Home.py``."""
    installed = Path(__file__).resolve().parents[1] / "_explorer" / "app" / "Home.py"
    return installed if installed.is_file() else CHECKOUT / "app" / "Home.py"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--models", nargs="*", default=[], metavar="MODEL",
                   help="extra models: folders, shipped names or hub ids (as CTXMODELS_APP_MODELS)")
    p.add_argument("--corpus", nargs="*", default=[], metavar="FILE",
                   help="plain-text corpora the Word senses page may search (as CTXMODELS_APP_CORPORA)")
    for flag, what in (("--allow-paths", "load a model from a server path or cache"),
                       ("--allow-uploads", "train on an uploaded text file"),
                       ("--allow-training", "start training a small model"),
                       ("--allow-downloads", "download a published model")):
        p.add_argument(flag, action="store_true", help=f"the Models page may {what} (off by default)")
    p.add_argument("--heavy-per-session", type=bounded_int(1, 16), default=None, metavar="N",
                   help="heavy computations one visitor may run at once (default 1)")
    p.add_argument("--assets", default=None, metavar="DIR",
                   help="the folder of the shipped models and example sets (sets CTXMODELS_ASSETS; a wheel holds "
                        "no models: point it at a checkout's assets/ or a copy of it)")
    p.add_argument("--port", type=bounded_int(1, 65535), default=None,
                   help="the port to serve on (default: Streamlit's, 8501)")
    p.add_argument("--address", default=None, help="the address to serve on (default: every interface)")


def command(args: argparse.Namespace) -> list[str]:
    """The server's command line for ``args``."""
    cmd = [sys.executable, "-m", "streamlit", "run", str(app_script())]
    options = dict(SERVER_OPTIONS)
    if args.port is not None:
        options["server.port"] = str(args.port)
    if args.address:
        options["server.address"] = args.address
    cmd += [f"--{name}={value}" for name, value in options.items()]
    operator: list[str] = []
    for flag, values in (("--models", args.models), ("--corpus", args.corpus)):
        if values:
            operator += [flag, *values]
    for flag in ("allow_paths", "allow_uploads", "allow_training", "allow_downloads"):
        if getattr(args, flag):
            operator.append("--" + flag.replace("_", "-"))
    if args.heavy_per_session is not None:
        operator += ["--heavy-per-session", str(args.heavy_per_session)]
    return cmd + (["--", *operator] if operator else [])


def run(args: argparse.Namespace) -> int:
    script = app_script()
    if not script.is_file():
        raise FileNotFoundError(f"the app's script is not at {script}: reinstall ctxmodels from a wheel or a checkout")
    env = dict(os.environ)
    if args.assets:
        assets = Path(args.assets).expanduser().resolve()
        if not assets.is_dir():
            raise FileNotFoundError(f"--assets: no folder at {assets}")
        env["CTXMODELS_ASSETS"] = str(assets)
    cmd = command(args)
    if os.name == "posix":  # the server takes this process's place: a signal to it (Ctrl-C, kill) reaches Streamlit
        os.execve(cmd[0], cmd, env)
    try:
        return subprocess.call(cmd, env=env)
    except KeyboardInterrupt:
        return 0
