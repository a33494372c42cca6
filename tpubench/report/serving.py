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

from tpubench.core import errors, money
from tpubench.core.config import AdviseConfig
from tpubench.report import group as group_lib
from tpubench.report import load, render, stats, tables


def _median(values) -> float | None:
    iv = stats.median_interval([v for v in values if v is not None])
    return None if iv is None else iv.median


def table(groups: list[group_lib.Group], pricing: str = "on_demand") -> tables.Table | None:
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


@dataclasses.dataclass(frozen=True)
class Option:
    """One server configuration priced for a load."""

    group: group_lib.Group
    machine: str
    qps: float  # sustained by one machine (median over trials)
    machines: int
    usd_per_hour: float  # all machines together
    load_qps: float  # the load asked for
    source: str = ""  # which point of the curve gave qps
    pricing: str = "on_demand"  # the basis of usd_per_hour ('override': --price_per_hour)

    @property
    def usd_per_million(self) -> float:
        """At the load asked for: headroom the last machine does not use is paid for too."""
        return self.usd_per_hour / (self.load_qps * 3600.0) * 1e6


def usable(run: load.Run, cfg: AdviseConfig) -> tuple[float, str] | None:
    """(QPS one machine serves at CFG's bound, how the curve says so), or None.

    The record's curve is read level by level (the runs asked for the same
    QPS: a search probe and its confirmation) in QPS order, up to the first
    level where any run's latency at the percentile went over the bound; the
    highest level before it counts, at the lowest QPS its runs kept.  A
    level LoadGen judged VALID at a bound no looser than CFG's is LoadGen's
    verdict; any other is a measured latency under the bound that LoadGen
    did not judge at this bound, and says so.  A record with no curve (older
    ones) counts only its own VALID result.
    """
    s = run.serving or {}
    if s.get("scenario") != "server":
        return None
    if (s.get("latency_percentile") or 0) < cfg.latency_percentile:
        return None
    bound, want = s.get("latency_bound"), cfg.latency_bound_seconds
    judged = bound is not None and bound <= want
    best = None
    if s.get("validity") == "VALID" and judged:
        best = (run.examples_per_sec, "confirmed run (LoadGen VALID)")
    levels: dict[float, list[dict]] = {}
    for p in s.get("curve") or []:
        levels.setdefault(round(p["target_qps"], 1), []).append(p)
    for target in sorted(levels):
        runs = levels[target]
        if any(p["latency_seconds"] is None for p in runs):
            break  # an overloaded run: no latency was served at this QPS
        worst = max(runs, key=lambda p: p["latency_seconds"])
        if worst["latency_seconds"] > want:
            break
        qps = min(p["qps"] for p in runs)
        if best is not None and qps <= best[0]:
            continue
        if judged and all(p["valid"] for p in runs):
            confirmed = any(p["confirmation"] for p in runs)
            how = "LoadGen VALID " + ("confirmation" if confirmed else "probe")
        else:
            how = (
                f"p{worst['latency_percentile']:g} {worst['latency_seconds'] * 1e3:.3g} ms "
                f"measured at this QPS (LoadGen judged p{s.get('latency_percentile'):g}<="
                f"{(bound or 0) * 1e3:g}ms)"
            )
        best = (qps, how)
    return best


def options(runs: list[load.Run], cfg: AdviseConfig) -> tuple[list[Option], list[str]]:
    """Server configurations whose curves serve CFG's bound, priced for CFG's QPS."""
    notes = []
    fit = {}
    for r in runs:
        found = usable(r, cfg)
        if found is not None:
            fit[r.path] = found
    out = []
    for g in group_lib.group([r for r in runs if r.path in fit]):
        qps = _median(fit[r.path][0] for r in g.runs)
        how = "; ".join(dict.fromkeys(fit[r.path][1] for r in g.runs))
        # Every machine the records were priced as (a CPU run: VMs of its vCPU count).
        # Every machine the records were priced as on the chosen basis: one price each,
        # never a blend of on-demand and spot (load keeps only rows on cfg.pricing).
        names = dict.fromkeys(m.machine for r in g.runs for m in r.machines)
        if not names:
            notes.append(
                f"{g.label}: left out (no {money.basis(cfg.pricing)} price in its records)"
            )
        for name in names:
            priced = [m for r in g.runs for m in r.machines if m.machine == name]
            hourly = _median(m.usd_per_hour for m in priced)
            if not qps or hourly is None:
                notes.append(f"{g.label} as {name}: left out (no price or no sustained QPS)")
                continue
            n = math.ceil(cfg.qps / qps)
            basis = "override" if any(m.pricing == "override" for m in priced) else cfg.pricing
            out.append(Option(g, name or "(override)", qps, n, n * hourly, cfg.qps, how, basis))
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
    loaded = load.load(list(cfg.inputs), cfg.pricing)
    runs = [r for r in loaded.runs if r.dims["model"].split(" [")[0] == cfg.model]
    runs, tuned = tune_winners(runs, cfg.inputs)
    found, notes = options(runs, cfg)
    notes = tuned + notes
    bound = f"p{cfg.latency_percentile:g} <= {cfg.latency_bound_seconds * 1e3:g} ms"
    if not found:
        raise errors.UsageError(
            f"no server-scenario record of {cfg.model} VALID or measured at {bound} in "
            f"{', '.join(cfg.inputs)}; measure one with `tpubench infer --scenario=server "
            f"--latency_bound={cfg.latency_bound_seconds * 1e3:g}ms`"
        )
    columns = (
        "configuration",
        "priced as",
        "QPS per machine",
        "machines",
        "$/hour",
        "$/1M predictions",
        "QPS read from the curve",
    )
    t = tables.Table(
        "serving_advice",
        f"{cfg.model}: serving {cfg.qps:g} queries/sec at {bound} (LoadGen server scenario), "
        f"$ on {money.prices_on(cfg.pricing)}",
        list(columns),
        [
            [_config(o), o.machine, render.num(o.qps), str(o.machines)]
            + [render.money(o.usd_per_hour), render.money(o.usd_per_million), o.source]
            for o in found
        ],
        [],
        [],
        # The source is on the Advice line too: a narrow console keeps the figures.
        brief=columns[:-1],
    )
    best = found[0]
    lines = [
        render.terminal(t),
        f"Advice: {_config(best)} as {best.machine}: {best.machines} machine(s) at "
        f"{render.num(best.qps)} QPS each serve {cfg.qps:g} QPS for "
        f"{render.money(best.usd_per_hour)}/hour on {money.prices_on(best.pricing)} "
        f"(the cheapest of {len(found)}); "
        f"QPS per machine from the curve: {best.source}",
    ]
    short = [o for o in found if not all(r.serving["meets_mlperf_minimums"] for r in o.group.runs)]
    if short:
        lines.append(
            f"  note: {len(short)} configuration(s) were measured with short LoadGen settings "
            "(below MLPerf's minimums)"
        )
    lines += [f"  note: {n}" for n in notes]
    return "\n".join(lines) + "\n"
