"""`--scenario=single_stream`: one sample a query, the next issued when it completes.

MLPerf's figure is LoadGen's early-stopping estimate of the p90 latency.
"""

from __future__ import annotations

from tpubench.core.config import ScenarioConfig
from tpubench.run.infer import loadgen_log, scenarios
from tpubench.run.infer.scenarios import stream


@scenarios.register
class SingleStream(stream.Stream):
    name = "single_stream"
    loadgen_name = "SingleStream"
    order = 1
    expected_attr = "single_stream_expected_latency_ns"
    estimate_percentile = "p90"
    rules = (
        scenarios.Rule(
            "single_stream_target_latency_percentile", "latency percentile", *scenarios.PERCENTILE
        ),
    )

    def query_batch(self, batches: scenarios.Batches) -> int:
        return batches.single

    def samples(self, sc: ScenarioConfig) -> int:
        return 1

    def log_fields(self, detail: dict) -> dict:
        return {
            "qps_with_loadgen_overhead": detail.get("result_qps_with_loadgen_overhead"),
            "early_stopping_latency_seconds": loadgen_log.seconds(
                detail.get("early_stopping_latency_ss")
            ),
        }
