"""LoadGen's own result, read from the `mlperf_log_detail.txt` it writes (pure Python).

LoadGen decides whether a run is VALID; tpubench never recomputes that
verdict.  The detail log is one `:::MLLOG {json}` line per fact, so the
record takes LoadGen's keys as they are (`result_validity`,
`result_min_duration_met`, `early_stopping_met`, latency percentiles in ns)
and only converts nanoseconds to seconds.
"""

from __future__ import annotations

import json
import os

DETAIL = "mlperf_log_detail.txt"
SUMMARY = "mlperf_log_summary.txt"
_PREFIX = ":::MLLOG "

_PERCENTILES = ("50.00", "90.00", "95.00", "97.00", "99.00", "99.90")


def read_detail(outdir: str) -> dict:
    """{key: value} of every MLLOG line in OUTDIR's detail log (the last value of a key wins)."""
    out = {}
    with open(os.path.join(outdir, DETAIL), encoding="utf-8") as f:
        for line in f:
            if not line.startswith(_PREFIX):
                continue
            try:
                entry = json.loads(line[len(_PREFIX) :])
            except json.JSONDecodeError:
                continue  # a line cut short by a crash: the rest still counts
            out[entry.get("key")] = entry.get("value")
    return out


def seconds(ns) -> float | None:
    return None if ns is None else float(ns) / 1e9


def summarize(detail: dict, scenario) -> dict:
    """The record's `loadgen` summary of one LoadGen run of SCENARIO (its plug-in): its
    verdict, its figures, and the scenario's own (`Scenario.log_fields`)."""
    own = scenario
    key = own.latency_log_key
    latencies = {
        f"p{p.rstrip('0').rstrip('.')}": seconds(detail.get(key.format(p))) for p in _PERCENTILES
    }
    out = {
        "scenario": detail.get("effective_scenario"),
        "validity": detail.get("result_validity"),
        "valid": detail.get("result_validity") == "VALID",
        "invalid_reason": (detail.get("result_invalid_reason") or "").strip() or None,
        "perf_constraints_met": detail.get("result_perf_constraints_met"),
        "min_duration_met": detail.get("result_min_duration_met"),
        "min_queries_met": detail.get("result_min_queries_met"),
        "early_stopping_met": detail.get("early_stopping_met"),
        "early_stopping_result": " ".join((detail.get("early_stopping_result") or "").split())
        or None,
        "query_count": detail.get("result_query_count"),
        "samples_per_query": detail.get("effective_samples_per_query"),
        "latency_seconds": {k: v for k, v in latencies.items() if v is not None},
        "mean_latency_seconds": seconds(detail.get("result_mean_latency_ns")),
        "max_latency_seconds": seconds(detail.get("result_max_latency_ns")),
        "target_qps": detail.get("effective_target_qps"),
        "target_latency_seconds": seconds(detail.get("effective_target_latency_ns")),
        "target_latency_percentile": _percent(detail.get("effective_target_latency_percentile")),
        "min_duration_seconds": _ms(detail.get("effective_min_duration_ms")),
        "min_query_count": detail.get("effective_min_query_count"),
        "loadgen_version": detail.get("loadgen_version"),
        "errors": detail.get("num_errors"),
    }
    out |= own.log_fields(detail)
    return {k: v for k, v in out.items() if v is not None}


def _percent(fraction) -> float | None:
    return None if fraction is None else round(100.0 * float(fraction), 4)


def _ms(ms) -> float | None:
    return None if ms is None else float(ms) / 1e3
