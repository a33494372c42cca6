"""The report's serving table: one row per `infer --scenario` configuration (no TF).

LoadGen's verdicts, the rate, the p99, the bound and $ per million predictions
of each group with serving records; `advise --qps` is report/serving.py.
"""

from __future__ import annotations

from tpubench.core import money
from tpubench.core.basis import Basis
from tpubench.report import group as group_lib
from tpubench.report import render, serving, tables


def table(groups: list[group_lib.Group], pricing: Basis = Basis.ON_DEMAND) -> tables.Table | None:
    """One row per scenario configuration: LoadGen's verdict, rate, p99 and $ per million."""
    rows, csv_rows = [], []
    for g in groups:
        served = [r.serving for r in g.runs if r.serving]
        if not served:
            continue
        rate = serving.median(r.examples_per_sec for r in g.runs)
        p99 = serving.median(s["latency_p99"] for s in served)
        usd = serving.median(s["usd_per_million"] for s in served)
        hourly = serving.median(r.usd_per_hour for r in g.runs)
        verdicts = "/".join(sorted({s["validity"] or "?" for s in served}))
        if any(s.get("busy_host") for s in served):  # lower than the machine serves quiet:
            verdicts += " ⚠busy"  # advise leaves them out
        mlperf = serving.mlperf_text(g.runs)
        bound = g.dims.get("latency_bound") or "n/a"
        rows.append(
            [
                g.label,
                served[0]["scenario"],
                verdicts,
                str(len(g.runs)),
                render.num(rate),
                render.num(None if p99 is None else p99 * 1e3, 2),
                bound,
                render.money(hourly),
                render.money(usd),
                mlperf,
            ]
        )
        csv_rows.append(
            [g.label, served[0]["scenario"], verdicts, len(g.runs), rate, p99, bound]
            + [hourly, usd, {"yes": True, "no": False}.get(mlperf)]
        )
    if not rows:
        return None
    return tables.Table(
        "serving",
        "MLPerf LoadGen scenarios (server: sustained QPS at the bound; offline: samples/sec), "
        f"$ on {money.prices_on(pricing)}",
        [
            "configuration",
            "scenario",
            "LoadGen",
            "trials",
            "rate /s",
            "p99 ms",
            "bound",
            "$/hour",
            "$/1M predictions",
            "MLPerf minimums",
        ],
        rows,
        [
            "configuration",
            "scenario",
            "loadgen_validity",
            "trials",
            "rate_median",
            "latency_p99_seconds_median",
            "latency_bound",
            "usd_per_hour_median",
            "usd_per_million_predictions_median",
            "meets_mlperf_minimums",
        ],
        csv_rows,
        brief=(
            "configuration",
            "LoadGen",
            "rate /s",
            "p99 ms",
            "bound",
            "$/1M predictions",
            "MLPerf minimums",
        ),
        lesser=("bound", "MLPerf minimums"),
    )
