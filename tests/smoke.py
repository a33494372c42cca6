"""The smoke layer's rule and tools: every command a user can type runs end to end in `make test`.

Each test in tests/test_smoke*.py runs one command through the installed
console script (`tpubench`, `tpubench-launch`), the way a user types it,
with tiny models and steps, and asserts what the user sees: the exit code,
the key line of output, the record or file written.  Each declares what it
covers with `@covers(...)`; `test_smoke_runs.py::test_every_command_has_a_smoke_test`
fails when a subcommand, data or study action, infer scenario, launcher
verb, sweep executor or GKE engine has none.  So a new command gets its
smoke test, and a command whose entry breaks turns the default suite red.
Deeper tests may be slow; no command's only end-to-end test may be.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

BIN = pathlib.Path(sys.executable).parent
LAUNCH_DOUBLES = pathlib.Path(__file__).resolve().parent / "launch" / "bin"
COVERED: set[str] = set()


def covers(*commands: str):
    """Marks a smoke test as the end-to-end run of COMMANDS (see `expected`)."""

    def mark(fn):
        COVERED.update(commands)
        return fn

    return mark


def expected() -> set[str]:
    """Every command a user can type, from the lists the CLIs themselves read."""
    from tpubench.cli import data as data_cli
    from tpubench.cli import subcommands
    from tpubench.run.infer import scenarios
    from tpubench.study import api as study_api
    from tpubench_launch import cli as launch_cli
    from tpubench_launch import engines, executors

    names = {f"tpubench {s.name}" for s in subcommands.SUBCOMMANDS}
    names |= {f"tpubench data {a}" for a in data_cli.ACTIONS}
    names |= {f"tpubench study {a}" for a in study_api.ACTIONS}
    names |= {f"tpubench infer --scenario={s}" for s in scenarios.choices()}
    verbs = launch_cli.parser()._subparsers._group_actions[0].choices  # noqa: SLF001
    names |= {f"tpubench-launch {v}" for v in verbs}
    names |= {f"tpubench-launch sweep --executor={e}" for e in executors.REGISTRY.names()}
    names |= {f"tpubench-launch gke --engine={e}" for e in engines.REGISTRY.names()}
    return names


def run(program: str, *args, cwd, env=None, timeout: float = 180) -> subprocess.CompletedProcess:
    """PROGRAM (tpubench or tpubench-launch) from the environment's bin, as a user runs it."""
    exe = BIN / program
    assert exe.exists(), f"{exe} is missing: install the project (`make test` does)"
    full = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    full.update(env or {})
    return subprocess.run(
        [str(exe), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=full,
        timeout=timeout,
    )


def ok(proc: subprocess.CompletedProcess) -> str:
    """PROC's stdout, after checking it exited 0 and printed no traceback."""
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stdout


def records(results_dir) -> list[dict]:
    """The run records in RESULTS_DIR, oldest first (other JSON files there are not records)."""
    paths = sorted(pathlib.Path(results_dir).glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
    found = [json.loads(p.read_text()) | {"_path": str(p)} for p in paths]
    return [r for r in found if "run_id" in r and "kind" in r]


def record_line(stdout: str) -> pathlib.Path:
    """The record a command named on its `record: PATH` line."""
    line = next(x for x in stdout.splitlines() if x.startswith("record: "))
    return pathlib.Path(line.split()[1])
