"""Issue 61, item 1: preemption-safe by default.

A train run checkpoints by time (--checkpoint_every, default 10m): a real
SIGKILL loses at most that interval, and the same command run again (no
--model_dir, as the README runs it) resumes from the newest checkpoint and
ends at the requested step.  The record says what checkpoints cost.
"""

import json
import pathlib
import signal
import time

import livecli
import pytest
from conftest import one_line_error, run_cli

INTERVAL = 2.0  # --checkpoint_every, shortened by its flag
SLACK = 4.0  # one loop, the save itself and the poll, on a busy 2-core machine
STEPS = 2500


def _indexes(results_dir) -> list[pathlib.Path]:
    return list(pathlib.Path(results_dir).glob("*/checkpoints/ckpt-*.index"))


def _records(results_dir) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(pathlib.Path(results_dir).glob("*.json"))]


@pytest.mark.slow
def test_sigkill_loses_at_most_the_interval_and_the_same_command_resumes(tmp_path):
    runs = tmp_path / "runs"
    argv = [
        "train",
        "--model=mnist_mlp",
        f"--train_steps={STEPS}",
        "--steps_per_loop=20",
        f"--checkpoint_every={INTERVAL:g}s",
    ]
    first = livecli.start(*argv, f"--results_dir={runs}")
    # Two periodic checkpoints (the manager keeps two): saves keep coming, not one.
    livecli.wait_for(lambda: len(_indexes(runs)) >= 2, first, timeout=240)
    time.sleep(INTERVAL)
    newest = max(_indexes(runs), key=lambda p: p.stat().st_mtime)
    first.send_signal(signal.SIGKILL)
    killed_at = time.time()
    first.communicate(timeout=60)
    assert first.returncode == -signal.SIGKILL
    newest = max(_indexes(runs), key=lambda p: p.stat().st_mtime)
    age = killed_at - newest.stat().st_mtime
    assert age <= INTERVAL + SLACK, f"newest checkpoint {newest.name} was {age:.1f} s old"
    saved_step = int(newest.name.split("-")[1].split(".")[0])
    assert 0 < saved_step < STEPS
    (killed,) = _records(runs)
    assert killed["status"] == "running"  # what a kill -9 leaves

    proc, record = run_cli(*argv, results_dir=runs, timeout=300)  # the very same command
    assert proc.returncode == 0, proc.stderr
    assert f"run {killed['run_id']} of this command was killed; resuming" in proc.stderr
    assert record["status"] == "ok"
    assert record["resumes_run"] == killed["run_id"]
    assert record["resumed_from_step"] == saved_step
    assert record["results"]["final_step"] == STEPS
    assert record["config"]["model_dir"] == killed["config"]["model_dir"]
    ckpt = record["checkpoints"]
    assert ckpt["every_seconds"] == INTERVAL and ckpt["saved"] >= 1
    assert ckpt["seconds"] > 0 and ckpt["in_throughput"] is False

    # Finished: the same command again is a new run from step 0, not "nothing to train".
    again, fresh = run_cli(*argv, results_dir=runs, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "resuming" not in again.stderr and "resumed_from_step" not in fresh


def test_a_short_run_records_its_checkpoints_and_the_default_interval(tmp_path):
    """The smoke-sized variant: the default cadence and the final save's cost in the record."""
    proc, record = run_cli(
        "train", "--model=mnist_mlp", "--tiny", "--use_synthetic_data", "--train_steps=6",
        results_dir=tmp_path / "runs",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    ckpt = record["checkpoints"]
    assert ckpt["every_seconds"] == 600.0 and ckpt["every_steps"] is None
    assert ckpt["saved"] == 1 and ckpt["last_step"] == 6 and ckpt["in_throughput"] is False


@pytest.mark.parametrize(
    "value, shown",
    [
        ("soon", "--checkpoint_every='soon' is not a duration; accepted: e.g. 10m, 30s, 1h"),
        ("200ms", "--checkpoint_every=200ms is shorter than 1 s; accepted: 1s to 7d, or 0/off"),
        ("8d", "--checkpoint_every=691,200s is out of range; accepted: a duration of at most 7d"),
    ],
)
def test_a_bad_interval_is_one_line_before_anything_runs(tmp_path, value, shown):
    proc, record = run_cli(
        "train", f"--checkpoint_every={value}", results_dir=tmp_path / "r", timeout=60
    )
    line = one_line_error(proc)
    assert proc.returncode == 2 and shown in line, line
    assert record is None and not (tmp_path / "r").exists()
