"""What the two stream scenarios share: one query at a time, LoadGen sized by its latency.

LoadGen issues the next query when the last one completes, and sizes its
schedule by the expected latency: the closed loop's p50 at the query's
batch.  A run whose queries ran out before the minimum duration (faster
than that) runs once more, sized by LoadGen's own mean latency.
"""

from __future__ import annotations

from tpubench.core import errors
from tpubench.core.config import ScenarioConfig
from tpubench.run.infer import loadgen_memory, scenario_knobs, scenarios

# The user.conf keys LoadGen reads for a stream: the latency it sizes the run by, and the
# percentile of its early-stopping estimate.
STREAM_KEYS = {
    "target_latency_percentile": scenario_knobs.ConfKey("honoured", scenario_knobs.PERCENT),
    "target_latency": scenario_knobs.ConfKey("expected", scenario_knobs.LATENCY_MS),
}


class Stream(scenarios.Scenario):
    """A stream scenario: one query of `samples(sc)` samples in flight at a time."""

    expected_key = "target_latency"  # the latency LoadGen sizes the run by
    expected_attr = ""  # TestSettings' expected latency of the scenario (ns)
    estimate_percentile = "p99"  # the percentile of LoadGen's early-stopping estimate
    conf_keys = STREAM_KEYS

    def query_batch(self, batches: scenarios.Batches) -> int:
        """The batch one query runs as."""
        raise NotImplementedError

    def samples(self, sc: ScenarioConfig) -> int:
        """Samples in one query (the record's rate is samples over the mean latency)."""
        raise NotImplementedError

    def query_samples(self, s) -> int:
        """Samples in one query as TestSettings S schedules them (LoadGen's memory)."""
        return 1

    def sut_batch(self, batches: scenarios.Batches) -> int:
        return self.query_batch(batches)

    def closed_loop_batches(self, batches: scenarios.Batches) -> list[int]:
        return [self.query_batch(batches)]

    def size_run(self, s, sc: ScenarioConfig, expected: float, qps: float | None) -> None:
        if not sc.expected_from_user_conf:  # else the user.conf's target_latency, read already
            setattr(s, self.expected_attr, max(1, int(expected * 1e9)))

    def run(self, test: scenarios.Test) -> dict:
        sc, harness = test.config, test.harness
        expected = test.closed[self.query_batch(test.batches)]["latency_p50"]
        summary = harness.run(self.settings_for(test, expected), sc.name, self)
        mean = summary.get("mean_latency_seconds")
        # LoadGen sizes a stream's schedule by the expected latency: when its queries ran
        # faster than the closed loop said (a host that got quieter), they ran out before the
        # minimum duration.  Once more, sized by what LoadGen measured, with a fifth to spare.
        if mean and not summary.get("min_duration_met") and not sc.expected_from_user_conf:
            again = self.settings_for(test, 0.8 * mean)
            summary = harness.run(again, f"{sc.name}b", self)
            mean = summary.get("mean_latency_seconds")
        if not mean:
            raise errors.RunInvalidError(f"LoadGen measured no latency in the {sc.name} scenario")
        return {"summary": summary, "rate": self.samples(sc) / mean}

    def schedule(self, s) -> loadgen_memory.Schedule:
        latency = getattr(s, self.expected_attr) / 1e9
        queries = loadgen_memory.count(s, latency=latency)
        sized = f"{s.min_duration_ms / 1e3:g} s at {latency * 1e3:,.4g} ms a query"
        return loadgen_memory.Schedule(queries, queries * self.query_samples(s), sized)

    def headline(self, summary: dict, results: dict, settings: dict, show) -> str:
        lat = summary.get("latency_seconds", {})
        lats = " / ".join(show.latency_ms(lat.get(q)) for q in ("p50", "p90", "p99"))
        rate = show.num(results.get("examples_per_sec"))
        per = settings.get("samples_per_query")
        per = f", {per} samples/query" if per is not None else ""
        estimate = summary.get("early_stopping_latency_seconds")
        if estimate is None:
            return f"{self.name}: latency p50 / p90 / p99 {lats} ms{per} ({rate} samples/sec)"
        return (
            f"{self.name}: {self.estimate_percentile} latency {show.latency_ms(estimate)} ms, "
            f"LoadGen's early-stopping estimate (the MLPerf figure){per}; measured p50 / p90 / "
            f"p99 {lats} ms ({rate} samples/sec)"
        )
