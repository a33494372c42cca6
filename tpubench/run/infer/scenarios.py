"""MLPerf LoadGen scenarios: settings, one LoadGen run, the server's QPS search.

LoadGen (the `loadgen` extra, `mlcommons-loadgen`) issues the queries,
times them and judges the run VALID or INVALID; tpubench only serves them
(`loadgen_sut.Batcher`) and keeps what LoadGen wrote.  The closed-loop
figures measured just before (tpubench's own timing) give LoadGen its
expected latency or QPS, bound the QPS search, and stand beside LoadGen's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import shutil
import tempfile
import time

from tpubench.core import bounds, errors
from tpubench.core.config import ScenarioConfig
from tpubench.run import interrupts
from tpubench.run.infer import loadgen_conf, loadgen_log, loadgen_memory, signal_watch


def import_loadgen(scenario: str):
    """The `mlperf_loadgen` module, or a one-line error saying how to install it."""
    try:
        import mlperf_loadgen
    except ImportError:
        raise errors.UsageError(
            f"--scenario={scenario} runs MLPerf LoadGen, which is not installed: "
            "pip install 'tpubench[loadgen]' (the mlcommons-loadgen package)"
        ) from None
    return mlperf_loadgen


class Harness:
    """One SUT and QSL, run through LoadGen as many times as a search needs.

    Each run's summary and detail logs are kept beside the record through
    KEEP(name, data bytes) -> path.
    """

    def __init__(self, lg, batcher, samples_count: int, keep):
        self._lg = lg
        self.batcher = batcher
        self._keep = keep
        self._sut = lg.ConstructSUT(batcher.issue_query, batcher.flush_queries)
        # Every sample is already in host memory: loading and unloading are no-ops.
        self._qsl = lg.ConstructQSL(samples_count, samples_count, _noop, _noop)
        self.runs: list[dict] = []
        self.workdir: str | None = None  # LoadGen's log directory while a test runs

    def run(self, test_settings, name: str, scenario: str) -> dict:
        """One LoadGen test; LoadGen's summary of it, with where its logs were kept."""
        loadgen_memory.check(self._lg, test_settings, name)  # before LoadGen schedules it
        workdir = tempfile.mkdtemp(prefix="tpubench-loadgen-")
        try:
            log = self._lg.LogSettings()
            log.log_output.outdir = workdir
            log.log_output.copy_summary_to_stdout = False
            log.enable_trace = False
            self.batcher.reset_counts()
            t0 = time.perf_counter()
            self.workdir = workdir
            signals = interrupts.current()
            # Signals are only noted while LoadGen runs: raised inside one of its
            # callbacks they would abort the process (the SUT acts on them).
            quiet = signals.quiet() if signals is not None else contextlib.nullcontext()
            with quiet, signal_watch.watching(signals, self.batcher.act_on_signal):
                self._lg.StartTestWithLogSettings(self._sut, self._qsl, test_settings, log)
            wall = time.perf_counter() - t0
            if self.batcher.error is not None:
                raise self.batcher.error
            summary = loadgen_log.summarize(loadgen_log.read_detail(workdir), scenario)
            shed = self.batcher.overloaded
            if shed is not None:
                # The SUT stopped serving: LoadGen's verdict and latencies of
                # this run describe unserved queries and are not used.
                served_qps = shed["served"] / max(shed["after_seconds"], 1e-9)
                summary |= {
                    "overloaded": shed,
                    "loadgen_validity": summary.get("validity"),
                    "valid": False,
                    "validity": "OVERLOADED",
                    "invalid_reason": (
                        f"the queue's oldest query waited {shed['oldest_wait_seconds']:.1f} s "
                        f"after {shed['after_seconds']:.1f} s ({shed['backlog']:,} queued): "
                        "tpubench stopped serving this run; its LoadGen figures are not used"
                    ),
                    "completed_qps": served_qps,
                }
            # LoadGen's whole test, its own start-up and drain included: what a
            # machine is paid for while the scenario runs (the record's cost).
            summary["wall_seconds"] = wall
            kept = []
            for file in (loadgen_log.SUMMARY, loadgen_log.DETAIL):
                with open(os.path.join(workdir, file), "rb") as f:
                    kept.append(self._keep(f"{name}/{file}", f.read()))
            summary["logs"] = kept
        finally:
            self.workdir = None
            shutil.rmtree(workdir, ignore_errors=True)
        summary["run"] = name
        sizes = sorted(self.batcher.batch_sizes.items())
        summary["sut_batch_sizes"] = {str(k): v for k, v in sizes}
        self.runs.append(summary)
        return summary

    def close(self) -> None:
        self._lg.DestroyQSL(self._qsl)
        self._lg.DestroySUT(self._sut)
        self.batcher.close()


