"""`--scenario=offline`: one query holding every sample, the median of a few runs.

LoadGen sizes the one query from the expected QPS (the closed loop's rate at
the largest batch, or LoadGen's own from the run before); the SUT serves it
in batches of --max_batch_size.  The record's rate is the median of
--offline_runs results, beside the closed loop's at the same batch.
"""

from __future__ import annotations

from tpubench.core import bounds
from tpubench.core.config import ScenarioConfig
from tpubench.run.infer import loadgen_memory, scenario_knobs, scenarios


@scenarios.register
class Offline(scenarios.Scenario):
    name = "offline"
    loadgen_name = "Offline"
    one_query = True
    order = 4
    expected_key = "target_qps"  # the QPS LoadGen sizes the one query by
    flags = (
        scenario_knobs.Flag(
            "offline_runs",
            "int",
            3,
            "LoadGen results the record's median and spread are taken over.",
            scenario_knobs.Range(*bounds.FLAGS["offline_runs"], whole=True),
        ),
    )
    conf_keys = {"target_qps": scenario_knobs.ConfKey("expected", scenario_knobs.QPS)}
    bytes_per_query, bytes_per_sample = 0, 560

    def closed_loop_batches(self, batches: scenarios.Batches) -> list[int]:
        return [batches.largest]

    def size_run(self, s, sc: ScenarioConfig, expected: float, qps: float | None) -> None:
        _expect(s, sc, expected)

    def run(self, test: scenarios.Test) -> dict:
        sc, largest = test.config, test.batches.largest
        closed_rate = test.closed[largest]["examples_per_sec"]
        found = run_offline(test.harness, test.lg, test.settings, sc, closed_rate)
        rates = [r.get("samples_per_sec") for r in found["results"]]
        repeats = spread(rates) | {
            "runs_used": [r["run"] for r in found["results"]],
            "samples_per_sec": rates,
            "validity": [r.get("validity") for r in found["results"]],
        }
        return {
            "summary": found["median"],
            "rate": repeats.get("median"),
            "offline_repeats": repeats,
        }

    def log_fields(self, detail: dict) -> dict:
        return {"samples_per_sec": detail.get("result_samples_per_second")}

    def latency_results(self, summary: dict, out: dict, test: scenarios.Test) -> dict:
        # One query holds every sample: these are times since that query was
        # issued, not per-batch latencies, and are kept under their own name.
        lat = summary.get("latency_seconds", {})
        return {
            "offline_sample_completion_seconds": {p: lat.get(p) for p in ("p50", "p90", "p99")},
            "cross_check": _cross_check(out["offline_repeats"], test.closed[test.batches.largest]),
        }

    def settings_fields(self, sc: ScenarioConfig, rules) -> dict:
        return {"offline_runs": sc.own.offline_runs}

    def schedule(self, s) -> loadgen_memory.Schedule:
        rate = float(s.offline_expected_qps)
        samples = loadgen_memory.count(s, per_second=rate)
        sized = f"{s.min_duration_ms / 1e3:g} s at an expected {rate:,.6g} samples/s"
        return loadgen_memory.Schedule(1, samples, sized)

    def headline(self, summary: dict, results: dict, settings: dict, show) -> str:
        return (
            f"offline: {show.num(results.get('examples_per_sec'))} samples/sec, the median of "
            f"{settings.get('offline_runs') or 1} LoadGen run(s) (batch "
            f"{settings.get('max_batch_size')})"
        )


def _expect(s, sc: ScenarioConfig, rate: float):
    """TestSettings S sized by RATE (samples/sec), unless the user.conf set the expected QPS."""
    if not sc.expected_from_user_conf:
        s.offline_expected_qps = float(rate)
    return s


def run_offline(harness, lg, s, sc: ScenarioConfig, closed_rate: float) -> dict:
    """sc.own.offline_runs offline results; each at the last rate, once more if it ran short.

    LoadGen sizes the single offline query from the expected QPS: a faster
    SUT finishes before the minimum duration and LoadGen calls it INVALID,
    so a short run is repeated, sized by LoadGen's own rate (not when the
    user.conf set the expected QPS: its value is kept).  Returns
    {"median": the median result's summary, "results": every result's}.
    """
    results, rate = [], closed_rate
    for i in range(sc.own.offline_runs):
        name = f"offline-{i + 1}"
        summary = harness.run(_expect(s, sc, rate), name, sc.plugin)
        resize = not sc.expected_from_user_conf  # the user.conf's target_qps is kept
        if resize and not summary.get("min_duration_met") and summary.get("samples_per_sec"):
            rate = 1.25 * summary["samples_per_sec"]
            summary = harness.run(_expect(s, sc, rate), f"{name}b", sc.plugin)
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


def _cross_check(repeats: dict, closed: dict) -> dict:
    """Offline LoadGen throughput (every repeat) beside the closed loop's at the same batch."""
    mine = closed["examples_per_sec"]
    rates = [r for r in repeats.get("samples_per_sec", []) if r]
    ratios = [r / mine for r in rates] if mine else []
    return {
        "batch_size": closed["batch_size"],
        "loadgen_samples_per_sec": repeats.get("median"),
        "loadgen_runs": len(rates),
        "closed_loop_examples_per_sec": mine,
        "ratio": (repeats["median"] / mine) if repeats.get("median") and mine else None,
        "ratio_min": min(ratios) if ratios else None,
        "ratio_max": max(ratios) if ratios else None,
    }
