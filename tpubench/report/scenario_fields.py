"""What reports read from an `infer --scenario` record: LoadGen's figures (pure Python)."""

from __future__ import annotations

from tpubench.storage.record_view import MachineCost, RunRecord


def bound_text(rec: RunRecord) -> str | None:
    """The bound of a server-scenario record, e.g. "p99<=20ms"; other bounds, other configs."""
    settings = rec.loadgen.settings
    bound = settings.latency_bound_seconds
    if rec.scenario != "server" or bound is None:
        return None
    percentile = 99 if settings.latency_percentile is None else settings.latency_percentile
    return f"p{percentile:g}<={bound * 1e3:g}ms"


def serving(rec: RunRecord, cost: MachineCost) -> dict | None:
    """LoadGen's figures of an `infer --scenario` record (None for any other record)."""
    if not rec.scenario:
        return None
    settings, summary = rec.loadgen.settings, rec.loadgen.summary
    return {
        "scenario": rec.scenario,
        "validity": summary.validity,
        "latency_p99": (summary.latency_seconds or {}).get("p99"),
        "latency_bound": settings.latency_bound_seconds,
        "latency_percentile": settings.latency_percentile,
        "meets_mlperf_minimums": settings.meets_mlperf_minimums,
        "usd_per_million": cost.usd_per_million_predictions,
    }
