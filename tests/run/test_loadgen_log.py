"""LoadGen's detail log -> the record's summary (pure Python), and MLPerf's minimums."""

from __future__ import annotations

import json

from tpubench.run.infer import loadgen_log, scenarios


def _write(tmp_path, entries: dict) -> str:
    lines = ["not an MLLOG line"]
    for key, value in entries.items():
        lines.append(":::MLLOG " + json.dumps({"key": key, "value": value, "time_ms": 1.0}))
    lines.append(':::MLLOG {"key": "cut short')  # a crash mid-line must not lose the rest
    (tmp_path / loadgen_log.DETAIL).write_text("\n".join(lines) + "\n")
    return str(tmp_path)


def test_server_summary_takes_loadgens_verdict_and_figures(tmp_path):
    outdir = _write(
        tmp_path,
        {
            "effective_scenario": "Server",
            "effective_target_qps": 200,
            "effective_target_latency_ns": 20_000_000,
            "effective_target_latency_percentile": 0.99,
            "effective_min_duration_ms": 2000,
            "result_validity": "INVALID",
            "result_invalid_reason": "Reduce target QPS to improve latency. ",
            "result_perf_constraints_met": False,
            "result_min_duration_met": True,
            "result_min_queries_met": True,
            "early_stopping_met": False,
            "result_scheduled_samples_per_sec": 194.697,
            "result_completed_samples_per_sec": 194.571,
            "result_overlatency_query_count": 13,
            "result_99.00_percentile_latency_ns": 45_391_723,
            "result_50.00_percentile_latency_ns": 1_257_074,
        },
    )
    s = loadgen_log.summarize(loadgen_log.read_detail(outdir), scenarios.get("server"))
    assert s["validity"] == "INVALID" and s["valid"] is False
    assert s["invalid_reason"] == "Reduce target QPS to improve latency."
    assert s["min_duration_met"] is True and s["early_stopping_met"] is False
    assert s["scheduled_qps"] == 194.697 and s["overlatency_queries"] == 13
    assert s["latency_seconds"] == {"p50": 0.001257074, "p99": 0.045391723}
    assert s["target_latency_seconds"] == 0.02 and s["target_latency_percentile"] == 99.0
    assert s["min_duration_seconds"] == 2.0


def test_multi_stream_latencies_are_per_query(tmp_path):
    outdir = _write(
        tmp_path,
        {
            "result_validity": "VALID",
            "result_99.00_percentile_per_query_latency_ns": 8_000_000,
            "result_99.00_percentile_latency_ns": 1,
        },
    )
    s = loadgen_log.summarize(loadgen_log.read_detail(outdir), scenarios.get("multi_stream"))
    assert s["valid"] is True and s["latency_seconds"] == {"p99": 0.008}
