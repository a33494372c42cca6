"""What the two stream scenarios share: one query at a time, LoadGen sized by its latency.

LoadGen issues the next query when the last one completes, and sizes its
schedule by the expected latency: the closed loop's p50 at the query's
batch.  A run whose queries ran out before the minimum duration (faster
than that) runs once more, sized by LoadGen's own mean latency.
"""

from __future__ import annotations

from tpubench.core import errors
from tpubench.core.config import ScenarioConfig
from tpubench.run.infer import scenarios


class Stream(scenarios.Scenario):
    """A stream scenario: one query of `samples(sc)` samples in flight at a time."""

    expected_key = "target_latency"  # the latency LoadGen sizes the run by
    expected_attr = ""  # TestSettings' expected latency of the scenario (ns)

    def query_batch(self, batches: scenarios.Batches) -> int:
        """The batch one query runs as."""
        raise NotImplementedError

    def samples(self, sc: ScenarioConfig) -> int:
        """Samples in one query (the record's rate is samples over the mean latency)."""
        raise NotImplementedError

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
        summary = harness.run(self.settings_for(test, expected), sc.name, sc.name)
        mean = summary.get("mean_latency_seconds")
        # LoadGen sizes a stream's schedule by the expected latency: when its queries ran
        # faster than the closed loop said (a host that got quieter), they ran out before the
        # minimum duration.  Once more, sized by what LoadGen measured, with a fifth to spare.
        if mean and not summary.get("min_duration_met") and not sc.expected_from_user_conf:
            again = self.settings_for(test, 0.8 * mean)
            summary = harness.run(again, f"{sc.name}b", sc.name)
            mean = summary.get("mean_latency_seconds")
        if not mean:
            raise errors.RunInvalidError(f"LoadGen measured no latency in the {sc.name} scenario")
        return {"summary": summary, "rate": self.samples(sc) / mean}
