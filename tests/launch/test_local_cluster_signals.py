"""SIGTERM/SIGINT to `tpubench-launch local-cluster` stop every task gracefully (issue 11, item 6).

Real clusters on localhost, real signals to the launcher once training has
started: every trainer checkpoints at the same step and exits by itself
(no SIGKILL), the launcher exits 130 with one line naming the step, the
record says interrupted, and the same command run again resumes there.
"""

import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import time

import pytest
from conftest import record_files

LAUNCH = [sys.executable, "-m", "tpubench_launch.main"]
GRACE = 30  # the launcher's SIGKILL comes this long after its SIGTERM


def _env():
    return {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}


def _command(tmp_path, topology, train_steps):
    return [
        *LAUNCH,
        "local-cluster",
        *topology,
        f"--log-dir={tmp_path / 'logs'}",
        f"--grace={GRACE}",
        "--",
        f"--results_dir={tmp_path / 'runs'}",
        f"--model_dir={tmp_path / 'model'}",
        f"--train_steps={train_steps}",
        "--steps_per_loop=5",
        "--tiny",
        "--use_synthetic_data",
        "--batch_size=32",
        "--log_every_secs=1",  # metrics.jsonl is flushed within a second of a loop
    ]


def _interrupt(tmp_path, topology, sig, train_steps):
    """Starts a cluster, sends SIG to the launcher after a loop; (proc, out, err, seconds)."""
    metrics = tmp_path / "model" / "metrics.jsonl"
    launcher = subprocess.Popen(
        _command(tmp_path, topology, train_steps),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        deadline = time.monotonic() + 150
        while not (metrics.exists() and metrics.stat().st_size) and time.monotonic() < deadline:
            assert launcher.poll() is None, launcher.communicate()
            time.sleep(0.1)
        assert metrics.exists() and metrics.stat().st_size, "the chief never finished a loop"
        launcher.send_signal(sig)
        sent = time.monotonic()
        out, err = launcher.communicate(timeout=3 * GRACE)
        return launcher, out, err, time.monotonic() - sent
    finally:
        if launcher.poll() is None:
            launcher.kill()


def _check_stopped_together(tmp_path, launcher, err, seconds, sig_name, tasks):
    """The checks every interrupted cluster passes; returns (record, step, exit codes)."""
    assert launcher.returncode == 130, err
    # Well before the launcher's SIGKILL at GRACE seconds.
    assert seconds < GRACE / 2, f"the launcher took {seconds:.1f} s to stop"
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    (path,) = record_files(tmp_path / "runs")
    rec = json.loads(path.read_text())
    assert rec["status"] == "interrupted"
    step = rec["results"]["final_step"]
    assert step > 0 and step % 5 == 0  # a loop boundary
    assert rec["interrupted"] == {
        "cause": "SIGTERM",
        "step": step,
        "checkpoint_saved": True,
        "last_checkpoint": step,  # the newest whole checkpoint is the one just saved
    }
    model = tmp_path / "model"
    assert lines[0] == (
        f"tpubench-launch local-cluster: error: interrupted by {sig_name}; all {tasks} task(s) "
        f"stopped at step {step} with a checkpoint in {model}; rerun the same command to "
        f"resume [run record: {path}]"
    )
    assert rec["error"] in lines[0]
    assert (model / "checkpoints" / f"ckpt-{step}.index").exists()
    assert not list(model.glob(".worker-*"))  # the workers' checkpoint copies are gone
    # Every task stopped by itself: none was killed by a signal (the launcher's SIGKILL).
    codes = {f"{t['role']}:{t['index']}": t["exit_code"] for t in rec["cluster"]["tasks"]}
    assert all(c is not None and c >= 0 for c in codes.values()), codes
    return rec, step, codes


def test_sigterm_stops_both_workers_at_one_checkpointed_step_and_the_rerun_resumes(tmp_path):
    launcher, _, err, seconds = _interrupt(tmp_path, ["--workers=2"], signal.SIGTERM, 1000)
    rec, step, codes = _check_stopped_together(tmp_path, launcher, err, seconds, "SIGTERM", 2)
    assert codes == {"worker:0": 130, "worker:1": 130}
    # Each worker's own last line: the same step on both.  The launcher signals the
    # workers one after the other: on a loaded host one may hear of the stop from the
    # other first, through the cluster, before its own SIGTERM is handled.
    causes = []
    for task in rec["cluster"]["tasks"]:
        log = pathlib.Path(task["log"]).read_text()
        said = re.findall(r"interrupted \((.+?)\) at step (\d+); checkpoint saved", log)
        assert len(said) == 1 and said[0][1] == str(step), log[-600:]
        assert said[0][0] in ("SIGTERM", "another worker was stopped"), log[-600:]
        causes.append(said[0][0])
    assert "SIGTERM" in causes, causes

    # The same command again: both workers restore step STEP and train to the end
    # (a worker that started from 0 would run more loops than the chief and hang).
    again = subprocess.run(
        _command(tmp_path, ["--workers=2"], 1000),
        capture_output=True,
        text=True,
        env=_env(),
        timeout=240,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    first, second = (json.loads(p.read_text()) for p in record_files(tmp_path / "runs"))
    assert first["run_id"] == rec["run_id"] and first["status"] == "interrupted"
    assert second["status"] == "ok"
    assert second["resumed_from_step"] == step
    assert second["results"]["final_step"] == 1000
    assert second["results"]["steps_run"] == 1000 - step


@pytest.mark.slow
def test_sigint_stops_a_multi_worker_cluster_the_same_way(tmp_path):
    launcher, _, err, seconds = _interrupt(tmp_path, ["--workers=2"], signal.SIGINT, 10_000_000)
    _, _, codes = _check_stopped_together(tmp_path, launcher, err, seconds, "SIGINT", 2)
    assert codes == {"worker:0": 130, "worker:1": 130}


@pytest.mark.slow
def test_sigterm_stops_a_parameter_server_cluster_chief_first(tmp_path):
    topology = ["--workers=2", "--ps=1"]
    launcher, _, err, seconds = _interrupt(tmp_path, topology, signal.SIGTERM, 10_000_000)
    _, _, codes = _check_stopped_together(tmp_path, launcher, err, seconds, "SIGTERM", 4)
    # The chief checkpointed (130); the serving tasks were stopped after it and exited 0.
    assert codes == {"chief:0": 130, "worker:0": 0, "worker:1": 0, "ps:0": 0}