def _noop(_indices) -> None:
    pass


@dataclasses.dataclass(frozen=True)
class Capacity:
    """Closed-loop figures the server scenario is checked against."""

    qps: float  # closed-loop predictions/sec at the largest batch
    batch: int
    single_latency: float  # closed-loop latency at batch 1, at the bound's percentile


# LoadGen keeps a record per query it schedules (its metadata, the samples'
# indices, the response times): measured in loadgen_memory.py.
SCHEDULE_BYTES_PER_QUERY = loadgen_memory.PER_QUERY["Server"]


def check_schedule(sc: ScenarioConfig, rules) -> None:
    """Refuses a server run whose query schedule would not fit in memory (before LoadGen starts).

    LoadGen schedules at least min_query_count queries, and target_qps x
    min_duration of them when that is more.
    """
    if sc.name != "server" or sc.target_qps is None:
        return
    eff = rules.effective
    queries = max(eff["min_query_count"], sc.target_qps * eff["min_duration_seconds"])
    name = qps_source(rules)
    bounds.check_memory(
        queries * SCHEDULE_BYTES_PER_QUERY,
        f"LoadGen's query schedule ({queries:,.0f} queries at {name}={sc.target_qps:g})",
        f"give a lower {name} or a shorter --min_duration",
    )


def qps_source(rules) -> str:
    """Where the server's fixed QPS came from: --target_qps, or the user.conf's target_qps."""
    keys = getattr(rules, "user_conf_keys", None) or {}
    honoured = (keys.get("target_qps") or {}).get("use") == "honoured"
    return "the user.conf's target_qps" if honoured else "--target_qps"


def check_server(sc: ScenarioConfig, cap: Capacity, qps_name: str = "--target_qps") -> None:
    """One-line errors for a bound no batch meets and a target QPS out of reach."""
    if cap.single_latency > sc.latency_bound:
        raise errors.UsageError(
            f"--latency_bound={_ms(sc.latency_bound)}: no batch meets it; a single query "
            f"alone takes {cap.single_latency * 1e3:.3g}ms at p{sc.latency_percentile:g} "
            "(closed loop, "
            "batch 1); raise the bound"
        )
    if sc.target_qps is not None and sc.target_qps > cap.qps:
        raise errors.UsageError(
            f"{qps_name}={sc.target_qps:g} is out of reach: this device predicts at most "
            f"{cap.qps:,.1f}/sec (closed loop, batch {cap.batch}); lower {qps_name}, "
            "or give none to search for the highest VALID one"
        )


def search_server(harness: Harness, lg, s, sc: ScenarioConfig, cap: Capacity) -> dict:
    """The highest QPS whose LoadGen run is VALID: bisection below the closed-loop capacity.

    An INVALID run lowers the upper end to the QPS LoadGen saw completed,
    when that is lower than the QPS asked for (the SUT fell behind).

    With --target_qps, one run at it.  Returns {"best": summary or None, "runs": [...]}
    """
    if sc.target_qps is not None:
        summary = harness.run(_server(lg, s, sc, sc.target_qps), "server-target", "server")
        return {"best": summary if summary["valid"] else None, "runs": harness.runs}
    low, high, best = 0.0, cap.qps, None
    qps = cap.qps / 2
    for i in range(sc.search_runs):
        summary = harness.run(_server(lg, s, sc, qps), f"server-{i + 1}", "server")
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
    return {"best": best, "runs": harness.runs}


