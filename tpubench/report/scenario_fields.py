"""What reports read from an `infer --scenario` record: LoadGen's figures (pure Python)."""

from __future__ import annotations


def bound_text(record: dict) -> str | None:
    """The bound of a server-scenario record, e.g. "p99<=20ms"; other bounds, other configs."""
    settings = (record.get("loadgen") or {}).get("settings") or {}
    bound = settings.get("latency_bound_seconds")
    if record.get("scenario") != "server" or bound is None:
        return None
    return f"p{settings.get('latency_percentile', 99):g}<={bound * 1e3:g}ms"


def serving(record: dict, cost: dict) -> dict | None:
    """LoadGen's figures of an `infer --scenario` record (None for any other record)."""
    if not record.get("scenario"):
        return None
    lg = record.get("loadgen") or {}
    summary = lg.get("summary") or {}
    settings = lg.get("settings") or {}
    return {
        "scenario": record["scenario"],
        "validity": summary.get("validity"),
        "latency_p99": (summary.get("latency_seconds") or {}).get("p99"),
        "latency_bound": settings.get("latency_bound_seconds"),
        "latency_percentile": settings.get("latency_percentile"),
        "meets_mlperf_minimums": settings.get("meets_mlperf_minimums"),
        "usd_per_million": cost.get("usd_per_million_predictions"),
    }
