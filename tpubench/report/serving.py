"""Serving figures from `infer --scenario` records: `advise --qps` (the report's table:
report/serving_table.py).

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

from tpubench.core import errors, money, safe_files
from tpubench.core.basis import Basis
from tpubench.core.config import AdviseConfig
from tpubench.report import group as group_lib
from tpubench.report import load, render, stats, tables


def median(values) -> float | None:
    iv = stats.median_interval([v for v in values if v is not None])
    return None if iv is None else iv.median


def mlperf_text(runs: list[load.Run]) -> str:
    """Whether RUNS keep their model's MLPerf rules: yes, no, or no MLPerf benchmark."""
    verdicts = [r.serving["meets_mlperf_minimums"] for r in runs if r.serving]
    if verdicts and all(v is None for v in verdicts):
        return "no MLPerf benchmark"
    return "yes" if verdicts and all(verdicts) else "no"


@dataclasses.dataclass(frozen=True)
class Option:
    """One server configuration priced for a load."""

    group: group_lib.Group
    machine: str
    qps: float  # sustained by one machine (median over trials)
    machines: int
    usd_per_hour: float  # all machines together
    load_qps: float  # the load asked for
    source: str = ""  # which LoadGen run gave qps (Fit.how)
    pricing: Basis = Basis.ON_DEMAND  # the basis of usd_per_hour ('override': --price_per_hour)

    @property
    def usd_per_million(self) -> float:
        """At the load asked for: headroom the last machine does not use is paid for too."""
        return self.usd_per_hour / (self.load_qps * 3600.0) * 1e6


@dataclasses.dataclass(frozen=True)
class Fit:
    """What one server record says of CFG's bound: a QPS and where it came from, or why not."""

    qps: float | None
    how: str


def usable(run: load.Run, cfg: AdviseConfig) -> Fit | None:
    """The QPS one machine serves at CFG's bound by RUN's LoadGen verdicts (None: no server record).

    Only LoadGen's VALID counts, and only at a bound no looser (and a
    percentile no lower) than CFG's: a VALID at a looser bound says nothing
    of CFG's, and a latency under the bound in an INVALID run is no verdict.
    A search probe is one sample of a noisy machine; MLPerf's result is the
    confirmation run.  So the QPS is the highest VALID point at a QPS no
    higher than a VALID confirmation's (or than the run at a given
    --target_qps, which is the result itself), which in practice is that
    confirmation.  A record with no curve (older ones) counts its own VALID
    result.
    """
    s = run.serving or {}
    if not s.get("bounded_by_latency"):
        return None
    bound, pct = s.get("latency_bound"), s.get("latency_percentile")
    asked = f"p{cfg.latency_percentile:g}<={cfg.latency_bound_seconds * 1e3:g}ms"
    if bound is None:
        return Fit(None, "no latency bound recorded")
    judged = f"p{99 if pct is None else pct:g}<={bound * 1e3:g}ms"
    if bound > cfg.latency_bound_seconds or (pct or 99.0) < cfg.latency_percentile:
        return Fit(None, f"LoadGen judged it at {judged}, looser than the {asked} asked")
    busy = s.get("busy_host")
    if busy and not cfg.allow_busy:
        return Fit(
            None,
            f"measured on a busy host ({busy}); run it again on a quiet machine, or pass "
            "--allow_busy to size from it",
        )
    curve = s.get("curve") or []
    if not curve:
        if s.get("validity") == "VALID" and run.examples_per_sec:
            return Fit(run.examples_per_sec, f"the record's result, LoadGen VALID at {judged}")
        return Fit(None, f"its result is LoadGen {s.get('validity') or 'unjudged'}")
    result = s.get("result_run")
    backed = [p for p in curve if p["valid"] and (p["confirmation"] or p["run"] == result)]
    failed = sorted({p["target_qps"] for p in curve if p["confirmation"] and not p["valid"]})
    if not backed:
        probes = sum(p["valid"] for p in curve)
        why = (
            f"its {probes} VALID point(s) are search probes and no confirmation run was VALID"
            if probes
            else "no run was LoadGen VALID"
        )
        if failed:
            why += f" (confirmations INVALID at {_qps_list(failed)} QPS)"
        return Fit(None, why)
    best = max(backed, key=lambda p: (p["target_qps"], -p["qps"]))
    kind = "confirmation" if best["confirmation"] else "run at the given --target_qps"
    how = f"LoadGen VALID {kind} ({best['run']}) at {judged}"
    if busy:  # --allow_busy: used, and said
        how += f"; on a busy host ({busy})"
    above = [q for q in failed if q > best["target_qps"]]
    if above:
        how += f"; the confirmation(s) at {_qps_list(above)} QPS were INVALID"
    return Fit(best["qps"], how)


