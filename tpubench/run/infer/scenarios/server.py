"""`--scenario=server`: Poisson arrivals at a QPS, the highest VALID one searched for.

The SUT batches what arrives (up to --max_batch_size, waiting at most
--batching_window); LoadGen judges each run against the latency bound at its
percentile.  Without --target_qps (or a user.conf target_qps) the QPS is a
bisection below the closed loop's capacity, then confirmed by one more full
run (stepping down while it is INVALID); every run is a point of the
record's latency-QPS-cost curve.
"""

from __future__ import annotations

from tpubench.core import bounds, errors
from tpubench.core.config import ScenarioConfig
from tpubench.run.infer import loadgen_memory, scenario_knobs, scenarios, serving_curve, user_conf
from tpubench.run.infer import server_search as search

_Flag, _Key = scenario_knobs.Flag, scenario_knobs.ConfKey


@scenarios.register
class Server(scenarios.Scenario):
    name = "server"
    loadgen_name = "Server"
    bounded_by_latency = True
    order = 3
    flags = (
        _Flag(
            "target_qps",
            "float",
            None,
            "Poisson arrivals at this many queries/sec; default: search for the highest QPS "
            "whose LoadGen run is VALID.",
            scenario_knobs.QPS,
        ),
        _Flag(
            "latency_bound",
            "duration",
            None,
            "the latency bound at --latency_percentile, e.g. 50ms.",
            scenario_knobs.Range(1e-6, bounds.MAX_DURATION_SECONDS, "seconds"),
        ),
        _Flag(
            "latency_percentile",
            "float",
            None,
            "the percentile the bound applies to (mlperf.conf's: 99, where neither this "
            "nor a --user_conf sets it).",
            scenario_knobs.Range(*bounds.FLAGS["latency_percentile"]),
        ),
        _Flag(
            "batching_window",
            "duration",
            0.002,
            "how long a batch waits for more queries to join it.",
            scenario_knobs.Range(0, bounds.MAX_DURATION_SECONDS, "seconds"),
        ),
        _Flag(
            "qps_search_runs",
            "int",
            6,
            "without --target_qps: LoadGen runs the search for the highest VALID QPS may spend.",
            scenario_knobs.Range(*bounds.FLAGS["qps_search_runs"], whole=True),
            field="search_runs",
        ),
    )
    conf_keys = {
        # LoadGen reads a Server target_latency as whole milliseconds: 0.5 would be a 0 ms bound.
        "target_latency": _Key(
            "flag --latency_bound", scenario_knobs.Range(0.001, scenario_knobs.WEEK_MS, "ms", True)
        ),
        "target_latency_percentile": _Key("flag --latency_percentile", scenario_knobs.PERCENT),
        "target_qps": _Key("flag --target_qps", scenario_knobs.QPS),  # a fixed QPS: no search
        "coalesce_queries": _Key("honoured"),
        "max_async_queries": _Key("honoured"),
        "ttft_latency": _Key(user_conf.NO_TOKENS),
        "tpot_latency": _Key(user_conf.NO_TOKENS),
    }
    bytes_per_query = 640  # 1.25x the 512 first measured; a 1,100,000-query test took 556 B
    rules = (
        scenarios.Rule(
            "server_target_latency_seconds",
            "latency bound",
            "is looser than",
            lambda v: f"{v * 1e3:g} ms",
            scenarios.at_most,
        ),
        scenarios.Rule(
            "server_target_latency_percentile", "bound's percentile", *scenarios.PERCENTILE
        ),
    )

    def batching_window(self, sc: ScenarioConfig) -> float:
        return sc.own.batching_window

    def shed_after(self, sc: ScenarioConfig) -> float | None:
        """Twenty times the latency bound (at least 5 s): a run whose queue is that
        far behind can no longer be VALID, and serving on would only grow the
        backlog for the rest of the minimum duration."""
        if sc.own.latency_bound is None:
            return None
        return max(20.0 * sc.own.latency_bound, 5.0)

    def check(self, given: dict, user: dict) -> None:
        if given.get("latency_bound") is None and "target_latency" not in user:
            raise errors.UsageError(
                f"--scenario={self.name} needs --latency_bound (the p99 a query may take), "
                "e.g. 50ms, or a target_latency line in --user_conf"
            )

    def lay_flags(self, sc: ScenarioConfig, layers) -> dict:
        bound = None if sc.own.latency_bound is None else round(sc.own.latency_bound * 1e9)
        layers.lay(
            "--latency_bound", bound, "server_target_latency_ns", "server_target_latency_seconds"
        )
        pct = sc.own.latency_percentile
        layers.lay(
            "--latency_percentile",
            None if pct is None else pct / 100.0,
            "server_target_latency_percentile",
            "server_target_latency_percentile",
        )
        if sc.own.target_qps is not None:
            layers.given.add("--target_qps")
        s = layers.settings
        return {
            "latency_bound": s.server_target_latency_ns / 1e9,
            "latency_percentile": round(100 * s.server_target_latency_percentile, 4),
            # A user.conf's target_qps is a fixed QPS, as --target_qps is: no search.
            "target_qps": sc.own.target_qps
            if sc.own.target_qps is not None or "target_qps" not in layers.user
            else float(s.server_target_qps),
        }

    def size_run(self, s, sc: ScenarioConfig, expected: float, qps: float | None) -> None:
        search.at(s, qps)

    def run(self, test: scenarios.Test) -> dict:
        sc, closed, b = test.config, test.closed, test.batches
        cap = search.Capacity(
            closed[b.largest]["examples_per_sec"],
            b.largest,
            closed[b.single][search.percentile_key(sc.own.latency_percentile)],
        )
        search.check_server(sc, cap, search.qps_source(test.rules))
        search.check_schedule(sc, test.rules)  # before LoadGen builds its schedule
        found = search.search_server(test.harness, test.lg, test.settings, sc, cap)
        if found["best"] is None:
            raise search.no_valid_qps(sc, found["runs"], found.get("stopped"))
        if sc.own.target_qps is not None:  # no search: the one full run at that QPS is the result
            best = found["best"]
            return {"summary": best, "rate": best.get("scheduled_qps") or sc.own.target_qps}
        check = search.confirm_server(test.harness, test.lg, test.settings, sc, found)
        confirmation = {
            "searched_qps": found["best"].get("target_qps"),
            "tries": [r["run"] for r in check["tries"]],
            "stepped_down_from": check["stepped_down"],
            "validity": (check["confirmed"] or check["tries"][-1]).get("validity"),
        }
        if check["confirmed"] is None:
            raise search.unconfirmed(sc, found["best"], check["tries"])
        best = check["confirmed"]
        rate = best.get("scheduled_qps") or best.get("target_qps")
        return {"summary": best, "rate": rate, "confirmation": confirmation}

    def log_fields(self, detail: dict) -> dict:
        return {
            "scheduled_qps": detail.get("result_scheduled_samples_per_sec"),
            "completed_qps": detail.get("result_completed_samples_per_sec"),
            "overlatency_queries": detail.get("result_overlatency_query_count"),
        }

    def settings_fields(self, sc: ScenarioConfig, rules) -> dict:
        return {
            "latency_bound_seconds": sc.own.latency_bound,
            "latency_percentile": sc.own.latency_percentile,
            "batching_window_seconds": sc.own.batching_window,
            "target_qps": sc.own.target_qps,
            "qps_search": search.qps_search(sc, rules),
        }

    def curve(self, runs: list[dict], sc: ScenarioConfig, prices, accelerators: int):
        return serving_curve.points(runs, sc.own.latency_percentile, prices, accelerators)

    def schedule(self, s) -> loadgen_memory.Schedule:
        rate = float(s.server_target_qps)
        queries = loadgen_memory.count(s, per_second=rate)
        sized = f"{s.min_duration_ms / 1e3:g} s at {rate:,.6g} QPS"
        return loadgen_memory.Schedule(queries, queries, sized, " or a lower --target_qps")

    def plan_text(self, s) -> str:
        seconds, queries = s.min_duration_ms / 1e3, int(s.min_query_count)
        qps = float(s.server_target_qps)
        seconds = max(seconds, queries / qps) if qps > 0 else seconds
        return f"{qps:,.1f} QPS for at least {seconds:,.0f} s ({queries:,} queries at least)"

    def headline(self, summary: dict, results: dict, settings: dict, show) -> str:
        lat = summary.get("latency_seconds", {})
        lats = " / ".join(show.latency_ms(lat.get(q)) for q in ("p50", "p90", "p99"))
        return (
            f"sustained {show.num(results.get('examples_per_sec'))} queries/sec with "
            f"p{settings.get('latency_percentile', 99):g} "
            f"<= {show.latency_ms(settings.get('latency_bound_seconds'))} ms "
            f"(LoadGen's p50 / p90 / p99: {lats} ms; batches up to "
            f"{settings.get('max_batch_size')}, window "
            f"{show.latency_ms(settings.get('batching_window_seconds'))} ms)"
        )
