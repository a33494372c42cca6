"""The server scenario's QPS search: bisection below the closed loop, descent, confirmation.

`scenarios/server.py` (the plug-in) runs it; here are the steps, each a
LoadGen test through the harness, and the one-line errors when no QPS is
VALID.  The server's own settings are `sc.own` (its declared flags).
"""

from __future__ import annotations

import dataclasses
import math

from tpubench.core import bounds, errors
from tpubench.core.config import ScenarioConfig


@dataclasses.dataclass(frozen=True)
class Capacity:
    """Closed-loop figures the server scenario is checked against."""

    qps: float  # closed-loop predictions/sec at the largest batch
    batch: int
    single_latency: float  # closed-loop latency at batch 1, at the bound's percentile


def check_schedule(sc: ScenarioConfig, rules) -> None:
    """Refuses a server run whose query schedule would not fit in memory (before LoadGen starts).

    LoadGen schedules at least min_query_count queries, and target_qps x
    min_duration of them when that is more.
    """
    if sc.own.target_qps is None:
        return
    eff = rules.effective
    queries = max(eff["min_query_count"], sc.own.target_qps * eff["min_duration_seconds"])
    name = qps_source(rules)
    bounds.check_memory(
        queries * sc.plugin.bytes_per_query,
        f"LoadGen's query schedule ({queries:,.0f} queries at {name}={sc.own.target_qps:g})",
        f"give a lower {name} or a shorter --min_duration",
    )


def qps_source(rules) -> str:
    """Where the server's fixed QPS came from: --target_qps, or the user.conf's target_qps."""
    keys = getattr(rules, "user_conf_keys", None) or {}
    honoured = (keys.get("target_qps") or {}).get("use") == "honoured"
    return "the user.conf's target_qps" if honoured else "--target_qps"


def check_server(sc: ScenarioConfig, cap: Capacity, qps_name: str = "--target_qps") -> None:
    """One-line errors for a bound no batch meets and a target QPS out of reach."""
    if cap.single_latency > sc.own.latency_bound:
        raise errors.UsageError(
            f"--latency_bound={_ms(sc.own.latency_bound)}: no batch meets it; a single query "
            f"alone takes {cap.single_latency * 1e3:.3g}ms at p{sc.own.latency_percentile:g} "
            "(closed loop, "
            "batch 1); raise the bound"
        )
    if sc.own.target_qps is not None and sc.own.target_qps > cap.qps:
        raise errors.UsageError(
            f"{qps_name}={sc.own.target_qps:g} is out of reach: this device predicts at most "
            f"{cap.qps:,.1f}/sec (closed loop, batch {cap.batch}); lower {qps_name}, "
            "or give none to search for the highest VALID one"
        )


# When every run of the bisection was INVALID (a busy machine, whose latency tail
# the closed loop did not see): up to DESCENT_RUNS more, each at DESCENT of the lowest
# QPS so far, while above MIN_QPS, until one is VALID.
DESCENT_RUNS, DESCENT, MIN_QPS = 4, 0.25, 1.0


def search_server(harness, lg, s, sc: ScenarioConfig, cap: Capacity) -> dict:
    """The highest QPS whose LoadGen run is VALID: bisection below the closed-loop capacity.

    An INVALID run lowers the upper end to the QPS LoadGen saw completed,
    when that is lower than the QPS asked for (the SUT fell behind).  A
    bisection with no VALID run goes on down (`descend`) before it gives up.

    With --target_qps, one run at it.  Returns {"best": summary or None, "runs": [...],
    "stopped": why the search gave up, when it found nothing}
    """
    if sc.own.target_qps is not None:
        summary = harness.run(at(s, sc.own.target_qps), "server-target", sc.plugin)
        return {"best": summary if summary["valid"] else None, "runs": harness.runs}
    low, high, best = 0.0, cap.qps, None
    qps = cap.qps / 2
    for i in range(sc.own.search_runs):
        summary = harness.run(at(s, qps), f"server-{i + 1}", sc.plugin)
        if summary["valid"]:
            low, best = qps, summary
        else:
            # A SUT that fell behind completed fewer queries than were sent:
            # no QPS above what it completed can be VALID.
            high = max(low, min(qps, summary.get("completed_qps") or qps))
        # LoadGen rounds QPS to 0.1; stop once the interval is that narrow.
        if high - low < 0.2:
            break
        qps = round((low + high) / 2, 1)
    if best is None:
        return descend(harness, s, sc, qps)
    return {"best": best, "runs": harness.runs}


