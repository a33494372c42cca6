"""What reports read from an `infer --scenario` record: LoadGen's figures (pure Python)."""

from __future__ import annotations

from tpubench.core import money
from tpubench.core.basis import Basis
from tpubench.storage.record_results import MachineCost
from tpubench.storage.record_view import RunRecord


def bound_text(rec: RunRecord) -> str | None:
    """The bound of a record judged against a latency bound (server), e.g. "p99<=20ms";
    other bounds, other configs."""
    settings = rec.loadgen.settings
    bound = settings.latency_bound_seconds
    if not rec.loadgen.traits.bounded_by_latency or bound is None:
        return None
    percentile = 99 if settings.latency_percentile is None else settings.latency_percentile
    return f"p{percentile:g}<={bound * 1e3:g}ms"


def serving(rec: RunRecord, cost: MachineCost, pricing: Basis = Basis.ON_DEMAND) -> dict | None:
    """LoadGen's figures of an `infer --scenario` record (None for any other record)."""
    if not rec.scenario:
        return None
    settings, summary = rec.loadgen.settings, rec.loadgen.summary
    # One query (offline): its latencies are completion times, not a p99 to compare.
    traits = rec.loadgen.traits
    p99 = None if traits.one_query else (summary.latency_seconds or {}).get("p99")
    return {
        "scenario": rec.scenario,
        "bounded_by_latency": traits.bounded_by_latency,
        "validity": summary.validity,
        "latency_p99": p99,
        "latency_bound": settings.latency_bound_seconds,
        "latency_percentile": settings.latency_percentile,
        "meets_mlperf_minimums": settings.meets_mlperf_minimums,  # None: no MLPerf benchmark
        "mlperf_note": settings.note,
        "result_run": summary.run,
        "busy_host": rec.results.busy_host,
        "usd_per_million": cost.usd_per_million_predictions,
        "curve": curve(rec, cost.machine, pricing),
    }


def curve(rec: RunRecord, machine: str | None, pricing: Basis = Basis.ON_DEMAND) -> list[dict]:
    """The server runs as points (QPS, latency at the bound's percentile, verdict, $/1M).

    $/1M is MACHINE's on PRICING (the machine and basis the report prices the
    record as), or the point's first machine on PRICING; None without one.
    """
    out = []
    for p in rec.loadgen.curve:
        if not p.qps:
            continue
        basis = money.on_basis(p.machines, pricing)
        priced = [m for m in basis if m.machine == machine] or basis[:1]
        out.append(
            {
                "run": p.run,
                "qps": p.qps,
                "target_qps": p.target_qps or p.qps,
                "latency_seconds": p.latency_seconds,  # None: overloaded, over any bound
                "latency_percentile": p.latency_percentile,
                "valid": bool(p.valid),
                "confirmation": bool(p.confirmation),
                "usd_per_million": priced[0].usd_per_million_predictions if priced else None,
            }
        )
    return out
