"""`tpubench infer --scenario=...` through the real CLI and the real MLPerf LoadGen.

Short LoadGen settings keep these quick; the records must say so.  What is
checked is what a user sees: exit codes, LoadGen's verdict in the record and
on the console, the kept LoadGen logs, the $ per million at the bound, and
that `report` and `advise` read the record.  Figures are compared with each
other, never with fixed speeds (the machine is shared).
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import re
import subprocess
import sys

import pytest
from conftest import one_line_error, run_cli

from tpubench.cli import console_format

pytest.importorskip("mlperf_loadgen", reason="the loadgen extra (mlcommons-loadgen) is missing")

SHORT = ["--tiny", "--num_warmup_batches=2", "--num_batches=30", "--qsl_samples=128"]


# The server fixture's bound: loose enough that a loaded host (a test suite beside other
# work) still finds a VALID QPS; the behaviour checked does not depend on it.
BOUND, BOUND_S = "200ms", 0.2


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    results = tmp_path_factory.mktemp("server") / "runs"
    proc, rec = run_cli(
        "infer",
        *SHORT,
        "--scenario=server",
        f"--latency_bound={BOUND}",
        "--batch_size=32",
        "--min_duration=2s",
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
    assert best["target_latency_seconds"] == BOUND_S and best["target_latency_percentile"] == 99.0
    assert best["latency_seconds"]["p99"] <= BOUND_S
    # The result is a confirmation run: VALID, at or below the search's highest VALID QPS.
    search = [r for r in lg["runs"] if r["run"].startswith("server-")]
    valid = [r["target_qps"] for r in search if r["validity"] == "VALID"]
    assert best["run"].startswith("confirm-") and best["confirmation"] is True
    assert rec["results"]["examples_per_sec"] == pytest.approx(best["scheduled_qps"])
    assert best["target_qps"] <= max(valid) == lg["confirmation"]["searched_qps"]
    assert all(r["validity"] == "INVALID" for r in search if r["target_qps"] > max(valid))
    assert lg["confirmation"]["tries"][-1] == best["run"]
    # Settings read from the mlperf.conf inside LoadGen: its seeds, no hand-typed minimums.
    rules = lg["rules"]
    assert rules["mlperf_conf"].startswith("built into LoadGen ")
    assert rules["mlperf_conf_values"]["min_duration_seconds"] == 600.0
    assert rules["effective"]["min_duration_seconds"] == 2.0
    assert best["min_query_count"] == rules["mlperf_conf_values"]["min_query_count"]
    assert rules["effective"]["qsl_rng_seed"] == rules["mlperf_conf_values"]["qsl_rng_seed"] != 0
    # Every run (search and confirmation) is a point of the latency-QPS-cost curve.
    curve = lg["curve"]
    assert sorted(p["run"] for p in curve) == sorted(r["run"] for r in lg["runs"])
    assert [p["qps"] for p in curve] == sorted(p["qps"] for p in curve)
    hourly = rec["cost"]["machines"][0]["usd_per_hour"]
    for p in curve:
        usd = p["machines"][0]["usd_per_million_predictions"]
        assert usd == pytest.approx(hourly / (p["qps"] * 3600) * 1e6)
    # Every search run left LoadGen's own summary and detail logs beside the record.
    for r in lg["runs"]:
        assert [pathlib.Path(p).name for p in r["logs"]] == [
            "mlperf_log_summary.txt",
            "mlperf_log_detail.txt",
        ]
        text = pathlib.Path(r["logs"][0]).read_text()
        assert f"Result is : {r['validity']}" in text
    s = lg["settings"]
    # mnist_mlp is no MLPerf benchmark: MLPerf's rules are not met or unmet, they do not apply.
    assert s["meets_mlperf_minimums"] is None
    assert s["note"] == "mnist_mlp has no MLPerf Inference benchmark: MLPerf's rules do not apply"
    assert s["latency_bound_seconds"] == BOUND_S and s["max_batch_size"] == 32
    # $ per million predictions at the sustained QPS, beside the closed loop's.
    row = rec["cost"]["machines"][0]
    expected = row["usd_per_hour"] / (rec["results"]["examples_per_sec"] * 3600) * 1e6
    assert row["usd_per_million_predictions"] == pytest.approx(expected)
    # The run's cost is LoadGen's whole result run (its wall time), not the closed loop's.
    assert rec["results"]["timed_seconds"] == best["wall_seconds"] >= 2.0
    expected = row["usd_per_hour"] * rec["results"]["timed_seconds"] / 3600
    assert row["usd_run"] == pytest.approx(expected)
    assert rec["closed_loop_cost"]["batch_size"] == 32
    assert [c["batch_size"] for c in rec["results"]["closed_loop"]] == [1, 32]
    assert "LoadGen: VALID" in proc.stdout and "sustained" in proc.stdout
    said = " ".join(proc.stdout.split())  # lines folded at 100 columns
    assert "latency-QPS-cost curve" in said and "has no MLPerf Inference benchmark" in said
    assert "confirmation run (MLPerf's result is one full run at the chosen QPS)" in said
    assert "settings: mlperf.conf built into LoadGen" in said


def test_report_and_advise_read_the_server_record(server, tmp_path):
    from PIL import Image

    _, rec, results = server
    proc, _ = run_cli("report", results, f"--output={tmp_path}")
    assert proc.returncode == 0, proc.stderr
    assert "MLPerf LoadGen scenarios" in proc.stdout
    assert "mnist_mlp [infer server]" in proc.stdout and f"p99<={BOUND}" in proc.stdout
    # The chart of the curve: every run a point, the bound and the confirmed QPS with it.
    chart = json.loads(Image.open(tmp_path / "serving_curve.png").text["tpubench:series"])
    assert len(chart) == 1 and chart[0]["bound_seconds"] == BOUND_S
    assert chart[0]["confirmed_qps"] == pytest.approx(rec["results"]["examples_per_sec"])
    assert [p["qps"] for p in chart[0]["points"]] == [p["qps"] for p in rec["loadgen"]["curve"]]
    assert "serving_curve.png" in (tmp_path / "report.md").read_text()
    qps = rec["results"]["examples_per_sec"]
    load = round(2.5 * qps)
    # A record made while the suite's other worker was busy is refused without --allow_busy
    # (test_a_server_run_beside_a_busy_process_says_so_and_advise_refuses_it).
    busy = ["--allow_busy"] if rec["results"].get("busy_host") else []
    proc, _ = run_cli(
        "advise", results, "--model=mnist_mlp", f"--qps={load}", f"--latency_bound={BOUND}", *busy
    )
    assert proc.returncode == 0, proc.stderr
    said = " ".join(proc.stdout.split())  # lines folded at 100 columns
    # The QPS per machine is LoadGen's verdict on MLPerf's result: the VALID confirmation
    # run (never a probe above it, never an INVALID run under the bound).
    m = re.search(r"(\d+) machine\(s\) at ([\d,.]+) QPS each serve (\d+) QPS", said)
    assert m and int(m[3]) == load, said
    machines, each = int(m[1]), float(m[2].replace(",", ""))
    assert machines == math.ceil(load / each) and each == pytest.approx(qps, rel=1e-3)
    best = rec["loadgen"]["summary"]["run"]
    assert f"QPS per machine: LoadGen VALID confirmation ({best}) at p99<={BOUND}" in said
    # A looser bound: LoadGen's VALID at the fixture's bound holds there too, and counts the same.
    proc, _ = run_cli(
        "advise", results, "--model=mnist_mlp", f"--qps={load}", "--latency_bound=1s", *busy
    )
    assert proc.returncode == 0, proc.stderr
    assert f"{machines} machine(s) at {m[2]} QPS each" in " ".join(proc.stdout.split())
    # A tighter bound than LoadGen judged: the record says nothing of it; one line, exit 2.
    proc, _ = run_cli("advise", results, "--model=mnist_mlp", "--qps=10", "--latency_bound=1us")
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "no server-scenario record of mnist_mlp with a LoadGen VALID confirmation" in line
    assert f"LoadGen judged it at p99<={BOUND}, looser than the p99<=0.001ms asked" in line


def test_a_server_run_beside_a_busy_process_says_so_and_advise_refuses_it(tmp_path):
    """Another process spinning on half the cores while LoadGen runs: the search still finds
    a VALID QPS at 50 ms, the record and the console say "busy host", and advise sizes no
    fleet from it unless told to (--allow_busy), saying so."""
    burners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(max(1, (os.cpu_count() or 2) // 2))
    ]
    try:
        proc, rec = run_cli(
            "infer",
            *SHORT,
            "--scenario=server",
            "--latency_bound=50ms",
            "--batch_size=32",
            "--min_duration=2s",
            "--qps_search_runs=5",
            results_dir=tmp_path / "runs",
        )
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert proc.returncode == 0, proc.stderr
    assert rec["loadgen"]["summary"]["validity"] == "VALID"
    busy = rec["results"]["busy_host"]
    assert re.fullmatch(r"other processes used \d+% of the \d+ cores", busy), busy
    assert all(r["host_cpu"]["samples"] is not None for r in rec["loadgen"]["runs"])
    said = " ".join(proc.stdout.split())
    assert f"busy host: {busy} while LoadGen ran" in said
    [name] = [p.name for p in (tmp_path / "runs").glob("*.json")]
    qps = rec["results"]["examples_per_sec"]
    ask = ["advise", tmp_path / "runs", "--model=mnist_mlp", f"--qps={round(3 * qps)}"]
    proc, _ = run_cli(*ask, "--latency_bound=50ms")
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert f"{name} not used: measured on a busy host ({busy}); run it again on a quiet " in line
    proc, _ = run_cli(*ask, "--latency_bound=50ms", "--allow_busy")
    assert proc.returncode == 0, proc.stderr
    assert f"on a busy host ({busy})" in " ".join(proc.stdout.split())


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
        "--target_qps=1e7",
        results_dir=tmp_path,
    )
    assert proc.returncode == 2
    assert "--target_qps=1e+07 is out of reach" in one_line_error(proc)


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


def test_a_user_conf_sets_the_qps_and_the_duration_no_flag_gives(tmp_path):
    """user.conf's target_qps is a fixed QPS (no search) and LoadGen's effective one;
    its min_duration stands when no --min_duration is given."""
    conf = tmp_path / "user.conf"
    # 3 s at 300 QPS: enough queries for LoadGen's early-stopping estimate at p99.
    conf.write_text("*.Server.target_qps = 300\nmnist_mlp.Server.min_duration = 3000\n")
    proc, rec = run_cli(
        "infer",
        *SHORT,
        "--scenario=server",
        "--latency_bound=50ms",
        f"--user_conf={conf}",
        results_dir=tmp_path / "runs",
    )
    # On a busy shared host the one run may be INVALID (exit 2, a failed record): the
    # settings it ran under are the user.conf's either way.
    assert proc.returncode in (0, 2), proc.stderr
    lg = rec["loadgen"]
    (run,) = lg["runs"]
    assert run["run"] == "server-target"
    assert run["target_qps"] == 300.0  # LoadGen's effective_target_qps
    assert run["min_duration_seconds"] == 3.0  # LoadGen's effective_min_duration
    rules = lg["rules"]
    assert rules["effective"]["min_duration_seconds"] == 3.0
    assert "min_duration_seconds" not in rules["set_by_flags"]
    assert rules["user_conf_keys"]["target_qps"]["use"] == "honoured"
    assert rules["user_conf_keys"]["min_duration"]["line"] == "user.conf:2"
    if proc.returncode == 0:
        assert lg["settings"]["qps_search"] == "given by the user.conf's target_qps"
        said = " ".join(proc.stdout.split())
        assert "server run at the user.conf's target_qps" in said
        assert f"user.conf {conf} (min_duration, target_qps)" in said
    else:
        assert "no QPS tried was VALID in 1 LoadGen run(s)" in one_line_error(proc)


def test_a_user_conf_key_tpubench_cannot_honour_is_refused_before_any_run(tmp_path):
    conf = tmp_path / "user.conf"
    conf.write_text("# mine\n*.Server.schedule_rng_seed = 42\n")
    proc, rec = run_cli(
        "infer",
        "--scenario=server",
        "--latency_bound=50ms",
        f"--user_conf={conf}",
        results_dir=tmp_path / "runs",
    )
    assert proc.returncode == 2
    assert rec is None  # refused before TensorFlow loaded: no run started, no record
    line = one_line_error(proc)
    assert f"--user_conf={conf}: line 2 sets *.Server.schedule_rng_seed = 42" in line
    assert "cannot honour schedule_rng_seed" in line and "accepted: remove the line" in line


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
    # LoadGen's early-stopping estimate is the MLPerf figure, and the headline's.
    estimate = summary.get("early_stopping_latency_seconds")
    if estimate is not None:
        assert rec["results"]["mlperf_latency_seconds"] == estimate
        pct = "p90" if scenario == "single_stream" else "p99"
        shown = console_format.latency_ms(estimate)
        headline = f"{scenario}: {pct} latency {shown} ms, LoadGen's early-stopping"
        assert headline in " ".join(proc.stdout.split())  # folded at 100 columns
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
    assert "cross-check at batch 64" in " ".join(proc.stdout.split())


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
    lines = [x for x in err.splitlines() if x.strip() and not x.startswith(("[infer", "[loadgen"))]
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
    # Three results by default: the record's rate is their median, the spread beside it.
    repeats = rec["loadgen"]["offline_repeats"]
    rates = repeats["samples_per_sec"]
    assert repeats["runs"] == len(rates) == 3
    assert rec["results"]["examples_per_sec"] == sorted(rates)[1] == summary["samples_per_sec"]
    assert repeats["relative_spread"] == pytest.approx((max(rates) - min(rates)) / sorted(rates)[1])
    check = rec["results"]["cross_check"]
    assert check["loadgen_runs"] == 3 and check["ratio_min"] <= check["ratio"] <= check["ratio_max"]
    said = " ".join(proc.stdout.split())  # lines folded at 100 columns
    assert "the median of 3 LoadGen run(s)" in said
    # The one query's completion times are not per-batch latencies: named apart.
    assert "latency_p99" not in rec["results"]
    done = rec["results"]["offline_sample_completion_seconds"]
    assert done["p99"] == summary["latency_seconds"]["p99"]
    assert "time since the one query was issued" in said and "n/a (one query)" in said
    # Full batches of 32 (the last may be short: it is padded to a traced shape).
    sizes = {int(k) for r in rec["loadgen"]["runs"] for k in r["sut_batch_sizes"]}
    assert max(sizes) == 32
    assert "eval" in rec["results"]


def test_a_user_conf_without_a_loadgen_scenario_is_one_line(tmp_path):
    conf = tmp_path / "user.conf"
    conf.write_text("*.Server.target_qps = 100\n")
    proc, _ = run_cli("infer", f"--user_conf={conf}", results_dir=tmp_path / "runs")
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert f"--user_conf={conf}: the closed loop runs no LoadGen" in line
    assert "accepted: with --scenario=single_stream|multi_stream|server|offline" in line
