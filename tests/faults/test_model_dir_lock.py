"""One run per model_dir, and runs that died are called so (issue 11, items 2 and 3).

Real processes: a second `tpubench train` on a model_dir a live run holds
stops with one line naming the holder, or waits with --wait_for_lock; a
run killed with SIGKILL is shown as `died` by `runs` and `report`, and the
next run on its model_dir takes the lock over and marks its record.
"""

import json
import pathlib
import signal
import socket
import time

import livecli
import pytest
from conftest import one_line_error, run_cli

LONG = ["train", "--model=mnist_mlp", "--tiny", "--use_synthetic_data", "--train_steps=10000000"]


def test_a_second_run_on_a_held_model_dir_stops_with_one_line_naming_the_holder(tmp_path):
    model_dir, results = tmp_path / "model", tmp_path / "runs"
    first = livecli.start(*LONG, f"--model_dir={model_dir}", f"--results_dir={results}")
    try:
        held = livecli.wait_for(lambda: livecli.running_record(results), first)
        second, record = run_cli(
            "train", "--tiny", "--use_synthetic_data", "--train_steps=5",
            f"--model_dir={model_dir}", results_dir=tmp_path / "second",
        )  # fmt: skip
        line = one_line_error(second)
        assert second.returncode == 2
        assert f"--model_dir={model_dir} is in use by run {held['run_id']}" in line
        assert f"pid {first.pid} on host {socket.gethostname()}" in line
        assert f"since {held['started']}" in line and "--wait_for_lock" in line
        assert record["status"] == "failed" and "is in use" in record["error"]
        assert not (model_dir / "checkpoints" / "ckpt-5.index").exists()
        assert first.poll() is None  # the holder trains on
    finally:
        first.send_signal(signal.SIGTERM)
        done = livecli.finish(first)
    assert done.returncode == 130, done.stderr
    assert not (model_dir / ".tpubench-lock.json").exists()  # released on the way out


@pytest.mark.slow
def test_wait_for_lock_waits_then_resumes_where_the_holder_stopped(tmp_path):
    model_dir, results = tmp_path / "model", tmp_path / "runs"
    first = livecli.start(*LONG, f"--model_dir={model_dir}", f"--results_dir={results}")
    waiting = None
    try:
        livecli.wait_for(lambda: livecli.running_record(results), first)
        waiting = livecli.start(
            *LONG, f"--model_dir={model_dir}", f"--results_dir={tmp_path / 'second'}",
            "--wait_for_lock",
        )  # fmt: skip
        note = waiting.stderr.readline()  # its note comes before anything else on stderr
        assert "waiting for it (--wait_for_lock)" in note and str(first.pid) in note
        assert livecli.running_record(tmp_path / "second") is None
        first.send_signal(signal.SIGTERM)
        done = livecli.finish(first)
        assert done.returncode == 130
        stopped = json.loads(next(results.glob("*.json")).read_text())
        livecli.wait_for(lambda: livecli.running_record(tmp_path / "second"), waiting)
        time.sleep(2.0)
        waiting.send_signal(signal.SIGTERM)
        assert livecli.finish(waiting).returncode == 130
        resumed = json.loads(next((tmp_path / "second").glob("*.json")).read_text())
        assert resumed["resumed_from_step"] == stopped["results"]["final_step"] > 0
    finally:
        first.kill()
        if waiting is not None:
            waiting.kill()


def test_a_killed_run_is_shown_died_and_the_next_run_takes_over_and_marks_it(tmp_path):
    model_dir, results = tmp_path / "model", tmp_path / "runs"
    first = livecli.start(*LONG, f"--model_dir={model_dir}", f"--results_dir={results}")
    held = livecli.wait_for(lambda: livecli.running_record(results), first)
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert held["pid"] == first.pid and held["host"] == socket.gethostname()

    runs, _ = run_cli("runs", results)
    assert runs.returncode == 0, runs.stderr
    lines = runs.stdout.splitlines()
    (at,) = [i for i, x in enumerate(lines) if held["run_id"] in x]
    # A record path too long for the row goes on the line below its row.
    row = lines[at] if len(lines[at].split()) > 1 else lines[at - 1]
    assert row.split()[2] == "died", row  # started (date, time), then status
    report, _ = run_cli("report", results, "--format=csv")
    assert f"died: pid {first.pid} is gone on host" in report.stdout + report.stderr

    again, record = run_cli(
        "train", "--tiny", "--use_synthetic_data", "--train_steps=5", f"--model_dir={model_dir}",
        results_dir=tmp_path / "again",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert record["status"] == "ok"
    assert f"took over the lock of a dead run (pid {first.pid} is gone" in again.stderr
    old = json.loads(pathlib.Path(held["_path"]).read_text())
    assert old["status"] == "died" and f"pid {first.pid}" in old["error"]
