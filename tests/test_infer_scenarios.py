"""`tpubench infer --scenario=...` through the real CLI and the real MLPerf LoadGen.

Short LoadGen settings keep these quick; the records must say so.  What is
checked is what a user sees: exit codes, LoadGen's verdict in the record and
on the console, the kept LoadGen logs, the $ per million at the bound, and
that `report` and `advise` read the record.  Figures are compared with each
other, never with fixed speeds (the machine is shared).
"""

from __future__ import annotations

import json
import pathlib

import pytest
from conftest import one_line_error, run_cli

pytest.importorskip("mlperf_loadgen", reason="the loadgen extra (mlcommons-loadgen) is missing")

SHORT = ["--tiny", "--num_warmup_batches=2", "--num_batches=30", "--qsl_samples=128"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    results = tmp_path_factory.mktemp("server") / "runs"
    proc, rec = run_cli(
        "infer",
        *SHORT,
        "--scenario=server",
        "--latency_bound=50ms",
        "--batch_size=32",
        "--min_duration=2s",
        "--min_query_count=100",
        "--qps_search_runs=5",
        results_dir=results,
    )
    assert proc.returncode == 0, proc.stderr
    return proc, rec, results


def test_server_finds_a_qps_loadgen_calls_valid(server):
    proc, rec, _ = server
    assert rec["kind"] == "infer" and rec["scenario"] == "server" and rec["status"] == "ok"
    lg = rec["loadgen"]
    best = lg["summary"]
    assert best["validity"] == "VALID" and best["scenario"] == "Server"
    assert best["target_latency_seconds"] == 0.05 and best["target_latency_percentile"] == 99.0
    assert best["latency_seconds"]["p99"] <= 0.05
    # The record's rate is the highest QPS LoadGen called VALID, and no VALID run was higher.
    valid = [r["target_qps"] for r in lg["runs"] if r["validity"] == "VALID"]
    assert rec["results"]["examples_per_sec"] == pytest.approx(best["scheduled_qps"])
    assert best["target_qps"] == max(valid)
    assert all(r["validity"] == "INVALID" for r in lg["runs"] if r["target_qps"] > max(valid))
    # Every search run left LoadGen's own summary and detail logs beside the record.
    for r in lg["runs"]:
        assert [pathlib.Path(p).name for p in r["logs"]] == [
            "mlperf_log_summary.txt",
            "mlperf_log_detail.txt",
        ]
        text = pathlib.Path(r["logs"][0]).read_text()
        assert f"Result is : {r['validity']}" in text
    s = lg["settings"]
    assert s["meets_mlperf_minimums"] is False and "below MLPerf's minimums" in s["note"]
    assert s["latency_bound_seconds"] == 0.05 and s["max_batch_size"] == 32
    # $ per million predictions at the sustained QPS, beside the closed loop's.
    row = rec["cost"]["machines"][0]
    expected = row["usd_per_hour"] / (rec["results"]["examples_per_sec"] * 3600) * 1e6
    assert row["usd_per_million_predictions"] == pytest.approx(expected)
    assert rec["closed_loop_cost"]["batch_size"] == 32
    assert [c["batch_size"] for c in rec["results"]["closed_loop"]] == [1, 32]
    assert "LoadGen: VALID" in proc.stdout and "sustained" in proc.stdout
    assert "server QPS search" in proc.stdout and "not a submittable result" in proc.stdout


def test_report_and_advise_read_the_server_record(server):
    _, rec, results = server
    proc, _ = run_cli("report", results)
    assert proc.returncode == 0, proc.stderr
    assert "MLPerf LoadGen scenarios" in proc.stdout
    assert "mnist_mlp [infer server]" in proc.stdout and "p99<=50ms" in proc.stdout
    qps = rec["results"]["examples_per_sec"]
    load = round(2.5 * qps)
    proc, _ = run_cli(
        "advise", results, "--model=mnist_mlp", f"--qps={load}", "--latency_bound=60ms"
    )
    assert proc.returncode == 0, proc.stderr
    assert f"serve {load} QPS" in proc.stdout and "3 machine(s)" in proc.stdout
    # A tighter bound than any record was measured at is one line, exit 2.
    proc, _ = run_cli("advise", results, "--model=mnist_mlp", "--qps=10", "--latency_bound=10ms")
    assert proc.returncode == 2
    assert "no VALID server-scenario record of mnist_mlp at p99 <= 10 ms" in one_line_error(proc)


def test_a_bound_no_batch_meets_is_one_line(tmp_path):
    proc, rec = run_cli(
        "infer", *SHORT, "--scenario=server", "--latency_bound=1us", results_dir=tmp_path
    )
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "--latency_bound=0.001ms: no batch meets it" in line
    assert rec["status"] == "failed" and "no batch meets it" in rec["error"]


def test_an_unreachable_target_qps_is_one_line(tmp_path):
    proc, _ = run_cli(
        "infer",
        *SHORT,
        "--scenario=server",
        "--latency_bound=50ms",
        "--target_qps=1e9",
        results_dir=tmp_path,
    )
    assert proc.returncode == 2
    assert "--target_qps=1e+09 is out of reach" in one_line_error(proc)


def test_loadgen_missing_is_one_line(tmp_path):
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "mlperf_loadgen.py").write_text("raise ImportError('not here')\n")
    proc, _ = run_cli(
        "infer", "--scenario=offline", results_dir=tmp_path, env={"PYTHONPATH": str(stub)}
    )
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "--scenario=offline runs MLPerf LoadGen, which is not installed" in line
    assert "tpubench[loadgen]" in line


