"""assets/reproduce.sh, the recipe of the shipped models and their cards: every ``ctxmodels`` command in it must be
one the command line takes (each option exists, each value is in range), so the recipe cannot rot while the CLI
changes, and every ``--resume`` continues a run that an earlier command of the script starts."""

from __future__ import annotations

import importlib
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from ctxmodels import cli
from ctxmodels.commands import COMMANDS

SCRIPT = Path(__file__).resolve().parents[1] / "assets" / "reproduce.sh"
#: the script's scalar variables, as a run with the defaults sets them
SCALARS = {"CLI": "ctxmodels", "CORPUS": "data/corpus/eltec-eng.txt", "DATA": "data", "RUNS": "runs",
           "WORKERS": "0", "end": "2733", "name": "elmo-eltec", "MEASURE": "ctxmodels quality"}
EMPTY_ARRAYS = {"BF16", "TOKENIZER"}  # on a CPU, and before the vocabulary exists


def logical_lines(text: str) -> list[str]:
    return [line.strip() for line in text.replace("\\\n", " ").splitlines()
            if line.strip() and not line.strip().startswith("#")]


def arrays(lines: list[str]) -> dict[str, str]:
    """NAME=(...) assignments, as the text the array expands to."""
    return {m[1]: m[2] for line in lines if (m := re.fullmatch(r"([A-Z_0-9]+)=\((.*)\)", line))}


def expand(command: str, arrays_: dict[str, str]) -> list[str]:
    command = re.sub(r"\$\{WORDNET:-([^}]*)\}", r"\1", command)
    for _ in range(3):  # arrays may name variables
        command = re.sub(r'"\$\{([A-Z_0-9]+)\[[@*]\]\}"|\$\{([A-Z_0-9]+)\[[@*]\]\}',
                         lambda m: "" if (m[1] or m[2]) in EMPTY_ARRAYS else arrays_[m[1] or m[2]], command)
    command = re.sub(r"\$\{?([A-Za-z_]+)\}?", lambda m: SCALARS[m[1]], command)
    return shlex.split(command)


def cli_commands() -> list[list[str]]:
    lines = logical_lines(SCRIPT.read_text(encoding="utf-8"))
    found = arrays(lines)
    commands = []
    for line in lines:
        if "$CLI " not in line:
            continue
        command = re.sub(r"\$\((resume_flag|\[ -f)[^)]*\)", "", line)  # --resume only where a run exists
        command = command[command.index("$CLI "):]
        if command.count(")") > command.count("("):  # the end of a ( ... ) & group
            command = re.sub(r"\)\s*&?\s*$", "", command)
        argv = expand(command, found)
        assert argv[0] == "ctxmodels", line
        commands.append(argv[1:])
    return commands


COMMANDS_IN_SCRIPT = cli_commands()


def test_the_script_trains_ships_and_measures_every_shipped_model():
    names = ("minilm-eltec", "bert-eltec", "elmo-eltec", "static-eltec")
    outs = {made(argv) for argv in COMMANDS_IN_SCRIPT} - {None}
    assert {f"runs/{name}" for name in names} <= outs
    cards = next(argv for argv in COMMANDS_IN_SCRIPT if argv[:2] == ["ship", "--cards"])
    assert [f"assets/{name}" for name in names] == cards[-4:]


def made(argv: list[str]) -> str | None:
    """The model folder a command writes: a training run, or an average of runs."""
    if argv[0] == "train":
        return argv[argv.index("--out") + 1]
    return argv[1] if argv[0] == "average" else None


def command_id(argv: list[str]) -> str:
    """``train elmo runs/elmo-eltec``: the command and, where it has one, its run."""
    return " ".join(argv[:2] + ([argv[argv.index("--out") + 1]] if "--out" in argv else []))


@pytest.mark.parametrize("argv", COMMANDS_IN_SCRIPT, ids=command_id)
def test_every_command_is_one_the_cli_takes(argv, monkeypatch, capsys):
    seen = []
    module = importlib.import_module(f"ctxmodels.commands.{COMMANDS[argv[0]][0]}")
    monkeypatch.setattr(module, "run", lambda args: seen.append(args) or 0)
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert seen, argv


def test_every_resume_continues_a_run_the_script_starts_and_every_start_is_made_first():
    started: set[str] = set()
    for argv in COMMANDS_IN_SCRIPT:
        if argv[0] == "average":  # an average is made of runs the script trains first
            assert all(model in started for model in argv[2:]), argv
            started.add(argv[1])
        if argv[0] != "train":
            continue
        out = argv[argv.index("--out") + 1]
        if "--resume" in argv:
            assert out in started, f"--resume of {out} before a command starts it"
            assert "--corpus" not in argv and "--init-from" not in argv  # the run's stored settings are used
        started.add(out)
        if "--init-from" in argv:
            start = argv[argv.index("--init-from") + 1]
            assert start == "minilm" or start in started, f"{out} starts from {start}, which nothing trains first"


def test_a_finished_run_is_left_alone_and_an_unfinished_one_resumed(tmp_path):
    """Run again after an interruption, the script skips the runs that took all their steps (resuming one of those
    with its own --steps is refused) and resumes the others."""
    text = SCRIPT.read_text(encoding="utf-8")
    helpers = text[text.index("resume_flag() {"):text.index("# On a GPU")]

    def ask(run: Path) -> str:
        script = f'{helpers}\nfinished "{run}" && echo finished || echo "unfinished $(resume_flag "{run}")"'
        done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHON": sys.executable})
        return done.stdout.strip()

    run = tmp_path / "run"
    assert ask(run) == "unfinished"  # not started: started afresh
    (run / "checkpoint").mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"settings": {"steps": 2000}}))
    (run / "checkpoint" / "trainer_state.pt").write_bytes(b"")
    (run / "checkpoint" / "train_config.json").write_text(json.dumps({"step": 750}))
    assert ask(run) == "unfinished --resume"
    (run / "checkpoint" / "train_config.json").write_text(json.dumps({"step": 2000}))
    assert ask(run) == "finished"


def test_every_run_is_skipped_once_it_has_taken_its_steps():
    """A training or fine-tuning command run again on its finished run is refused, and the script runs under
    ``set -e``: each one must be guarded by ``finished`` or by a ``reached`` check on its own run."""
    lines = logical_lines(SCRIPT.read_text(encoding="utf-8"))
    checked = 0
    for before, line in zip([""] + lines, lines):
        if not re.search(r"\$CLI (train|finetune) ", line):
            continue
        out = re.search(r'--out ("\$RUNS/[^"]+")', line)[1]
        guard = before + " " + line[:line.index("$CLI ")]
        assert f"finished {out}" in guard or f"reached {out}" in guard, f"{out} has no guard for a rerun: {line}"
        checked += 1
    assert checked == sum(argv[0] in ("train", "finetune") for argv in COMMANDS_IN_SCRIPT)
