"""Every `tpubench` and `tpubench-launch` command in README.md and docs/*.md works as written.

doc_commands.py finds them (code blocks, console `$` lines, inline code).  The cheap ones
run here, each in a fresh process in an empty directory, and must not import TensorFlow
(but LOADS_TENSORFLOW): prices, models, study list, dry runs and reports, runs and advise
over fixture records, and the refusals the docs show (with the exit code their sample
output shows).  Every other one (training, inference, tuning, a study run, anything on
gs:// or a cloud) is parsed with its own subcommand's flag definitions, read at run time,
and read into its config as the subcommand's main reads it first: an unknown flag, a bad
value or a missing required flag fails here.  Inline code in prose is checked for its flag
names only (prose writes `--machine=...`).  The whole test takes seconds.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import io
import json
import os
import pathlib
import subprocess
import sys

import pytest
from conftest import NO_TF_CLI

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import doc_commands  # noqa: E402

ROOT = doc_commands.ROOT
FIXTURES = ROOT / "tests" / "report" / "fixtures"
COMMANDS = doc_commands.every()

# Directories a tutorial's earlier train or infer commands fill (this test runs none of
# those): records of the same kind stand in.  "serving" is written by _serving() below.
FIXTURE_DIRS = {
    "runs/vcpus": FIXTURES / "threads",  # the 1- vs 2-thread sweep (README tour, reports.md)
    "runs": FIXTURES / "threads",  # `tpubench runs runs`: the default results directory
    "runs/serving": "serving",  # inference.md's LoadGen runs: a server record with its curve
    "runs/tune-mnist_mlp-5e48fb6c": "serving",  # tune.md's serving tune, its records
}
# Values a reader replaces (a loop's variable, a tutorial's bucket), for parsing.
VARIABLES = {"$threads": "1", "$batch": "128", "$BUCKET": "gs://my-bucket"}
# Words a reader replaces, or a file the reader (or an earlier command) writes: a command
# holding one is parsed, never run.
PLACEHOLDERS = ("$", "...", "RUN_ID", "IMAGE", "gs://", ".yaml", "lenet.py", "TRAIN_FLAGS")
# What a command reads that a cheap run cannot have: a data or model directory, LoadGen,
# SkyPilot files to import, two catalog snapshots to diff.
READS = ("--data_dir", "--model_dir", "--results_dir", "--scenario", "--flagfile", "import",
         " diff ")  # fmt: skip


def _runs_here(c: doc_commands.DocCommand) -> bool:
    """Cheap, local, TensorFlow-free, and reading nothing but FIXTURE_DIRS."""
    if c.inline or c.program != "tpubench" or any(p in c.text for p in PLACEHOLDERS):
        return False
    args = [a for a in c.argv[1 + len(c.words) :] if not a.startswith("-")]
    if c.words == ("study", "run"):
        return "--dry-run" in c.argv and "--executor" not in c.text
    if c.words == ("study", "report"):  # a shipped study: its report of what is recorded
        return True
    if c.words in (("study", "list"), ("prices",), ("models",)):
        return not any(r in c.text for r in READS)
    if c.words in (("advise",), ("runs",)):
        return all(a in FIXTURE_DIRS for a in args)
    # the refusals the docs show, from the flags alone
    return (c.fails or c.exit_code is not None) and not args and not any(r in c.text for r in READS)


def _synopsis(c: doc_commands.DocCommand) -> bool:
    """A form, not a command: `tpubench SUBCOMMAND ...`, `[--dry-run]` (cli.md, studies.md)."""
    return (bool(c.words) and c.words[0].isupper()) or "[" in c.text


RUN = [c for c in COMMANDS if _runs_here(c)]


@pytest.fixture(scope="module")
def serving(tmp_path_factory):
    """A LoadGen server record of mnist_mlp with its latency-QPS curve (test_serving_curve)."""
    sys.path.insert(0, str(ROOT / "tests" / "report"))
    import test_serving_curve

    out = tmp_path_factory.mktemp("serving")
    (out / "server.json").write_text(json.dumps(test_serving_curve._record()))
    return out


def _argv(c: doc_commands.DocCommand, serving: pathlib.Path) -> list[str]:
    out = []
    for i, a in enumerate(c.argv[1:], 1):
        where = FIXTURE_DIRS.get(a) if i > len(c.words) else None
        out.append(str(serving if where == "serving" else where) if where else a)
    return out


# Refusals that come after TensorFlow loads (tune reads the model's spec first): run as
# `python -m tpubench`, since the in-process runner's exit 99 would hide their exit code.
LOADS_TENSORFLOW = {"tpubench tune --model=mnist_mlp --objective=serving"}


def _run(c, serving, cwd) -> tuple[doc_commands.DocCommand, subprocess.CompletedProcess]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TF_CONFIG")}
    runner = ["-m", "tpubench"] if c.text in LOADS_TENSORFLOW else ["-c", NO_TF_CLI]
    proc = subprocess.run(
        [sys.executable, *runner, *_argv(c, serving)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )
    return c, proc


def test_the_cheap_commands_run_as_written(serving, tmp_path):
    """Each in its own empty directory; the expected exit code is the docs' own."""
    assert len(RUN) >= 20, [c.text for c in RUN]
    unique = list({(c.argv, c.fails, c.exit_code): c for c in RUN}.values())
    dirs = [tmp_path / str(i) for i in range(len(unique))]
    for d in dirs:
        d.mkdir()
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        jobs = [pool.submit(_run, c, serving, d) for c, d in zip(unique, dirs, strict=True)]
        done = [j.result() for j in jobs]
    wrong = []
    for c, proc in done:
        if c.exit_code is not None:
            ok = proc.returncode == c.exit_code
        elif c.fails:
            ok = proc.returncode not in (0, 99) and ": error: " in proc.stderr
        else:
            ok = proc.returncode == 0
        if not ok:
            wrong.append(f"{c.where}: {c.text} -> exit {proc.returncode}: {proc.stderr[-500:]}")
    assert not wrong, "\n".join(wrong)


