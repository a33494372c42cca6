"""Class C of issue 34: SIGTERM is honoured within the grace period in LoadGen scenarios too.

At a low --target_qps LoadGen issues a query every ten seconds or so; the
SUT used to act on a signal only when the next query came.  Now its idle
wait looks every half second.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("mlperf_loadgen")

SHORT = ["--tiny", "--num_warmup_batches=2", "--num_batches=30", "--qsl_samples=128"]


def test_sigterm_at_a_low_target_rate_ends_the_run_within_seconds(tmp_path):
    results = tmp_path / "runs"
    cmd = [sys.executable, "-m", "tpubench", "infer", *SHORT, "--scenario=server"]
    cmd += ["--latency_bound=500ms", "--min_duration=120s", "--min_query_count=10"]
    cmd += ["--target_qps=0.1", f"--results_dir={results}"]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            recs = list(results.glob("*.json"))
            if recs and "loadgen" in json.loads(recs[0].read_text() or "{}"):
                break
            time.sleep(0.5)
        time.sleep(2)  # inside LoadGen's 120 s test, between queries
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert took < 3, f"the run ended {took:.1f} s after SIGTERM"
    assert "interrupted (SIGTERM)" in err
    rec = json.loads(next(results.glob("*.json")).read_text())
    assert rec["status"] == "interrupted"
