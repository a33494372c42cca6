"""A server probe far above what the device sustains is given up, not queued for minutes.

Real LoadGen in process, a SUT whose "model" takes 50 ms a batch: at 2,000
queries/s the queue falls seconds behind at once.  Without shedding, every
query of the minimum duration would wait in the SUT's queue (gigabytes at a
10-minute MLPerf duration); with it the run ends on LoadGen's schedule, is
marked OVERLOADED and is never a VALID result.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

lg = pytest.importorskip(
    "mlperf_loadgen", reason="the loadgen extra (mlcommons-loadgen) is missing"
)

from tpubench.run.infer import harness as harness_lib  # noqa: E402
from tpubench.run.infer import loadgen_conf, loadgen_sut, scenarios  # noqa: E402


def _harness(shed_after):
    samples = loadgen_sut.Samples(np.zeros((16, 4), np.float32), 16)

    def slow_model(features):
        time.sleep(0.05)
        return features

    batcher = loadgen_sut.Batcher(
        lg, samples, slow_model, 8, 0.0, (1, 2, 4, 8), lambda: None, shed_after=shed_after
    )
    return harness_lib.Harness(lg, batcher, samples.count, lambda name, data: name)


def _settings(sc, qps):
    _, s = loadgen_conf.read(lg, sc, "mnist_mlp")
    return loadgen_conf.for_run(lg, s, sc, 0.0, qps)


def test_an_overloaded_server_run_is_given_up_and_never_valid():
    sc = scenarios.get("server").config(
        latency_bound=0.05, min_duration=2.0, min_query_count=100, qsl_samples=16
    )
    harness = _harness(shed_after=0.5)
    try:
        t0 = time.perf_counter()
        summary = harness.run(_settings(sc, 2000.0), "server-1", sc.plugin)
        wall = time.perf_counter() - t0
    finally:
        harness.close()
    assert summary["validity"] == "OVERLOADED" and summary["valid"] is False
    assert summary["loadgen_validity"] in ("VALID", "INVALID")  # LoadGen's, kept apart
    shed = summary["overloaded"]
    assert shed["oldest_wait_seconds"] > 0.5 and shed["backlog"] > 0
    # Served at most one 8-query batch per 50 ms before giving up.
    assert summary["completed_qps"] <= 8 / 0.05 * 1.2
    assert "tpubench stopped serving this run" in summary["invalid_reason"]
    assert wall < 30, f"the run took {wall:.0f} s: the backlog was served, not given up"


def test_a_run_the_device_keeps_up_with_is_served_whole():
    sc = scenarios.get("server").config(
        latency_bound=0.5, min_duration=1.0, min_query_count=20, qsl_samples=16
    )
    harness = _harness(shed_after=10.0)
    try:
        summary = harness.run(_settings(sc, 20.0), "server-1", sc.plugin)
    finally:
        harness.close()
    assert "overloaded" not in summary
    assert summary["validity"] in ("VALID", "INVALID")  # LoadGen's own verdict
    assert sum(harness.batcher.batch_sizes.values()) > 0
