"""`--scenario=multi_stream`: queries of --samples_per_query samples, one at a time.

A query's latency is that of its slowest sample; MLPerf's figure is
LoadGen's early-stopping estimate of the p99 per-query latency.
"""

from __future__ import annotations

from tpubench.core import bounds
from tpubench.core.config import ScenarioConfig
from tpubench.run.infer import loadgen_log, scenario_knobs, scenarios
from tpubench.run.infer.scenarios import stream


@scenarios.register
class MultiStream(stream.Stream):
    name = "multi_stream"
    loadgen_name = "MultiStream"
    order = 2
    expected_attr = "multi_stream_expected_latency_ns"
    latency_log_key = "result_{}_percentile_per_query_latency_ns"
    bytes_per_sample = 256
    _SAMPLES = scenario_knobs.Range(*bounds.FLAGS["samples_per_query"], whole=True)
    flags = (
        scenario_knobs.Flag(
            "samples_per_query",
            "int",
            None,
            "samples in each query; default: the --user_conf's, else mlperf.conf's (8).",
            _SAMPLES,
        ),
    )
    conf_keys = stream.STREAM_KEYS | {
        "samples_per_query": scenario_knobs.ConfKey("flag --samples_per_query", _SAMPLES)
    }
    rules = (
        scenarios.Rule(
            "multi_stream_target_latency_percentile", "latency percentile", *scenarios.PERCENTILE
        ),
        scenarios.Rule(
            "multi_stream_samples_per_query",
            "samples per query",
            "differs from",
            str,
            scenarios.same,
        ),
    )

    def query_batch(self, batches: scenarios.Batches) -> int:
        return batches.per_query

    def samples(self, sc: ScenarioConfig) -> int:
        return sc.own.samples_per_query

    def query_samples(self, s) -> int:
        return int(s.multi_stream_samples_per_query)

    def lay_flags(self, sc: ScenarioConfig, layers) -> dict:
        layers.lay(
            "--samples_per_query",
            sc.own.samples_per_query,
            "multi_stream_samples_per_query",
            "multi_stream_samples_per_query",
        )
        return {"samples_per_query": int(layers.settings.multi_stream_samples_per_query)}

    def log_fields(self, detail: dict) -> dict:
        return {
            "early_stopping_latency_seconds": loadgen_log.seconds(
                detail.get("early_stopping_latency_ms")
            ),
        }

    def settings_fields(self, sc: ScenarioConfig, rules) -> dict:
        return {"samples_per_query": sc.own.samples_per_query}