def _qps_list(values) -> str:
    return ", ".join(render.num(v) for v in values)


def options(runs: list[load.Run], cfg: AdviseConfig) -> tuple[list[Option], list[str]]:
    """Server configurations whose LoadGen verdicts serve CFG's bound, priced for CFG's QPS.

    The notes say which server records were not used, and why.
    """
    notes = []
    fit = {}
    for r in runs:
        found = usable(r, cfg)
        if found is None:
            continue
        if found.qps:
            fit[r.path] = found
        else:
            notes.append(f"{os.path.basename(r.path)} not used: {found.how}")
    out = []
    for g in group_lib.group([r for r in runs if r.path in fit]):
        qps = median(fit[r.path].qps for r in g.runs)
        how = "; ".join(dict.fromkeys(fit[r.path].how for r in g.runs))
        # Every machine the records were priced as on the chosen basis (a CPU run: VMs of
        # its vCPU count): one price each,
        # never a blend of on-demand and spot (load keeps only rows on cfg.pricing).
        names = dict.fromkeys(m.machine for r in g.runs for m in r.machines)
        if not names:
            notes.append(
                f"{g.label}: left out (no {money.basis(cfg.pricing)} price in its records)"
            )
        for name in names:
            priced = [m for r in g.runs for m in r.machines if m.machine == name]
            hourly = median(m.usd_per_hour for m in priced)
            if not qps or hourly is None:
                notes.append(f"{g.label} as {name}: left out (no price or no sustained QPS)")
                continue
            n = math.ceil(cfg.qps / qps)
            basis = Basis.OVERRIDE if Basis.OVERRIDE in {m.pricing for m in priced} else cfg.pricing
            out.append(Option(g, name or "(override)", qps, n, n * hourly, cfg.qps, how, basis))
    return sorted(out, key=lambda o: o.usd_per_hour), notes


TUNE_SUMMARY = "tune-summary.json.txt"  # written by `tpubench tune` (cli/tune_serving.py)


def tune_winners(runs: list[load.Run], inputs) -> tuple[list[load.Run], list[str]]:
    """RUNS less the serving tunes' other trials: in a directory of INPUTS that holds a
    serving tune's summary, only the winner's records are kept; and a note per tune."""
    keep, drop, notes = set(), [], []
    for item in inputs:
        path = os.path.join(item, TUNE_SUMMARY)
        if "://" in item or not os.path.isdir(item):
            continue
        try:
            doc = json.loads(safe_files.read_text(path, "", 16 << 20, "the summary tune writes"))
        except (safe_files.Unreadable, ValueError):  # none: not a serving tune's directory
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
        why = "; ".join(notes[:3]) + (f"; {len(notes) - 3} more" if len(notes) > 3 else "")
        raise errors.UsageError(
            f"no server-scenario record of {cfg.model} with a LoadGen VALID confirmation at "
            f"{bound} in {', '.join(cfg.inputs)}{f' ({why})' if why else ''}; measure one with "
            f"`tpubench infer --scenario=server "
            f"--latency_bound={cfg.latency_bound_seconds * 1e3:g}ms`"
        )
    columns = (
        "configuration",
        "priced as",
        "QPS per machine",
        "machines",
        "$/hour",
        "$/1M predictions",
        "QPS per machine from",
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
        f"(the cheapest of {len(found)}); QPS per machine: {best.source}",
    ]
    verdicts = [r.serving["meets_mlperf_minimums"] for o in found for r in o.group.runs]
    below = [o for o in found if mlperf_text(o.group.runs) == "no"]
    if all(v is None for v in verdicts):
        lines.append(
            f"  note: {cfg.model} has no MLPerf Inference benchmark: MLPerf's rules do not apply"
        )
    elif below:
        lines.append(
            f"  note: {len(below)} configuration(s) were measured below MLPerf's rules for "
            f"{cfg.model} (their records' notes say which): not submittable results"
        )
    lines += [f"  note: {n}" for n in notes]
    return "\n".join(lines) + "\n"