def _server(lg, s, sc: ScenarioConfig, qps: float):
    return loadgen_conf.for_run(lg, s, sc, 0.0, qps)


# Confirmation runs a server result may take: the chosen QPS, then lower ones.  On a
# shared 2-core host three were sometimes all INVALID (the load changes within seconds).
CONFIRM_TRIES = 4
# A step down goes to a VALID probe at most MIN_STEP of the QPS that failed, else to
# STEP_DOWN of it: four tries then span at least a third of the range below.
MIN_STEP = 0.9
STEP_DOWN = 0.8


def confirm_server(harness: Harness, lg, s, sc: ScenarioConfig, found: dict) -> dict:
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
        summary = harness.run(_server(lg, s, sc, qps), f"confirm-{i + 1}", "server")
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


def run_offline(harness: Harness, lg, s, sc: ScenarioConfig, closed_rate: float) -> dict:
    """sc.offline_runs offline results; each at the last rate, once more if it ran short.

    LoadGen sizes the single offline query from the expected QPS: a faster
    SUT finishes before the minimum duration and LoadGen calls it INVALID,
    so a short run is repeated, sized by LoadGen's own rate (not when the
    user.conf set the expected QPS: its value is kept).  Returns
    {"median": the median result's summary, "results": every result's}.
    """
    results, rate = [], closed_rate
    for i in range(sc.offline_runs):
        name = f"offline-{i + 1}"
        summary = harness.run(loadgen_conf.for_run(lg, s, sc, rate), name, "offline")
        resize = not sc.expected_from_user_conf  # the user.conf's target_qps is kept
        if resize and not summary.get("min_duration_met") and summary.get("samples_per_sec"):
            rate = 1.25 * summary["samples_per_sec"]
            summary = harness.run(loadgen_conf.for_run(lg, s, sc, rate), f"{name}b", "offline")
        results.append(summary)
        rate = summary.get("samples_per_sec") or rate
    ranked = sorted(results, key=lambda r: r.get("samples_per_sec") or 0.0)
    return {"median": ranked[(len(ranked) - 1) // 2], "results": results}


def spread(values: list[float]) -> dict:
    """Median, min, max and (max - min) / median of VALUES (the offline repeats)."""
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return {}
    n = len(vals)
    median = vals[n // 2] if n % 2 else (vals[n // 2 - 1] + vals[n // 2]) / 2
    return {
        "runs": n,
        "median": median,
        "min": vals[0],
        "max": vals[-1],
        "relative_spread": (vals[-1] - vals[0]) / median if median else None,
    }


def no_valid_qps(sc: ScenarioConfig, runs: list[dict]) -> errors.UsageError:
    lowest = min(runs, key=lambda r: r.get("target_qps") or math.inf)
    return errors.UsageError(
        f"--latency_bound={_ms(sc.latency_bound)} at p{sc.latency_percentile:g}: no QPS tried "
        f"was VALID in {len(runs)} LoadGen run(s); at the lowest, "
        f"{lowest.get('target_qps')} QPS, LoadGen said: "
        f"{lowest.get('invalid_reason') or lowest.get('validity')}"
    )


def unconfirmed(sc: ScenarioConfig, best: dict, tries: list[dict]) -> errors.UsageError:
    """No confirmation run at or below the searched QPS was VALID (like no_valid_qps: exit 2)."""
    asked = ", ".join(f"{r.get('target_qps')}" for r in tries)
    last = tries[-1]
    return errors.UsageError(
        f"the search's best QPS ({best.get('target_qps')}) was not confirmed at "
        f"--latency_bound={_ms(sc.latency_bound)}: the confirmation runs at {asked} QPS were "
        f"all INVALID (last: {last.get('invalid_reason') or last.get('validity')}); "
        "the machine's load changed during the search, or the bound is at its edge"
    )


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:g}ms"
