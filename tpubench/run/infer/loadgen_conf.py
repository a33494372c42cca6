"""LoadGen's settings the way MLPerf loads them: mlperf.conf, then a user.conf, then flags.

LoadGen carries MLPerf's `mlperf.conf` inside its library (6.0.17, the
release tested, ignores the path argument of its reader for it) and reads it with
`TestSettings.FromConfig("", model, scenario, 0)`: the seeds, the minimum
duration and query counts and the per-model `performance_sample_count`
of the MLPerf round the LoadGen release belongs to.  A submitter's own
values go in a `user.conf`, read by the same reader
(`FromConfig(path, model, scenario, 1)`), and tpubench's flags are laid
over both last.  Nothing here is a table of our own: the minimums a record
is compared with are the ones this LoadGen's mlperf.conf sets.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import os

from tpubench.core import errors
from tpubench.core.config import ScenarioConfig

# tpubench's scenario names -> LoadGen's.
LOADGEN_NAMES = {
    "single_stream": "SingleStream",
    "multi_stream": "MultiStream",
    "server": "Server",
    "offline": "Offline",
}
# tpubench models that are an MLPerf Inference benchmark (mlperf.conf's model key):
# ResNet-50 v1.5 is MLPerf's resnet50.  (MLPerf's `bert` is BERT-Large on SQuAD,
# not bert_base.)  Any other model is looked up under its own name, which only
# mlperf.conf's `*` lines match.
MLPERF_MODELS = {"resnet50": "resnet50"}
# With no value from mlperf.conf (models it does not name), the QSL holds this many.
DEFAULT_QSL_SAMPLES = 1024


@dataclasses.dataclass(frozen=True)
class Rules:
    """The settings of one scenario after mlperf.conf, the user.conf and the flags."""

    scenario: str  # tpubench's name
    model_key: str  # the model name mlperf.conf was read for
    loadgen_version: str
    user_conf: str | None
    mlperf: dict  # what mlperf.conf alone sets: min_duration_seconds, min_query_count, ...
    effective: dict  # after the user.conf and the flags
    from_flags: tuple[str, ...]  # effective keys the flags set

    @property
    def qsl_samples(self) -> int:
        return self.effective["performance_sample_count"]

    def section(self) -> dict:
        """The record's `loadgen.rules`: where every setting came from."""
        version = self.loadgen_version.split(".")
        return {
            "mlperf_conf": f"built into LoadGen {self.loadgen_version}",
            "mlperf_round": f"MLPerf Inference v{'.'.join(version[:2])}",
            "model_key": self.model_key,
            "user_conf": self.user_conf,
            "mlperf_conf_values": self.mlperf,
            "effective": self.effective,
            "set_by_flags": list(self.from_flags),
        }

    def meets_minimums(self) -> dict:
        """Whether the effective settings reach mlperf.conf's minimums, and a note if not."""
        need_s, need_q = self.mlperf["min_duration_seconds"], self.mlperf["min_query_count"]
        have_s, have_q = self.effective["min_duration_seconds"], self.effective["min_query_count"]
        meets = have_s >= need_s and have_q >= need_q
        out = {
            "meets_mlperf_minimums": meets,
            "mlperf_min_duration_seconds": need_s,
            "mlperf_min_query_count": need_q,
        }
        if not meets:
            unit = "samples" if self.scenario == "offline" else "queries"
            out["note"] = (
                f"short settings ({have_s:g} s, {have_q} {unit}): below the minimums of "
                f"mlperf.conf ({need_s:g} s, {need_q} {unit}); not a submittable result"
            )
        return out


def loadgen_version() -> str:
    try:
        return importlib.metadata.version("mlcommons-loadgen")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def model_key(model: str) -> str:
    return MLPERF_MODELS.get(model, model)


def _values(s) -> dict:
    return {
        "min_duration_seconds": s.min_duration_ms / 1e3,
        "min_query_count": int(s.min_query_count),
        "performance_sample_count": int(s.performance_sample_count_override),
        "qsl_rng_seed": int(s.qsl_rng_seed),
        "sample_index_rng_seed": int(s.sample_index_rng_seed),
        "schedule_rng_seed": int(s.schedule_rng_seed),
        "server_target_latency_seconds": s.server_target_latency_ns / 1e9,
        "server_target_latency_percentile": round(100 * s.server_target_latency_percentile, 4),
        "single_stream_target_latency_percentile": round(
            100 * s.single_stream_target_latency_percentile, 4
        ),
        "multi_stream_samples_per_query": int(s.multi_stream_samples_per_query),
    }


def read(lg, sc: ScenarioConfig, model: str) -> tuple[Rules, object]:
    """(the Rules, LoadGen's TestSettings carrying them) for SC on MODEL.

    The TestSettings is built once and reused for every run of the process:
    LoadGen logs an error into the next test when a second user.conf is read.
    """
    key, name = model_key(model), LOADGEN_NAMES[sc.name]
    base = lg.TestSettings()
    base.FromConfig("", key, name, 0)  # mlperf.conf, as built into LoadGen
    mlperf = _values(base)
    s = lg.TestSettings()
    s.FromConfig("", key, name, 0)
    if sc.user_conf:
        _read_user_conf(lg, s, sc.user_conf, key, name)
    s.scenario = getattr(lg.TestScenario, name)
    s.mode = lg.TestMode.PerformanceOnly
    flags = []
    if sc.min_duration is not None:
        s.min_duration_ms = int(round(sc.min_duration * 1000))
        flags.append("min_duration_seconds")
    if sc.min_query_count is not None:
        s.min_query_count = sc.min_query_count
        flags.append("min_query_count")
    if sc.qsl_samples is not None:
        s.performance_sample_count_override = sc.qsl_samples
        flags.append("performance_sample_count")
    elif s.performance_sample_count_override <= 0:
        s.performance_sample_count_override = DEFAULT_QSL_SAMPLES
    if sc.name == "server":
        s.server_target_latency_ns = int(sc.latency_bound * 1e9)
        s.server_target_latency_percentile = sc.latency_percentile / 100.0
        flags += ["server_target_latency_seconds", "server_target_latency_percentile"]
    if sc.name == "multi_stream":
        s.multi_stream_samples_per_query = sc.samples_per_query
        flags.append("multi_stream_samples_per_query")
    rules = Rules(sc.name, key, loadgen_version(), sc.user_conf, mlperf, _values(s), tuple(flags))
    return rules, s


def _read_user_conf(lg, s, path: str, key: str, name: str) -> None:
    if not os.path.isfile(path):
        raise errors.UsageError(
            f"--user_conf={path}: no such file; give an MLPerf user.conf "
            "(lines 'model.scenario.key = value')"
        )
    rc = s.FromConfig(path, key, name, 1)
    if rc != 0:
        raise errors.UsageError(
            f"--user_conf={path}: LoadGen's reader refused it (code {rc}); every line must be "
            "'model.scenario.key = value' or a # comment"
        )


def for_run(lg, s, sc: ScenarioConfig, expected: float, qps: float | None = None):
    """S with one run's own values: the server's QPS, or the figure LoadGen sizes a run by.

    EXPECTED is seconds per query (single and multi stream) or samples per
    second (offline), from the closed loop or an earlier run.
    """
    if sc.name == "server":
        s.server_target_qps = float(qps)
    elif sc.name == "offline":
        s.offline_expected_qps = float(expected)
    elif sc.name == "single_stream":
        s.single_stream_expected_latency_ns = max(1, int(expected * 1e9))
    else:
        s.multi_stream_expected_latency_ns = max(1, int(expected * 1e9))
    return s
