"""Serving figures from `infer --scenario` records: the report's table and `advise --qps`.

A server-scenario record says how many queries/sec one machine sustained
while LoadGen judged the run VALID at a latency bound.  Serving a load of
Q queries/sec at a bound takes ceil(Q / sustained) such machines, so the
cheapest answer is the configuration with the lowest total $/hour among
those measured at a bound no looser than the one asked for.

A `tpubench tune --objective=serving` directory holds trials at many batch
sizes and batching windows that one group would pool: there only the
tune's winner (its summary file) is priced.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os

from tpubench.core import errors
from tpubench.core.config import AdviseConfig
from tpubench.report import group as group_lib
from tpubench.report import load, render, stats, tables


def _median(values) -> float | None:
    iv = stats.median_interval([v for v in values if v is not None])
    return None if iv is None else iv.median


def table(groups: list[group_lib.Group]) -> tables.Table | None:
    """One row per scenario configuration: LoadGen's verdict, rate, p99 and $ per million."""
    rows, csv_rows = [], []
    for g in groups:
        served = [r.serving for r in g.runs if r.serving]
        if not served:
            continue
        rate = _median(r.examples_per_sec for r in g.runs)
        p99 = _median(s["latency_p99"] for s in served)
        usd = _median(s["usd_per_million"] for s in served)
        hourly = _median(r.usd_per_hour for r in g.runs)
        verdicts = "/".join(sorted({s["validity"] or "?" for s in served}))
        mlperf = all(s["meets_mlperf_minimums"] for s in served)
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
                "yes" if mlperf else "no (short settings)",
            ]
        )
        csv_rows.append(
            [g.label, served[0]["scenario"], verdicts, len(g.runs), rate, p99, bound]
            + [hourly, usd, mlperf]
        )
    if not rows:
        return None
    return tables.Table(
        "serving",
        "MLPerf LoadGen scenarios (server: sustained QPS at the bound; offline: samples/sec)",
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


@dataclasses.dataclass(frozen=True)
class Option:
    """One server configuration priced for a load."""

    group: group_lib.Group
    machine: str
    qps: float  # sustained by one machine (median over trials)
    machines: int
    usd_per_hour: float  # all machines together
    load_qps: float  # the load asked for

    @property
    def usd_per_million(self) -> float:
        """At the load asked for: headroom the last machine does not use is paid for too."""
        return self.usd_per_hour / (self.load_qps * 3600.0) * 1e6


def options(runs: list[load.Run], cfg: AdviseConfig) -> tuple[list[Option], list[str]]:
    """Server configurations VALID at a bound no looser than CFG's, priced for CFG's QPS."""
    notes = []
    fit = []
    for r in runs:
        s = r.serving or {}
        if s.get("scenario") != "server" or s.get("validity") != "VALID":
            continue
        if (s.get("latency_percentile") or 0) < cfg.latency_percentile:
            continue
        if s.get("latency_bound") is None or s["latency_bound"] > cfg.latency_bound_seconds:
            continue
        fit.append(r)
    out = []
    for g in group_lib.group(fit):
        qps = _median(r.examples_per_sec for r in g.runs)
        # Every machine the records were priced as (a CPU run: VMs of its vCPU count).
        names = dict.fromkeys(m.machine for r in g.runs for m in r.machines)
        for name in names:
            hourly = _median(
                m.usd_per_hour for r in g.runs for m in r.machines if m.machine == name
            )
            if not qps or hourly is None:
                notes.append(f"{g.label} as {name}: left out (no price or no sustained QPS)")
                continue
            n = math.ceil(cfg.qps / qps)
            out.append(Option(g, name or "(override)", qps, n, n * hourly, cfg.qps))
    return sorted(out, key=lambda o: o.usd_per_hour), notes


TUNE_SUMMARY = "tune-summary.json.txt"  # written by `tpubench tune` (cli/tune_serving.py)


def tune_winners(runs: list[load.Run], inputs) -> tuple[list[load.Run], list[str]]:
    """RUNS less the serving tunes' other trials: in a directory of INPUTS that holds a
    serving tune's summary, only the winner's records are kept; and a note per tune."""
    keep, drop, notes = set(), [], []
    for item in inputs:
        path = os.path.join(item, TUNE_SUMMARY)
        if "://" in item or not os.path.isfile(path):
            continue
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict) or doc.get("objective") != "serving":
            continue
        win = doc.get("winner") or {}
        drop.append(os.path.abspath(item) + os.sep)
        keep |= {os.path.abspath(os.path.join(item, p)) for p in win.get("records") or []}
        notes.append(
            f"tune winner from {item}: {win.get('name', '?')} (the tune's answer: "
            f"{doc.get('answer') or 'none'}); its other trials are left out"
        )
    if not drop:
        return runs, []
    out = [
        r
        for r in runs
        if os.path.abspath(r.path) in keep
        or not any(os.path.abspath(r.path).startswith(d) for d in drop)
    ]
    return out, notes


def _config(o: Option) -> str:
    machine = o.group.dims["machine"]
    return " · ".join(p for p in o.group.label.split(" · ") if p != machine)


def advise(cfg: AdviseConfig) -> str:
    """The cheapest measured way to serve cfg.qps at p<percentile> <= the bound."""
    loaded = load.load(list(cfg.inputs))
    runs = [r for r in loaded.runs if r.dims["model"].split(" [")[0] == cfg.model]
    runs, tuned = tune_winners(runs, cfg.inputs)
    found, notes = options(runs, cfg)
    notes = tuned + notes
    bound = f"p{cfg.latency_percentile:g} <= {cfg.latency_bound_seconds * 1e3:g} ms"
    if not found:
        raise errors.UsageError(
            f"no VALID server-scenario record of {cfg.model} at {bound} or tighter in "
            f"{', '.join(cfg.inputs)}; measure one with `tpubench infer --scenario=server "
            f"--latency_bound={cfg.latency_bound_seconds * 1e3:g}ms`"
        )
    t = tables.Table(
        "serving_advice",
        f"{cfg.model}: serving {cfg.qps:g} queries/sec at {bound} (LoadGen server scenario)",
        ["configuration", "priced as", "QPS per machine", "machines", "$/hour", "$/1M predictions"],
        [
            [_config(o), o.machine, render.num(o.qps), str(o.machines)]
            + [render.money(o.usd_per_hour), render.money(o.usd_per_million)]
            for o in found
        ],
        [],
        [],
    )
    best = found[0]
    lines = [
        render.terminal(t),
        f"Advice: {_config(best)} as {best.machine}: {best.machines} machine(s) at "
        f"{render.num(best.qps)} QPS each serve {cfg.qps:g} QPS for "
        f"{render.money(best.usd_per_hour)}/hour (the cheapest of {len(found)})",
    ]
    short = [o for o in found if not all(r.serving["meets_mlperf_minimums"] for r in o.group.runs)]
    if short:
        lines.append(
            f"  note: {len(short)} configuration(s) were measured with short LoadGen settings "
            "(below MLPerf's minimums)"
        )
    lines += [f"  note: {n}" for n in notes]
    return "\n".join(lines) + "\n"
