"""`tpubench train` and `tpubench rerun` end to end, through the real CLI.

What a user sees: the exit code, the tables on stdout, the run record, and
model_dir (metrics.jsonl, TensorBoard events, checkpoints).  Numbers in the
record are checked against each other (throughput from the loop timings,
dollars from the rate and the hourly price), never against measured values.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import psutil
import pytest
from conftest import metrics_lines, one_line_error, record_files, run_cli

from tpubench.storage import records

TINY_SYNTHETIC = ["--tiny", "--use_synthetic_data"]


def _no_temp_files(results_dir):
    leftovers = [p for p in os.listdir(results_dir) if p.endswith(".tmp")]
    assert not leftovers, f"records are written atomically; found {leftovers}"


def _train_rows(model_dir):
    return [row for row in metrics_lines(model_dir) if "train/loss" in row]


def _eval_rows(model_dir):
    return [row for row in metrics_lines(model_dir) if "eval/accuracy" in row]


def _ok(proc, record):
    assert proc.returncode == 0, proc.stderr
    assert record is not None and record["status"] == "ok"
    return record


# --------------------------------------------------------------------- demo
@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """`tpubench train` with no flags but --results_dir: mnist_mlp on digits, 300 steps."""
    results = tmp_path_factory.mktemp("demo") / "runs"
    proc, record = run_cli("train", results_dir=results, timeout=600)
    return proc, _ok(proc, record), results


def test_demo_prints_results_and_cost_tables(demo):
    proc, rec, results = demo
    out = proc.stdout
    r = rec["results"]
    for label in ("examples/sec", "step time p50 / p90 / p99", "eval accuracy", "MFU"):
        assert label in out
    # The table shows the record's numbers, not others.
    assert f"{r['examples_per_sec']:,.1f}" in out
    assert f"{r['eval']['accuracy']:.4f} on 360 examples" in out
    assert f"{100 * rec['mfu']['mfu']:.2f}%" in out
    for col in ("$/hour", "$/epoch", "$ this run"):
        assert col in out
    for row in rec["cost"]["machines"]:
        assert row["machine"] in out
    # One line, whole paths, whatever the width (a user copies them).
    model_dir = rec["config"]["model_dir"]
    assert f"record: {results / rec['run_id']}.json   model_dir: {model_dir}\n" in out


def test_demo_record_describes_the_run(demo):
    import tensorflow as tf

    _, rec, results = demo
    assert rec["schema_version"] == records.SCHEMA_VERSION
    assert rec["status"] == "ok"
    assert (results / f"{rec['run_id']}.json").exists()
    assert rec["argv"][1:] == ["train", f"--results_dir={results}"]
    assert rec["flags"]["model"] == "mnist_mlp" and rec["flags"]["train_steps"] is None
    assert rec["config"]["model"] == "mnist_mlp"
    assert rec["config"]["model_dir"] == str(results / rec["run_id"])
    assert rec["hardware"]["cpu"]["logical_cores"] >= 1
    assert rec["software"]["tensorflow"] == tf.__version__
    data = rec["data"]
    assert data["name"] == "digits"
    assert data["fingerprint"].startswith("sha256:")
    assert data["splits"]["train"]["examples"] == 1437
    assert data["splits"]["test"]["examples"] == 360
    assert rec["placement"]["num_replicas"] == 1
    assert rec["global_batch_size"] == 128  # the model's default batch
    assert rec["train_steps"] == 300  # the default step count
    _no_temp_files(results)


def test_demo_throughput_comes_from_the_steady_loops(demo):
    _, rec, _ = demo
    r = rec["results"]
    assert r["steps_run"] == r["final_step"] == 300
    assert [s for s, _ in r["loops"]] == [1] * 300
    assert r["examples_per_sec"] > 0
    assert r["examples_per_sec_per_replica"] == pytest.approx(r["examples_per_sec"])
    assert r["step_time_p50"] <= r["step_time_p90"] <= r["step_time_p99"]
    # Recompute from the loop timings in the record: warm-up loops never count.
    settled = r["loops"][r["steady_state_after_loops"] :]
    assert r["steady_state_after_loops"] >= 1
    assert r["measured_steps"] == sum(s for s, _ in settled)
    rate = sum(s * 128 for s, _ in settled) / sum(t for _, t in settled)
    assert r["examples_per_sec"] == pytest.approx(rate, rel=1e-4)
    per_step = [t / s for s, t in settled]
    assert r["step_time_p50"] == pytest.approx(np.percentile(per_step, 50), rel=1e-3)
    assert r["step_time_p99"] == pytest.approx(np.percentile(per_step, 99), rel=1e-3)


def test_demo_cost_and_mfu_follow_from_the_rate(demo):
    _, rec, _ = demo
    rate = rec["results"]["examples_per_sec"]
    cost = rec["cost"]
    assert cost["examples_per_epoch"] == 1437
    assert cost["machines"], "a CPU run with no --machine is priced as same-size cloud VMs"
    for row in cost["machines"]:
        assert row["usd_per_hour"] > 0
        expected = cost["examples_per_epoch"] / rate / 3600 * row["usd_per_hour"]
        assert row["usd_per_epoch"] == pytest.approx(expected, rel=1e-9)
        assert row["usd_to_target"] is None  # no --target_accuracy
    m = rec["mfu"]
    assert m["parameters"] == 669_706
    assert m["train_flops_per_example"] > m["forward_flops_per_example"] > 0
    assert m["mfu"] == pytest.approx(m["train_flops_per_example"] * rate / m["peak_flops"])
    assert 0 < m["mfu"] < 1


def test_demo_learns_digits(demo):
    """mnist_mlp reaches >= 0.9 eval accuracy on digits within the default 300 steps."""
    _, rec, _ = demo
    ev = rec["results"]["eval"]
    assert ev["examples"] == 360 and ev["step"] == 300
    assert ev["accuracy"] >= 0.9
    assert rec["results"]["final_loss"] < 2.3  # below chance level, ln(10)


def test_demo_model_dir_has_metrics_events_and_checkpoint(demo):
    _, rec, _ = demo
    model_dir = pathlib.Path(rec["config"]["model_dir"])
    loops = rec["results"]["loops"]
    train = _train_rows(model_dir)
    assert len(train) == len(loops), "metrics.jsonl has one train line per loop"
    assert [row["step"] for row in train] == list(np.cumsum([s for s, _ in loops]))
    assert len(_eval_rows(model_dir)) == len(rec["results"]["eval_history"]) == 1
    assert list((model_dir / "tensorboard").glob("events.out.tfevents.*"))
    assert (model_dir / "checkpoints" / "ckpt-300.index").exists()


# Loop splitting, the target and its price are tested in-process in
# tests/run/test_run_controller.py; the demo above is the end-to-end run.


@pytest.fixture(scope="module")
def priced_run(tmp_path_factory):
    """A short synthetic fp16 run on this CPU priced as an n1-standard-8 VM with 4 V100s: a
    what-if (--price_as), since --machine must carry the accelerators that ran."""
    results = tmp_path_factory.mktemp("priced") / "runs"
    proc, rec = run_cli(
        "train",
        *TINY_SYNTHETIC,
        "--train_steps=4",
        "--steps_per_loop=2",
        "--checkpoint_every_steps=3",
        "--batch_size=16",
        "--params=dropout=0.0",
        "--precision=fp16",
        "--price_as=gcp:n1-standard-8+4xgcp:v100",
        results_dir=results,
    )
    return proc, _ok(proc, rec), results


def test_fp16_trains(priced_run):
    """Mixed float16 with dynamic loss scaling."""
    _, rec, _ = priced_run
    assert rec["config"]["precision"] == "fp16"
    r = rec["results"]
    assert r["final_step"] == 4
    assert math.isfinite(r["final_loss"]) and r["final_loss"] > 0
    assert r["examples_per_sec"] > 0


def test_checkpoint_every_steps_is_honoured_across_loops(priced_run):
    _, rec, _ = priced_run
    checkpoints = pathlib.Path(rec["config"]["model_dir"]) / "checkpoints"
    assert (checkpoints / "ckpt-4.index").exists(), "the final checkpoint"
    assert (checkpoints / "ckpt-3.index").exists(), "the periodic one at step 3"


def test_machine_is_priced_from_its_parts(priced_run):
    proc, rec, _ = priced_run
    on_demand = [r for r in rec["cost"]["machines"] if r["pricing"] == "on_demand"]
    (row,) = [r for r in on_demand if r.get("what_if")]  # beside the host's own VM rows
    assert row["machine"] == "gcp:n1-standard-8+4xgcp:v100"
    assert row["usd_per_hour"] == pytest.approx(10.30, abs=0.005)
    assert row["usd_per_hour"] == pytest.approx(sum(x["subtotal"] for x in row["rows"]))
    assert {x["row_key"] for x in row["rows"]} == {"gcp:n1-standard-8", "gcp:v100"}
    assert row["what_if"] is True  # not measured there: every table marks it
    assert "$10.30" in proc.stdout and "gcp:n1-standard-8+4xgcp:v100 *" in proc.stdout


def test_rerun_repeats_the_recorded_run(priced_run):
    _, old, results = priced_run
    proc, new = run_cli("rerun", results / f"{old['run_id']}.json", timeout=300)
    assert proc.returncode == 0, proc.stderr
    new_files = [p for p in record_files(results) if p.name != f"{old['run_id']}.json"]
    assert len(new_files) == 1, "the rerun writes a new record next to the old one"
    new = json.loads(new_files[0].read_text())
    assert new["status"] == "ok"
    assert new["run_id"] != old["run_id"]
    assert new["config"]["model_dir"] != old["config"]["model_dir"], "a fresh run, not a resume"
    assert "resumed_from_step" not in new
    for flag in ("model", "batch_size", "train_steps", "params", "price_as", "precision", "seed"):
        assert new["flags"][flag] == old["flags"][flag], flag
    assert new["config"] == old["config"] | {"model_dir": new["config"]["model_dir"]}
    assert new["results"]["final_step"] == 4
    # Same flags, same seed, synthetic data: the same losses.
    assert new["results"]["final_loss"] == pytest.approx(old["results"]["final_loss"], rel=1e-5)


# ------------------------------------------------------------------ resume
@pytest.fixture(scope="module")
def resumed(tmp_path_factory):
    """20 steps with checkpoints every 10, then the same command with 40 steps."""
    base = tmp_path_factory.mktemp("resume")
    results, model_dir = base / "runs", base / "model"
    args = [
        "train",
        "--tiny",
        f"--model_dir={model_dir}",
        "--checkpoint_every_steps=10",
        "--steps_per_loop=5",
    ]
    proc, first = run_cli(*args, "--train_steps=20", results_dir=results)
    _ok(proc, first)
    proc, second = run_cli(*args, "--train_steps=40", results_dir=results)
    _ok(proc, second)
    return args, results, model_dir, first, second


def test_same_command_with_more_steps_resumes(resumed):
    _, _, model_dir, first, second = resumed
    assert "resumed_from_step" not in first
    assert first["results"]["final_step"] == 20
    assert second["resumed_from_step"] == 20
    assert second["results"]["final_step"] == 40
    assert second["results"]["steps_run"] == 20
    assert second["run_id"] != first["run_id"]
    # metrics.jsonl keeps the first run's lines and continues after them.
    steps = [row["step"] for row in _train_rows(model_dir)]
    assert steps == list(range(5, 45, 5))
    assert (model_dir / "checkpoints" / "ckpt-40.index").exists()


def test_rerunning_a_finished_run_writes_valid_json(resumed):
    args, results, _, _, second = resumed
    proc, third = run_cli(*args, "--train_steps=40", results_dir=results)
    # Nothing left to train is an error that says so, not an "ok" run of 0 steps.
    assert proc.returncode == 2
    assert "nothing to train" in proc.stderr
    assert third["status"] == "failed"
    assert third["resumed_from_step"] == 40
    text = (results / f"{third['run_id']}.json").read_text()

    def reject(constant):
        raise ValueError(f"{constant} is not JSON")

    json.loads(text, parse_constant=reject)


# --------------------------------------------------------------- interrupt
@pytest.fixture
def spawn():
    """Popen for long runs; whatever is still alive at teardown is killed, children too."""
    procs = []

    def start(args, **kwargs):
        proc = subprocess.Popen(
            [sys.executable, "-m", "tpubench", *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            **kwargs,
        )
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        try:
            tree = psutil.Process(proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            tree = []
        for p in [*tree, proc]:
            with contextlib.suppress(psutil.NoSuchProcess, ProcessLookupError):
                p.kill()
        proc.communicate()


def _wait_for(predicate, what, proc, timeout=180.0):
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if predicate():
            return
        if proc.poll() is not None:
            pytest.fail(f"process exited ({proc.returncode}) before {what}: {proc.stderr.read()}")
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def _train_lines_in(model_dir) -> int:
    path = pathlib.Path(model_dir) / "metrics.jsonl"
    return len(_train_rows(model_dir)) if path.exists() else 0


def test_interrupt_checkpoints_and_rerun_resume_continues(tmp_path, spawn):
    results, model_dir = tmp_path / "runs", tmp_path / "model"
    cmd = [
        "train",
        "--tiny",
        "--train_steps=1000000",
        "--steps_per_loop=10",
        "--log_every_secs=1",
        f"--model_dir={model_dir}",
        f"--results_dir={results}",
    ]
    # 1. Ctrl-C (SIGINT) once metrics show training progress.
    proc = spawn(cmd)
    _wait_for(lambda: _train_lines_in(model_dir) >= 2, "training progress", proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    (path,) = record_files(results)
    first = json.loads(path.read_text())
    assert first["status"] == "interrupted"
    stopped = first["results"]["final_step"]
    assert stopped >= 20 and stopped % 10 == 0
    assert f"at step {stopped}" in first["error"] and "resume" in first["error"]
    assert first["results"]["partial"] is True
    assert (model_dir / "checkpoints" / f"ckpt-{stopped}.index").exists()
    line = one_line_error(subprocess.CompletedProcess(cmd, 130, out, err))
    assert "interrupted" in line and str(path) in line
    assert "examples/sec" not in out, "an interrupted run prints no results table"

    # 2. `tpubench rerun --resume` runs the same command in the same model_dir;
    # stop it with SIGTERM (what schedulers send) once it has made progress.
    lines_before = _train_lines_in(model_dir)
    rerun = spawn(["rerun", "--resume", path])
    _wait_for(lambda: _train_lines_in(model_dir) >= lines_before + 2, "resumed progress", rerun)
    # rerun replaces itself with the training run (exec), so signals reach it directly.
    rerun.send_signal(signal.SIGTERM)
    rerun.communicate(timeout=120)
    assert rerun.returncode == 130
    second = json.loads(record_files(results)[-1].read_text())
    assert second["run_id"] != first["run_id"]
    assert second["status"] == "interrupted" and "SIGTERM" in second["error"]
    assert second["config"]["model_dir"] == str(model_dir)
    assert second["resumed_from_step"] == stopped
    assert second["results"]["final_step"] > stopped
    _no_temp_files(results)


def test_ctrl_c_during_rerun_still_checkpoints(tmp_path, spawn):
    """Ctrl-C in a terminal sends SIGINT to the whole foreground process group."""
    results = tmp_path / "runs"
    model_dir = tmp_path / "model"
    # A hand-written record of a run with a large (slow to checkpoint) model.
    record = {
        "schema_version": records.SCHEMA_VERSION,
        "run_id": "handmade",
        "argv": ["tpubench", "train"],
        "flags": {
            "model": "mnist_mlp",
            "params": ["hidden_units=6000"],
            "use_synthetic_data": True,
            "train_steps": 1000000,
            "log_every_secs": 1.0,
        },
        "config": {"results_dir": str(results), "model_dir": str(model_dir)},
    }
    path = tmp_path / "handmade.json"
    path.write_text(json.dumps(record))
    proc = spawn(["rerun", "--resume", path], start_new_session=True)
    _wait_for(lambda: _train_lines_in(model_dir) >= 1, "training progress", proc)
    os.killpg(proc.pid, signal.SIGINT)
    proc.communicate(timeout=120)
    assert proc.returncode == 130
    (rec_path,) = record_files(results)
    rec = json.loads(rec_path.read_text())
    assert rec["status"] == "interrupted"
    assert list((model_dir / "checkpoints").glob("ckpt-*.index"))


# --------------------------------------------------------------------- NaN
def test_diverging_run_is_invalid_and_reports_no_throughput(tmp_path):
    # RMSprop steps of size ~learning_rate: 1e30 overflows float32 by step 2.
    proc, rec = run_cli(
        "train",
        *TINY_SYNTHETIC,
        "--params=learning_rate=1e30",
        "--train_steps=5",
        results_dir=tmp_path,
    )
    assert proc.returncode == 5
    line = one_line_error(proc)
    assert "loss became" in line and "invalid" in line
    assert "examples/sec" not in proc.stdout
    assert rec["status"] == "invalid"
    assert "loss became" in rec["error"]
    assert rec.get("results", {}).get("examples_per_sec") is None
    assert not rec.get("cost", {}).get("machines")


# -------------------------------------------------------------- precisions
# fp16 runs in priced_run above.
@pytest.mark.parametrize(
    "model,flag", [("cifar10_cnn", "--precision=bf16"), ("mnist_mlp", "--xla")]
)
def test_precisions_and_xla_train(model, flag, tmp_path):
    proc, rec = run_cli(
        "train",
        f"--model={model}",
        *TINY_SYNTHETIC,
        "--train_epochs=0.01",  # of the canonical dataset's epoch (60k or 50k examples)
        "--steps_per_loop=2",
        flag,
        results_dir=tmp_path,
    )
    _ok(proc, rec)
    if flag == "--xla":
        assert rec["config"]["xla"] is True
    else:
        assert rec["config"]["precision"] == flag.split("=")[1]
    steps = math.ceil(0.01 * rec["examples_per_epoch"] / rec["global_batch_size"])
    assert rec["train_steps"] == steps
    r = rec["results"]
    assert r["final_step"] == steps
    assert [s for s, _ in r["loops"]] == [2] * (steps // 2) + [1] * (steps % 2)
    assert math.isfinite(r["final_loss"]) and r["final_loss"] > 0
    assert r["examples_per_sec"] > 0
    _no_temp_files(tmp_path)


# ------------------------------------------------------------------ profile
def test_profile_steps_write_a_tensorboard_profile_left_out_of_the_rate(tmp_path):
    model_dir = tmp_path / "model"
    proc, record = run_cli(
        "train",
        *TINY_SYNTHETIC,
        "--train_steps=12",
        "--steps_per_loop=2",
        "--profile_steps=4,6",
        f"--model_dir={model_dir}",
        results_dir=tmp_path / "runs",
    )
    rec = _ok(proc, record)
    traces = list((model_dir / "tensorboard" / "plugins" / "profile").glob("*/*.xplane.pb"))
    assert len(traces) == 1 and traces[0].stat().st_size > 0
    prof = rec["results"]["profile"]
    # Loops of 2 steps: steps 3-4, 5-6 cover 4..6, and the record says so.
    assert prof["requested_steps"] == [4, 6] and prof["profiled_steps"] == [3, 6]
    assert prof["loops"] == 2 and "whole loops" in prof["note"]
    assert rec["config"]["profile_steps"] == [4, 6]
    # 6 loops: 1 warm-up, 2 profiled, 3 measured.
    assert rec["results"]["measured_steps"] <= 6
    assert rec["results"]["steps_run"] == 12
