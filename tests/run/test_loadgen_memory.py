"""LoadGen's memory is bounded by the host, whatever the duration asked: a test whose
query schedule would pass half the available memory is refused before LoadGen builds
it (flags, a user.conf and a server search's probes alike), and a long single-stream
run ends in one line and a failed record instead of taking the host."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import one_line_error, record_files

from tpubench.core import bounds, errors
from tpubench.run.infer import loadgen_memory, scenarios

lg = pytest.importorskip(
    "mlperf_loadgen", reason="the loadgen extra (mlcommons-loadgen) is missing"
)


def _plugin(s):
    """The built-in scenario that runs as S's LoadGen scenario (its schedule and bytes)."""
    return next(
        scenarios.get(n)
        for n in scenarios.names()
        if s.scenario == getattr(lg.TestScenario, scenarios.get(n).loadgen_name)
    )


def _sched(s) -> tuple:
    plan = _plugin(s).schedule(s)
    return _plugin(s).loadgen_name, plan.queries, plan.samples, plan.sized


def _settings(scenario: str, seconds: float, **values):
    s = lg.TestSettings()
    s.scenario = getattr(lg.TestScenario, scenario)
    s.min_duration_ms = int(seconds * 1000)
    s.min_query_count = 1
    for key, value in values.items():
        setattr(s, key, value)
    return s


def test_the_schedule_grows_with_duration_times_rate_in_every_scenario():
    day = 86400
    ss = _settings("SingleStream", day, single_stream_expected_latency_ns=800_000)
    assert _sched(ss)[1] == 118_800_000  # 1.1 x 86400 s / 0.8 ms
    assert loadgen_memory.estimate(ss, _plugin(ss)) == 118_800_000 * 1100
    ms = _settings(
        "MultiStream",
        10,
        multi_stream_expected_latency_ns=1_000_000,
        multi_stream_samples_per_query=8,
    )
    assert _sched(ms)[1:3] == (11_000, 88_000)
    server = _settings("Server", 600, server_target_qps=1e6)
    assert _sched(server)[1] == 660_000_000
    off = _settings("Offline", 600, offline_expected_qps=5e4)
    assert _sched(off)[1:3] == (1, 33_000_000)
    # The minimum query count sizes a short test.
    few = _settings("Server", 1, server_target_qps=10.0)
    few.min_query_count = 270_336
    assert _sched(few)[1] == 270_336


def test_a_schedule_past_half_the_memory_is_one_line_naming_what_is_accepted(monkeypatch):
    monkeypatch.setattr(bounds, "available_memory", lambda: 8 * 2**30)
    ss = _settings("SingleStream", 86400, single_stream_expected_latency_ns=800_000)
    with pytest.raises(errors.UsageError) as e:
        loadgen_memory.check(ss, "single_stream", _plugin(ss))
    line = str(e.value)
    assert "LoadGen's SingleStream test 'single_stream' would schedule 118,800,000 queries" in line
    assert "(86400 s at 0.8 ms a query), about 121.7 GiB" in line
    # 4 GiB of 121.7 GiB is 2,840 s of the day asked.
    assert "accepted: a --min_duration of at most 2,840 s at this rate" in line
    server = _settings("Server", 60, server_target_qps=1e6)
    with pytest.raises(errors.UsageError, match="or a lower --target_qps"):
        loadgen_memory.check(server, "server-probe-1", _plugin(server))
    few = _settings("Server", 1, server_target_qps=10.0)
    few.min_query_count = 100_000_000
    with pytest.raises(errors.UsageError, match="a --min_query_count of at most 6,710,886"):
        loadgen_memory.check(few, "server-target", _plugin(few))
    ok = _settings("SingleStream", 60, single_stream_expected_latency_ns=10**6)
    loadgen_memory.check(ok, "ok", _plugin(ok))