def descend(harness, s, sc: ScenarioConfig, last: float) -> dict:
    """After a bisection with no VALID run: lower QPS, a quarter at a time, from LAST
    (the next the bisection would have tried), up to DESCENT_RUNS runs and not below
    MIN_QPS.  The first VALID run is the best; none: {"best": None, "stopped": why}."""
    qps = last
    for i in range(DESCENT_RUNS):
        if qps < MIN_QPS:
            why = f"the next, {qps:g} QPS, is below {MIN_QPS:g} QPS"
            return {"best": None, "runs": harness.runs, "stopped": why}
        summary = harness.run(at(s, qps), f"server-low-{i + 1}", sc.plugin)
        if summary["valid"]:
            return {"best": summary, "runs": harness.runs}
        qps = round(DESCENT * min(qps, summary.get("completed_qps") or qps), 1)
    why = f"{DESCENT_RUNS} runs below the bisection, each a quarter of the QPS before"
    return {"best": None, "runs": harness.runs, "stopped": why}


def at(s, qps: float):
    """TestSettings S for a run at QPS (server.Server.size_run)."""
    s.server_target_qps = float(qps)
    return s


# Confirmation runs a server result may take: the chosen QPS, then lower ones.  On a
# shared 2-core host three were sometimes all INVALID (the load changes within seconds).
CONFIRM_TRIES = 4
# A step down goes to a VALID probe at most MIN_STEP of the QPS that failed, else to
# STEP_DOWN of it: four tries then span at least a third of the range below.
MIN_STEP = 0.9
STEP_DOWN = 0.8


def confirm_server(harness, lg, s, sc: ScenarioConfig, found: dict) -> dict:
    """MLPerf's result: one more full run at the QPS the search chose; its verdict counts.

    A search probe is one sample of a noisy machine, so the chosen QPS is run
    again.  If that run is INVALID the result steps down (to the highest
    VALID probe at least 10% lower, else 20% lower) and is run again, at
    most CONFIRM_TRIES times.  Returns {"confirmed": summary or None, "tries": [summaries],
    "stepped_down": [QPS that failed]}.
    """
    best = found["best"]
    valid = sorted(
        {r["target_qps"] for r in found["runs"] if r.get("valid") and r.get("target_qps")},
        reverse=True,
    )
    qps = best["target_qps"]
    tries, failed = [], []
    for i in range(CONFIRM_TRIES):
        summary = harness.run(at(s, qps), f"confirm-{i + 1}", sc.plugin)
        summary["confirmation"] = True
        tries.append(summary)
        if summary["valid"]:
            return {"confirmed": summary, "tries": tries, "stepped_down": failed}
        failed.append(qps)
        lower = [q for q in valid if q <= MIN_STEP * qps]
        qps = lower[0] if lower else round(STEP_DOWN * qps, 1)
        if qps <= 0:
            break
    return {"confirmed": None, "tries": tries, "stepped_down": failed}


def no_valid_qps(sc: ScenarioConfig, runs: list[dict], stopped: str | None = None):
    """No run VALID: one line with the lowest QPS tried, what LoadGen said of it, and why
    the search stopped there (a UsageError: exit 2)."""
    lowest = min(runs, key=lambda r: r.get("target_qps") or math.inf)
    where = f" (the search stopped: {stopped})" if stopped else ""
    busy = f"; busy host: {lowest['busy_host']}" if lowest.get("busy_host") else ""
    return errors.UsageError(
        f"--latency_bound={_ms(sc.own.latency_bound)} at p{sc.own.latency_percentile:g}: "
        f"no QPS tried was VALID in {len(runs)} LoadGen run(s); at the lowest, "
        f"{lowest.get('target_qps')} QPS{where}, LoadGen said: "
        f"{lowest.get('invalid_reason') or lowest.get('validity')}{busy}"
    )


def unconfirmed(sc: ScenarioConfig, best: dict, tries: list[dict]) -> errors.UsageError:
    """No confirmation run at or below the searched QPS was VALID (like no_valid_qps: exit 2)."""
    asked = ", ".join(f"{r.get('target_qps')}" for r in tries)
    last = tries[-1]
    return errors.UsageError(
        f"the search's best QPS ({best.get('target_qps')}) was not confirmed at "
        f"--latency_bound={_ms(sc.own.latency_bound)}: the confirmation runs at {asked} QPS were "
        f"all INVALID (last: {last.get('invalid_reason') or last.get('validity')}); "
        "the machine's load changed during the search, or the bound is at its edge"
    )


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:g}ms"


def percentile_key(percentile: float) -> str:
    """The closed-loop latency key nearest the bound's percentile (p50, p90 or p99)."""
    return "latency_p99" if percentile > 90 else "latency_p90" if percentile > 50 else "latency_p50"


def qps_search(sc: ScenarioConfig, rules) -> str:
    if sc.own.target_qps is None:
        return "bisection"
    if qps_source(rules) == "--target_qps":
        return "given --target_qps"
    return "given by the user.conf's target_qps"
