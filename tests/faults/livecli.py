"""A `tpubench train` left running in the background, for fault tests."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time


def start(*args, env=None) -> subprocess.Popen:
    """`python -m tpubench ARGS` in the background, stdout and stderr piped as text."""
    full = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    full.update(env or {})
    return subprocess.Popen(
        [sys.executable, "-m", "tpubench", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=full,
    )


def wait_for(condition, proc: subprocess.Popen, timeout: float = 120.0):
    """Polls CONDITION() until it is true; fails if PROC ends first or TIMEOUT passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"ended ({proc.returncode}) first:\n{out}\n{err}")
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("timed out")


def running_record(results_dir) -> dict | None:
    """The `running` record in RESULTS_DIR, once there."""
    for path in sorted(pathlib.Path(results_dir).glob("*.json")):
        try:
            record = json.loads(path.read_text())
        except ValueError:
            continue
        if record.get("status") == "running":
            return record | {"_path": str(path)}
    return None


def finish(proc: subprocess.Popen, timeout: float = 120.0) -> subprocess.CompletedProcess:
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        proc.kill()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