def test_server_needs_a_latency_bound(tmp_path):
    proc, _ = run_cli("infer", "--scenario=server", results_dir=tmp_path)
    assert proc.returncode == 2
    assert "--scenario=server needs --latency_bound" in one_line_error(proc)


@pytest.mark.parametrize("scenario", ["single_stream", "multi_stream"])
def test_stream_scenarios_put_loadgens_latencies_beside_the_closed_loop(tmp_path, scenario):
    proc, rec = run_cli(
        "infer",
        *SHORT,
        f"--scenario={scenario}",
        "--samples_per_query=4",
        "--min_duration=1s",
        "--min_query_count=64",
        results_dir=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    summary = rec["loadgen"]["summary"]
    assert summary["validity"] in ("VALID", "INVALID")
    assert summary["query_count"] >= 64
    batch = 1 if scenario == "single_stream" else 4
    assert [c["batch_size"] for c in rec["results"]["closed_loop"]] == [batch]
    assert rec["results"]["latency_p50"] == summary["latency_seconds"]["p50"]
    assert f"LoadGen: {summary['validity']}" in proc.stdout
    assert "closed loop beside LoadGen" in proc.stdout


@pytest.mark.slow
def test_offline_loadgen_agrees_with_the_closed_loop(tmp_path):
    """LoadGen as an independent measurer of tpubench's own timing, side by side in one run."""
    proc, rec = run_cli(
        "infer",
        "--scenario=offline",
        "--batch_size=64",
        "--num_batches=600",
        "--num_warmup_batches=20",
        "--qsl_samples=1024",
        "--min_duration=6s",
        "--min_query_count=1000",
        results_dir=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    check = rec["results"]["cross_check"]
    assert rec["loadgen"]["summary"]["validity"] == "VALID"
    assert check["batch_size"] == 64
    # Within the noise of a shared 2-core machine: the same work, two measurers.
    assert 0.65 < check["ratio"] < 1.5, json.dumps(check)
    assert "cross-check at batch 64" in proc.stdout


def test_a_signal_during_loadgen_writes_an_interrupted_record(tmp_path):
    """LoadGen cannot stop a test early: the record says interrupted, exit 130, no core dump."""
    import os
    import signal
    import subprocess
    import sys
    import time

    results = tmp_path / "runs"
    cmd = [sys.executable, "-m", "tpubench", "infer", *SHORT, "--scenario=server"]
    cmd += ["--latency_bound=50ms", "--min_duration=60s", "--min_query_count=100"]
    cmd += ["--target_qps=50", f"--results_dir={results}"]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 240
        # The record names the LoadGen run once the closed loop is measured and the SUT traced.
        while time.monotonic() < deadline and proc.poll() is None:
            recs = list(results.glob("*.json"))
            if recs and "loadgen" in json.loads(recs[0].read_text() or "{}"):
                break
            time.sleep(0.5)
        time.sleep(3)  # inside LoadGen's 60 s test
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    lines = [x for x in err.splitlines() if x.strip() and not x.startswith("[infer")]
    assert len(lines) == 1 and "interrupted (SIGINT)" in lines[0], err
    rec = json.loads(next(results.glob("*.json")).read_text())
    assert rec["status"] == "interrupted" and "LoadGen" in rec["error"]


def test_offline_on_two_replicas_reads_real_samples(tmp_path):
    """The QSL from the real eval split (repeated past its 360 digits), served on 2 replicas."""
    proc, rec = run_cli(
        "infer",
        *SHORT,
        "--scenario=offline",
        "--nouse_synthetic_data",
        "--num_cpu_devices=2",
        "--batch_size=32",
        "--qsl_samples=500",
        "--min_duration=1s",
        "--min_query_count=100",
        results_dir=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert rec["placement"]["num_replicas"] == 2 and rec["data"]["name"] == "digits"
    assert rec["loadgen"]["settings"]["qsl_samples"] == 500
    summary = rec["loadgen"]["summary"]
    assert summary["samples_per_query"] >= 100 and summary["samples_per_sec"] > 0
    # Full batches of 32 (the last may be short: it is padded to a traced shape).
    sizes = {int(k) for r in rec["loadgen"]["runs"] for k in r["sut_batch_sizes"]}
    assert max(sizes) == 32
    assert "eval" in rec["results"]