def _parsed(sub: str, argvs: list[list[str]]) -> dict:
    proc = subprocess.run(
        [sys.executable, str(pathlib.Path(__file__).parent / "parse_doc_flags.py"), sub],
        input=json.dumps(argvs),
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "TF_CONFIG"},
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _launch_parser() -> argparse.ArgumentParser:
    from tpubench_launch import cli

    return cli.parser()


def _own_and_passed(c: doc_commands.DocCommand) -> tuple[list[str], list[str]]:
    """(the words before `--`, the train flags after it), values a reader fills dropped."""
    words = [a for a in c.argv[1:] if a != "..."]
    for var, value in VARIABLES.items():
        words = [w.replace(var, value) for w in words]
    words = [w for w in words if not w.startswith("--flagfile=runs/")]  # made by a tune run
    if "--" not in words:
        return words, []
    cut = words.index("--")
    return words[:cut], words[cut + 1 :]


def _launch_error(argv: list[str]) -> str | None:
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            _launch_parser().parse_args(argv)
    except SystemExit:
        return err.getvalue().strip() or "refused"
    return None


# Files a tutorial writes a step before the command that reads them (docs/inference.md's
# printf), given here with what the tutorial writes into them.
WRITTEN_BY_THE_DOCS = {
    "user.conf": "# my server settings\n*.Server.target_qps = 20000\n"
    "mnist_mlp.Server.min_duration = 5000\n",
}


def test_every_other_command_parses_with_its_subcommands_flags(tmp_path):
    written = {}
    for name, text in WRITTEN_BY_THE_DOCS.items():
        (tmp_path / name).write_text(text)
        written[f"={name}"] = f"={tmp_path / name}"
    batches: dict[str, list] = {}
    wrong = []
    for c in COMMANDS:
        if c.inline or _synopsis(c):
            continue
        own, passed = _own_and_passed(c)
        for old, new in written.items():
            own = [w.replace(old, new) if w.endswith(old) else w for w in own]
        if c.program == "tpubench-launch":
            error = _launch_error(own)
            if error and not (c.fails or c.exit_code):
                wrong.append(f"{c.where}: {c.text}: {error}")
            if passed:
                batches.setdefault("train", []).append((c, passed))
            continue
        batches.setdefault(c.words[0], []).append((c, own[1:] if c.words[0] in own[:1] else own))
    for sub, items in batches.items():
        got = _parsed(sub, [argv for _, argv in items])
        for (c, _), error in zip(items, got["errors"], strict=True):
            if error and not (c.fails or c.exit_code):  # a refusal may come from its flags
                wrong.append(f"{c.where}: {c.text}: {error}")
    assert not wrong, "\n".join(wrong)
    assert {"train", "infer", "tune", "advise", "report", "study", "data"} <= set(batches)


def test_inline_commands_name_only_defined_flags():
    names: dict[str, set] = {}
    wrong = []
    launch = _launch_parser()._subparsers._group_actions[0].choices
    for c in COMMANDS:
        if not c.inline or _synopsis(c):
            continue
        if c.program == "tpubench-launch":
            known = {s for a in launch[c.words[0]]._actions for s in a.option_strings}
        else:
            if c.words[0] not in names:
                names[c.words[0]] = set(_parsed(c.words[0], [])["flags"])
            known = {f"--{n}" for n in names[c.words[0]]}
            known |= {f"--no{n}" for n in names[c.words[0]]}
        own, _ = _own_and_passed(c)
        for word in own:
            if word.startswith("--") and word.split("=")[0] not in known:
                wrong.append(f"{c.where}: {c.text}: {word.split('=')[0]} is not a flag of it")
    assert not wrong, "\n".join(wrong)


def test_the_finder_sees_every_kind_of_block():
    """Bash blocks, console `$` lines, untagged blocks and inline code all reach the checks."""
    where = {c.where.split(":")[0] for c in COMMANDS}
    assert {"README.md", "docs/studies.md", "docs/launch.md", "docs/cli.md"} <= where
    texts = {c.text for c in COMMANDS}
    assert "tpubench study run gpu_host_sizing --dry-run" in texts  # a console block
    assert any(c.inline for c in COMMANDS) and any(c.exit_code == 2 for c in COMMANDS)
    assert [c.text for c in COMMANDS if _synopsis(c)] == [
        "tpubench SUBCOMMAND [--flags] [ARGS]",
        "tpubench SUBCOMMAND --helpshort     # this subcommand's flags",
        "tpubench-launch SUBCOMMAND [options] [-- TRAIN_FLAGS...]",
        "tpubench-launch SUBCOMMAND --help",
        "tpubench study run NAME --executor=EXECUTOR --cloud=FILE.yaml [--scale=...] [--dry-run]",
    ]
