"""Deadlines on storage (issue 25, D): a slow or frozen bucket never outlasts a deadline.

Real `tpubench train` processes against the local GCS server: SIGTERM while
a checkpoint upload crawls ends the run within --shutdown_grace_secs with an
`interrupted` record naming the step (the half-written checkpoint abandoned,
and gone after the next start); a server that stops answering mid-run gives
a warning naming the bucket and the operation, then one line and a local
record at --storage_deadline_secs.
"""

from __future__ import annotations

import json
import signal
import time
import uuid

import livecli
import pytest
from conftest import one_line_error, run_cli

from tpubench.storage import gcs

BUCKET = "gs://tpubench-test"
BASE = ["train", "--model=mnist_mlp", "--tiny", "--use_synthetic_data", "--steps_per_loop=10"]


def _checkpoint_steps(model_dir) -> list[int]:
    names = [x.rsplit("/", 1)[-1] for x in gcs.list_objects(f"{model_dir}/checkpoints")]
    return sorted(int(n[5:-6]) for n in names if n.startswith("ckpt-") and n.endswith(".index"))


def _state_file(model_dir) -> bool:
    return f"{model_dir}/checkpoints/checkpoint" in gcs.list_objects(f"{model_dir}/checkpoints")


def _temporaries(model_dir) -> list[str]:
    return [x for x in gcs.list_objects(f"{model_dir}/checkpoints") if "_temp" in x]


def test_sigterm_during_a_slow_checkpoint_upload_ends_within_the_grace_period(
    gcs_env, local_gcs, tmp_path
):
    model_dir = f"{BUCKET}/grace-{uuid.uuid4().hex[:8]}"
    results = tmp_path / "runs"
    proc = livecli.start(
        *BASE, "--train_steps=10000000", "--checkpoint_every_steps=50",
        "--shutdown_grace_secs=6", f"--model_dir={model_dir}", f"--results_dir={results}",
        env=gcs_env,
    )  # fmt: skip
    # A first save finished: its files and then the state file the run writes after them.
    livecli.wait_for(lambda: _checkpoint_steps(model_dir) and _state_file(model_dir), proc, 180)
    local_gcs.delay(r"checkpoints", 60.0)  # each checkpoint request now takes a minute
    livecli.wait_for(lambda: local_gcs.faults.delayed > 0, proc, timeout=60)
    time.sleep(1.0)
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    done = livecli.finish(proc, timeout=60)
    elapsed = time.monotonic() - start
    local_gcs.faults.clear()

    assert elapsed < 6 + 5, (elapsed, done.stderr)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr
    line = one_line_error(done)
    (path,) = results.glob("*.json")
    record = json.loads(path.read_text())
    assert record["status"] == "interrupted", record.get("error")
    step = record["interrupted"]["step"]
    last = record["interrupted"]["last_checkpoint"]
    assert isinstance(step, int) and step > 0
    assert record["interrupted"]["checkpoint_saved"] is False
    assert f"at step {step}" in line and "abandoned" in line and "6 s" in line
    assert f"step {last}" in line and str(path) in line
    assert last in _checkpoint_steps(model_dir)

    # The same command again: it resumes from the last whole checkpoint, and the
    # abandoned save's half-written objects are gone.
    again, rerun = run_cli(
        *BASE, f"--train_steps={last + 20}", "--checkpoint_every_steps=50",
        f"--model_dir={model_dir}", results_dir=tmp_path / "again", env=gcs_env,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert rerun["resumed_from_step"] == last
    assert not _temporaries(model_dir)


def test_a_bucket_that_stops_answering_warns_then_stops_with_a_local_record(
    gcs_env, local_gcs, tmp_path
):
    model_dir = f"{BUCKET}/frozen-{uuid.uuid4().hex[:8]}"
    results = tmp_path / "runs"
    proc = livecli.start(
        *BASE, "--train_steps=10000000", "--checkpoint_every_steps=50",
        "--storage_stall_secs=2", "--storage_deadline_secs=8",
        f"--model_dir={model_dir}", f"--results_dir={results}", env=gcs_env,
    )  # fmt: skip
    try:
        livecli.wait_for(lambda: _checkpoint_steps(model_dir), proc, timeout=180)
        local_gcs.pause()
        start = time.monotonic()
        done = livecli.finish(proc, timeout=60)
        elapsed = time.monotonic() - start
    finally:
        local_gcs.resume()
    assert elapsed < 8 + 8, (elapsed, done.stderr)
    assert done.returncode == 7, done.stderr
    assert "Traceback" not in done.stderr
    warnings = [x for x in done.stderr.splitlines() if "warning:" in x]
    stalled = [x for x in warnings if "has not answered" in x]
    assert stalled and "gs://tpubench-test" in stalled[0], done.stderr
    assert any(op in stalled[0] for op in ("checkpoint", "metrics", "heartbeat")), stalled
    (line,) = [x for x in done.stderr.splitlines() if ": error: " in x]
    assert "gs://tpubench-test" in line and "8 s" in line and "--storage_deadline_secs" in line
    (path,) = results.glob("*.json")
    assert str(path) in line
    record = json.loads(path.read_text())
    assert record["status"] == "failed"
    assert record["stopped"]["reason"] == "storage deadline"
    assert record["stopped"]["step"] > 0


def test_the_new_flags_refuse_bad_values_in_one_line(tmp_path):
    proc, _ = run_cli(*BASE, "--train_steps=10", "--shutdown_grace_secs=-1", results_dir=tmp_path)
    assert proc.returncode != 0 and "shutdown_grace_secs" in one_line_error(proc)
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("flag", ["storage_stall_secs", "storage_deadline_secs"])
def test_storage_deadline_flags_refuse_zero(tmp_path, flag):
    proc, _ = run_cli(*BASE, "--train_steps=10", f"--{flag}=0", results_dir=tmp_path)
    assert proc.returncode != 0 and flag in one_line_error(proc)
