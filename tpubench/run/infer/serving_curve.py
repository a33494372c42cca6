"""The latency-QPS-cost curve of a server scenario: every LoadGen probe as one point.

MLPerf reports one number (the highest VALID QPS at one bound) and no cost.
A user choosing hardware needs the curve around it: at each QPS a probe
ran, the latency at the bound's percentile LoadGen measured, LoadGen's
verdict, and what a million predictions cost at that QPS on each machine
the run is priced as.  Pure Python: prices come in as `cost.runs.Prices`.
"""

from __future__ import annotations

from tpubench.cost import runs as cost_runs


def percentile_key(percentile: float) -> str:
    """LoadGen's summary key nearest at or above PERCENTILE (p50 ... p99.9)."""
    for p, key in ((50, "p50"), (90, "p90"), (95, "p95"), (97, "p97"), (99, "p99")):
        if percentile <= p:
            return key
    return "p99.9"


def points(runs: list[dict], percentile: float, prices, accelerators: int) -> list[dict]:
    """One point per server run, in QPS order: what the record's `loadgen.curve` holds."""
    key = percentile_key(percentile)
    out = []
    for r in runs:
        qps = r.get("scheduled_qps") or r.get("target_qps")
        if not qps:
            continue
        usage = cost_runs.Usage(qps, r.get("wall_seconds") or 0.0, accelerators)
        machines = cost_runs.infer_costs(prices, usage)["machines"]
        out.append(
            {
                "run": r.get("run"),
                "qps": qps,
                "target_qps": r.get("target_qps"),
                "completed_qps": r.get("completed_qps"),
                "latency_percentile": percentile,
                # An overloaded run's queries were completed unserved: no latency to show.
                "latency_seconds": None
                if r.get("overloaded")
                else (r.get("latency_seconds") or {}).get(key),
                "overloaded": bool(r.get("overloaded")),
                "validity": r.get("validity"),
                "valid": bool(r.get("valid")),
                "confirmation": bool(r.get("confirmation")),
                "machines": [
                    {
                        "machine": m.get("machine"),
                        "pricing": m.get("pricing"),
                        "usd_per_hour": m.get("usd_per_hour"),
                        "usd_per_million_predictions": m.get("usd_per_million_predictions"),
                    }
                    for m in machines
                ],
            }
        )
    return sorted(out, key=lambda p: (p["qps"], p["run"] or ""))