def test_a_server_test_past_the_share_by_measured_bytes_is_refused(monkeypatch):
    """600 s at 100,000 QPS is 66,000,000 queries.  At the 512 bytes a query this check had,
    31.5 GiB passed under half of 64 GiB, yet LoadGen was measured at up to 556 bytes a query
    (34.2 GiB: past the share); at 640 bytes the estimate is 39.3 GiB and the test is refused."""
    monkeypatch.setattr(bounds, "available_memory", lambda: 64 * 2**30)
    server = _settings("Server", 600, server_target_qps=1e5)
    assert loadgen_memory.estimate(server, _plugin(server)) == 66_000_000 * 640 == 42_240_000_000
    assert 66_000_000 * 556 > 32 * 2**30  # what LoadGen was measured to take: past the share
    with pytest.raises(errors.UsageError) as e:
        loadgen_memory.check(server, "server-target", _plugin(server))
    line = str(e.value)
    assert "would schedule 66,000,000 queries (600 s at 100,000 QPS), about 39.3 GiB" in line
    assert "this host has 64.0 GiB available and a test may take half" in line
    # 32 GiB of 39.3 GiB is 488 s of the 600 asked.
    assert "accepted: a --min_duration of at most 488 s at this rate or a lower --target" in line
    # What half the host holds: 600 s at 80,000 QPS (31.5 GiB at 640 bytes) runs.
    fits = _settings("Server", 600, server_target_qps=8e4)
    loadgen_memory.check(fits, "server-ok", _plugin(fits))


@pytest.mark.parametrize(
    "how",
    [
        ["--min_duration=604800"],  # a week (the longest accepted) at a tiny model's speed
        ["user.conf", "*.SingleStream.min_duration = 604800000\n"],  # a week, through LoadGen
    ],
    ids=["flag", "user_conf"],
)
def test_a_week_of_single_stream_is_refused_before_loadgen_takes_the_memory(tmp_path, how):
    args = how
    if how[0] == "user.conf":
        conf = tmp_path / "user.conf"
        conf.write_text(how[1])
        args = [f"--user_conf={conf}"]
    results = tmp_path / "runs"
    cmd = [
        sys.executable,
        "-m",
        "tpubench",
        "infer",
        "--model=mnist_mlp",
        "--tiny",
        "--use_synthetic_data",
        "--scenario=single_stream",
        "--num_warmup_batches=2",
        "--num_batches=20",
        "--qsl_samples=64",
        f"--results_dir={results}",
        *args,
    ]
    # Run in a grandchild so this test's own RUSAGE_CHILDREN peak is that run's.
    probe = (
        "import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True,"
        " text=True); sys.stdout.write(p.stderr); "
        "print('PEAK', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024); "
        "sys.exit(p.returncode)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe, *cmd], capture_output=True, text=True, timeout=300
    )
    peak = int(proc.stdout.rsplit("PEAK", 1)[1])
    assert proc.returncode == 2, proc.stdout
    assert peak < 2048, f"peak {peak} MiB"  # the schedule was refused, not built
    line = one_line_error(subprocess.CompletedProcess(cmd, 2, "", proc.stdout.rsplit("PEAK", 1)[0]))
    assert "LoadGen's SingleStream test 'single_stream' would schedule" in line
    assert "accepted: a --min_duration of at most" in line
    (path,) = record_files(results)
    rec = json.loads(path.read_text())
    assert rec["status"] == "failed" and "would schedule" in rec["error"]


def test_a_run_that_dies_inside_loadgen_leaves_a_failed_record_saying_so(tmp_path):
    """LoadGen aborts the process on its own checks, and the kernel kills at its limit: no
    Python code outlives either.  The infer process guards its LoadGen test from a parent
    that marks the record failed, names the signal and prints one line (here a real
    SIGABRT reaches the worker in the middle of its test)."""
    import os
    import signal
    import time

    results = tmp_path / "runs"
    cmd = [sys.executable, "-m", "tpubench", "infer", "--model=mnist_mlp", "--tiny"]
    cmd += ["--use_synthetic_data", "--num_warmup_batches=2", "--num_batches=20"]
    cmd += ["--qsl_samples=64", "--scenario=server", "--latency_bound=50ms"]
    cmd += ["--min_duration=60s", "--min_query_count=100", "--target_qps=50"]
    cmd += [f"--results_dir={results}"]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline, worker = time.monotonic() + 240, None
        while time.monotonic() < deadline and proc.poll() is None:
            recs = list(results.glob("*.json"))
            rec = json.loads(recs[0].read_text() or "{}") if recs else {}
            if "loadgen" in rec:  # the LoadGen test starts now
                worker = rec["pid"]
                break
            time.sleep(0.5)
        assert worker is not None and worker != proc.pid  # the work runs in a guarded child
        time.sleep(3)  # inside LoadGen's 60 s test
        os.kill(worker, signal.SIGABRT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, err
    line = one_line_error(subprocess.CompletedProcess(cmd, 1, "", err))
    assert "the run died (SIGABRT) before it could write its end" in line and "[run record:" in line
    rec = json.loads(next(results.glob("*.json")).read_text())
    assert rec["status"] == "failed" and "SIGABRT" in rec["error"]
    assert "memory_limit_bytes" not in rec  # no cap was asked for
