"""`tpubench infer` end to end through the real CLI, and its pure pieces in process.

What a user sees: the exit code, the table on stdout, one run record per
batch size.  Numbers in the records are checked against each other (latency
percentiles from the recorded per-batch latencies, throughput from the timed
section, dollars from the rate and the hourly price), never against
measured values.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import one_line_error, record_files, run_cli

from tpubench.cli import values
from tpubench.core import errors, timing
from tpubench.cost import pricing
from tpubench.storage import records

TINY = ["--tiny", "--num_warmup_batches=2"]


def _records(results_dir) -> list[dict]:
    return sorted(
        (json.loads(p.read_text()) for p in record_files(results_dir)),
        key=lambda r: r.get("global_batch_size") or 0,
    )


# -------------------------------------------------------------------- sweep
@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """A batch-size sweep of tiny mnist_mlp on synthetic data, random weights."""
    results = tmp_path_factory.mktemp("sweep") / "runs"
    proc, _ = run_cli(
        "infer", *TINY, "--batch_size=1,8,32", "--num_batches=40", results_dir=results
    )
    assert proc.returncode == 0, proc.stderr
    return proc, _records(results), results


def test_sweep_writes_one_record_per_batch_size(sweep):
    proc, recs, results = sweep
    assert [r["global_batch_size"] for r in recs] == [1, 8, 32]
    sweep_id = recs[0]["sweep"]["id"]
    assert len({r["run_id"] for r in recs}) == 3
    for index, rec in enumerate(recs):
        assert rec["schema_version"] == records.SCHEMA_VERSION
        assert rec["kind"] == "infer" and rec["status"] == "ok"
        assert rec["sweep"] == {"id": sweep_id, "batch_sizes": [1, 8, 32], "index": index}
        assert "batch_sizes" not in rec["config"]  # the sweep's are sweep.batch_sizes
        assert rec["placement"]["num_replicas"] == 1
        assert rec["data"]["name"] == "synthetic"
        assert rec["weights"]["source"] == "random_init"
        assert "no accuracy" in rec["results"]["eval_note"]
        assert f"record: {results / rec['run_id']}.json" in proc.stdout
        # The table row shows this record's throughput.
        assert f"{rec['results']['examples_per_sec']:,.1f}" in proc.stdout
    assert "random initial weights" in proc.stdout
    assert not list(results.glob("*.tmp"))


def test_latencies_percentiles_and_throughput_agree(sweep):
    _, recs, _ = sweep
    for rec in recs:
        r = rec["results"]
        batch = rec["global_batch_size"]
        lat = r["latencies"]
        assert len(lat) == r["timed_batches"] == 40
        assert len(r["warmup_latencies"]) == r["warmup_batches"] == 2
        assert r["first_batch_seconds"] == pytest.approx(r["warmup_latencies"][0], abs=1e-6)
        assert 0 < r["latency_p50"] <= r["latency_p90"] <= r["latency_p99"] <= r["latency_max"]
        for q in (50, 90, 99):
            assert r[f"latency_p{q}"] == pytest.approx(np.percentile(lat, q), rel=1e-3, abs=1e-6)
        # Throughput is over the wall time of the timed section, which holds
        # every timed batch plus a little host work between them.
        assert r["examples_per_sec"] == pytest.approx(batch * 40 / r["timed_seconds"], rel=1e-9)
        assert r["timed_seconds"] >= sum(lat) - 1e-5
        from_latency = batch / np.mean(lat)
        assert 0.75 * from_latency <= r["examples_per_sec"] <= from_latency * 1.001
        assert r["examples_per_sec_per_replica"] == pytest.approx(r["examples_per_sec"])


def test_cost_per_million_predictions_and_mfu_follow_from_the_rate(sweep):
    proc, recs, _ = sweep
    for rec in recs:
        rate = rec["results"]["examples_per_sec"]
        rows = rec["cost"]["machines"]
        assert rows, "a CPU run with no --machine is priced as same-size cloud VMs"
        for row in rows:
            assert row["machine"] in proc.stdout
            assert row["usd_per_hour"] > 0
            expected = row["usd_per_hour"] / (rate * 3600) * 1e6
            assert row["usd_per_million_predictions"] == pytest.approx(expected, rel=1e-9)
        m = rec["mfu"]
        assert m["forward_flops_per_example"] > 0
        assert m["mfu"] == pytest.approx(m["forward_flops_per_example"] * rate / m["peak_flops"])
    # Bigger batches amortise the per-call overhead: cheaper per prediction.
    first, last = recs[0]["cost"]["machines"][0], recs[-1]["cost"]["machines"][0]
    assert last["usd_per_million_predictions"] < first["usd_per_million_predictions"]


def test_time_to_first_prediction_is_shared_by_the_sweep(sweep):
    proc, recs, _ = sweep
    startup = recs[0]["startup"]
    assert all(r["startup"] == startup for r in recs)
    assert (
        startup["batch_size"] == 1 and startup["time_to_first_prediction_from"] == "process start"
    )
    assert (
        startup["time_to_first_prediction"]
        > startup["setup_to_first_prediction"]
        > startup["model_ready_seconds"]
        > 0
    )
    assert startup["setup_to_first_prediction"] >= recs[0]["results"]["first_batch_seconds"]
    assert f"time to first prediction: {startup['time_to_first_prediction']:,.2f} s" in proc.stdout


def test_two_replicas_predict_what_one_does(sweep, tmp_path):
    """The same seed and synthetic batch give the same predictions on 2 logical CPUs."""
    _, one, _ = sweep
    proc, _ = run_cli(
        "infer",
        *TINY,
        "--batch_size=8,32",
        "--num_batches=5",
        "--num_cpu_devices=2",
        results_dir=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    two = _records(tmp_path)
    assert [r["global_batch_size"] for r in two] == [8, 32]
    for rec, base in zip(two, one[1:], strict=True):
        assert rec["placement"]["num_replicas"] == 2
        assert rec["placement"]["strategy"] == "mirrored"
        assert rec["per_replica_batch_size"] == rec["global_batch_size"] // 2
        r = rec["results"]
        assert r["examples_per_sec_per_replica"] == pytest.approx(r["examples_per_sec"] / 2)
        assert r["output_checksum"] == pytest.approx(base["results"]["output_checksum"], rel=1e-5)


# --------------------------------------------------------------- checkpoint
def test_checkpoint_weights_give_training_eval_accuracy(tmp_path):
    model_dir = tmp_path / "model"
    proc, trained = run_cli(
        "train",
        "--tiny",
        "--train_steps=60",
        "--steps_per_loop=20",
        f"--model_dir={model_dir}",
        results_dir=tmp_path / "train",
    )
    assert proc.returncode == 0, proc.stderr
    trained_eval = trained["results"]["eval"]
    assert trained_eval["accuracy"] > 0.5, "60 steps on digits learn well above chance (0.1)"

    results = tmp_path / "infer"
    proc, _ = run_cli(
        "infer",
        *TINY,
        f"--model_dir={model_dir}",
        "--nouse_synthetic_data",
        "--batch_size=16,64",
        "--num_batches=5",
        results_dir=results,
    )
    assert proc.returncode == 0, proc.stderr
    recs = _records(results)
    for rec in recs:
        assert rec["weights"]["source"] == "checkpoint"
        assert rec["weights"]["step"] == 60
        assert rec["weights"]["path"] == str(model_dir / "checkpoints" / "ckpt-60")
        assert rec["data"]["name"] == "digits"
        ev = rec["results"]["eval"]
        assert ev["examples"] == trained_eval["examples"] == 360
        assert ev["accuracy"] == pytest.approx(trained_eval["accuracy"], abs=1e-6)
        assert ev["loss"] == pytest.approx(trained_eval["loss"], rel=1e-4)
    assert f"eval accuracy of these weights: {trained_eval['accuracy']:.4f}" in proc.stdout
    assert "ckpt-60 (step 60)" in " ".join(proc.stdout.split())  # folded at 100 columns

    # The full-size model cannot take the tiny model's weights: one line, a record.
    # (--notiny given: without it infer takes the model_dir's remembered --tiny.)
    proc, failed = run_cli(
        "infer", "--notiny", f"--model_dir={model_dir}", results_dir=tmp_path / "bad"
    )
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "ckpt-60" in line and "--tiny" in line and "(784, 32)" in line
    assert failed["status"] == "failed" and failed["kind"] == "infer"
    assert "ckpt-60" in failed["error"] and failed["error"] in line


def test_a_text_model_trained_on_prepared_data_restores_in_infer(tmp_path):
    """The vocabulary comes from the data for infer as for train (77 characters, not 57)."""
    data = tmp_path / "chars"
    proc, _ = run_cli("data", "prepare", "--dataset=pydoc_chars", f"--output={data}")
    assert proc.returncode == 0, proc.stderr
    vocab = json.loads((data / "manifest.json").read_text())["vocab_size"]
    model_dir = tmp_path / "model"
    common = ["--model=lstm_textgen", "--tiny", f"--data_dir={data}"]
    proc, trained = run_cli(
        "train",
        *common,
        "--train_steps=2",
        f"--model_dir={model_dir}",
        results_dir=tmp_path / "train",
    )
    assert proc.returncode == 0, proc.stderr
    assert trained["model"]["params"]["vocab_size"] == vocab != 57
    results = tmp_path / "infer"
    proc, _ = run_cli(
        "infer",
        *common,
        "--nouse_synthetic_data",
        f"--model_dir={model_dir}",
        "--batch_size=4",
        "--num_batches=2",
        "--num_warmup_batches=1",
        "--eval_steps=5",  # the whole eval split of 12,894 characters took 8 s more
        results_dir=results,
    )
    assert proc.returncode == 0, proc.stderr
    (rec,) = _records(results)
    assert rec["status"] == "ok" and rec["weights"]["step"] == 2
    assert rec["model"]["params"]["vocab_size"] == vocab
    assert rec["results"]["eval"]["examples"] > 0


# ------------------------------------------------------------------- errors
ERRORS = {
    # Rejected before TensorFlow loads: one line, no record (no run started).
    "bad_batch_list": (["--batch_size=8,x"], ["--batch_size=8,x", "'x'", "1,8,32,128"]),
    "unknown_model": (["--model=nosuch_net"], ["nosuch_net", "mnist_mlp"]),
    # Fails in the same place as unknown_model (after TF loads): slow suite only.
    "indivisible_batch": (
        ["--batch_size=8,9", "--num_cpu_devices=2", "--tiny"],
        ["--batch_size=8,9", "9", "2 replicas"],
    ),
}


@pytest.mark.parametrize(
    "case",
    [
        "bad_batch_list",
        "unknown_model",
        pytest.param("indivisible_batch", marks=pytest.mark.slow),
    ],
)
def test_bad_input_is_one_line_and_recorded_once_tensorflow_loaded(case, tmp_path):
    args, needles = ERRORS[case]
    proc, rec = run_cli("infer", *args, results_dir=tmp_path)
    assert proc.returncode == 2
    line = one_line_error(proc)
    for needle in needles:
        assert needle in line
    assert proc.stdout == ""
    if case != "indivisible_batch":
        assert rec is None and "run record" not in line
        return
    assert rec is not None and len(record_files(tmp_path)) == 1
    assert rec["kind"] == "infer" and rec["status"] == "failed"
    assert rec["error"] in line and str(record_files(tmp_path)[0]) in line
    assert "results" not in rec


# --------------------------------------------------------------- in process
@pytest.mark.parametrize(
    "items,expected",
    [(["1", "8", "32", "128"], (1, 8, 32, 128)), ([" 4"], (4,)), ([], ())],
)
def test_batch_size_lists(items, expected):
    assert values.parse_batch_sizes(items) == expected


@pytest.mark.parametrize("items", [["0"], ["-8"], ["8", "x"], ["2.5"], ["8", "8"], [""]])
def test_bad_batch_size_lists_name_the_value(items):
    with pytest.raises(errors.UsageError, match="--batch_size="):
        values.parse_batch_sizes(items)


def test_latency_summary():
    lat = [0.004, 0.002, 0.003, 0.001, 0.010]
    s = timing.latency_summary(lat, examples_per_batch=8, wall_seconds=0.025)
    assert s["examples_per_sec"] == pytest.approx(40 / 0.025)
    assert s["latency_p50"] == pytest.approx(0.003)
    assert s["latency_p99"] == pytest.approx(np.percentile(lat, 99))
    assert s["latency_mean"] == pytest.approx(0.004)
    assert (s["latency_min"], s["latency_max"]) == (0.001, 0.010)
    assert s["timed_batches"] == 5 and s["timed_examples"] == 40


def test_cost_per_million_predictions():
    price = pricing.override(3.6)
    row = pricing.summarize_inference(
        price, predictions_per_sec=1000.0, run_seconds=36.0, num_accelerators=4
    )
    # $3.60/hour over 3.6M predictions an hour: $1 per million.
    assert row["usd_per_million_predictions"] == pytest.approx(1.0)
    assert row["predictions_per_usd"] == pytest.approx(1e6)
    assert row["usd_run"] == pytest.approx(0.036)
    assert row["usd_per_accelerator_hour"] == pytest.approx(0.9)
    none = pricing.summarize_inference(
        price, predictions_per_sec=0.0, run_seconds=0.0, num_accelerators=0
    )
    assert none["usd_per_million_predictions"] is None and none["usd_run"] is None


@pytest.mark.slow
def test_interrupt_keeps_finished_batch_sizes_and_records_the_one_in_flight(tmp_path):
    results = tmp_path / "runs"
    cmd = [sys.executable, "-m", "tpubench", "infer", *TINY, "--batch_size=1,8"]
    cmd += ["--num_batches=10000000", "--max_seconds=4", f"--results_dir={results}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            recs = _records(results) if results.exists() else []
            if [(r["global_batch_size"], r["status"]) for r in recs] == [(1, "ok"), (8, "running")]:
                break
            time.sleep(0.1)
        else:
            pytest.fail(f"batch size 8 never started: {proc.stderr.read() if proc.poll() else ''}")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    line = one_line_error(subprocess.CompletedProcess(cmd, 130, out, err))
    one, eight = _records(results)
    assert one["status"] == "ok" and one["results"]["examples_per_sec"] > 0
    # --max_seconds=4 ended the timed section long before 10^9 batches, at the
    # first batch to end past 4 s: the batches before it fit inside the 4 s.
    r = one["results"]
    assert r["timed_batches"] == len(r["latencies"]) < 10**9
    assert sum(r["latencies"][:-1]) < 4 <= r["timed_seconds"]
    assert eight["status"] == "interrupted" and "batch size 8" in eight["error"]
    assert "results" not in eight
    assert eight["error"] in line and str(results / f"{eight['run_id']}.json") in line


def test_naming_a_dataset_reads_it_and_synthetic_with_it_is_refused(tmp_path):
    """infer's synthetic default gives way to --dataset; asking for both is one line, exit 2."""
    results = tmp_path / "digits"
    proc, _ = run_cli(
        "infer",
        *TINY,
        "--dataset=digits",
        "--batch_size=16",
        "--num_batches=3",
        results_dir=results,
    )
    assert proc.returncode == 0, proc.stderr
    (rec,) = _records(results)
    assert rec["data"]["name"] == "digits"
    assert rec["config"]["data"]["use_synthetic_data"] is False
    assert "inference on digits" in proc.stdout
    proc, _ = run_cli(
        "infer", *TINY, "--use_synthetic_data", "--dataset=digits", results_dir=tmp_path / "both"
    )
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "--use_synthetic_data and --dataset=digits exclude each other" in line
