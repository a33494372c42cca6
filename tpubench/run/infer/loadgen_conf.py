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

from tpubench.core import errors
from tpubench.core.config import ScenarioConfig
from tpubench.run.infer import scenarios, user_conf

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

    scenario: object  # the scenario's plug-in (scenarios.Scenario), resolved at the CLI edge
    model_key: str  # the model name mlperf.conf was read for
    loadgen_version: str
    user_conf: str | None
    mlperf: dict  # what mlperf.conf alone sets: min_duration_seconds, min_query_count, ...
    effective: dict  # after the user.conf and the flags
    from_flags: tuple[str, ...]  # effective keys the flags set
    user_conf_keys: dict = dataclasses.field(default_factory=dict)  # user_conf.section()
    # The scenario as run: what neither flag nor user.conf set is mlperf.conf's.
    config: ScenarioConfig | None = None
    tiny: bool = False  # --tiny: a small variant of the model, never MLPerf's benchmark

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
            "user_conf_keys": self.user_conf_keys,
        }

    def meets_minimums(self) -> dict:
        """Whether the run keeps its model's own MLPerf rules (mlperf.conf), and a note if not.

        None for a model that is no MLPerf Inference benchmark (mlperf.conf's
        `*` defaults are no benchmark's rules).  Otherwise every rule of the
        scenario: the minimum duration and query count, the samples loaded,
        the latency bound and its percentile; a run at a looser bound, a lower
        percentile, or a shorter or smaller run does not meet them.
        """
        if self.model_key not in MLPERF_MODELS.values():
            return {
                "meets_mlperf_minimums": None,
                "note": f"{self.model_key} has no MLPerf Inference benchmark: MLPerf's rules "
                "do not apply",
            }
        if self.tiny:  # its settings are the benchmark's; its network is not
            return {
                "meets_mlperf_minimums": None,
                "note": f"--tiny {self.model_key} is a small variant, not MLPerf's "
                f"{self.model_key}: MLPerf's rules do not apply",
            }
        scenario = self.scenario
        unmet = [
            f"{r.what} {r.show(have)} {r.word} MLPerf's {r.show(need)}"
            for r in scenario.rules + _COMMON
            for need, have in [(self.mlperf[r.key], self.effective[r.key])]
            if not r.ok(have, need)
        ]
        out = {
            "meets_mlperf_minimums": not unmet,
            "mlperf_min_duration_seconds": self.mlperf["min_duration_seconds"],
            "mlperf_min_query_count": self.mlperf["min_query_count"],
        }
        if unmet:
            name = scenario.loadgen_name
            out["mlperf_rules_unmet"] = unmet
            out["note"] = (
                f"below MLPerf's {self.model_key} {name} rules (mlperf.conf of LoadGen "
                f"{self.loadgen_version}): {'; '.join(unmet)}; not a submittable result"
            )
        return out


# The rules of every scenario (each adds its own: Scenario.rules).
_COMMON = (
    scenarios.Rule(
        "min_duration_seconds", "min duration", "is below", lambda v: f"{v:g} s", scenarios.at_least
    ),
    scenarios.Rule(
        "min_query_count", "min query count", "is below", lambda v: f"{v:,}", scenarios.at_least
    ),
    scenarios.Rule(
        "performance_sample_count",
        "samples loaded",
        "are below",
        lambda v: f"{v:,}",
        scenarios.at_least,
    ),
)


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
        "multi_stream_target_latency_percentile": round(
            100 * s.multi_stream_target_latency_percentile, 4
        ),
        "multi_stream_samples_per_query": int(s.multi_stream_samples_per_query),
    }


def read(lg, sc: ScenarioConfig, model: str, tiny: bool = False) -> tuple[Rules, object]:
    """(the Rules, LoadGen's TestSettings carrying them) for SC on MODEL.

    SC holds the flags given (None: not given).  A flag wins over the
    user.conf, which wins over mlperf.conf; Rules.config is SC with every
    setting the run needs filled in that order.  The TestSettings is built
    once and reused for every run of the process: LoadGen logs an error into
    the next test when a second user.conf is read.
    """
    scenario = sc.plugin  # resolved from --scenario once, at the CLI edge
    key, name = model_key(model), scenario.loadgen_name
    base = lg.TestSettings()
    base.FromConfig("", key, name, 0)  # mlperf.conf, as built into LoadGen
    mlperf = _values(base)
    s = lg.TestSettings()
    s.FromConfig("", key, name, 0)
    user = {}
    if sc.user_conf:
        user = user_conf.read(sc.user_conf, key, scenario)  # refuses what it cannot honour
        _read_user_conf(lg, s, sc.user_conf, key, name)
    s.scenario = getattr(lg.TestScenario, name)
    s.mode = lg.TestMode.PerformanceOnly
    layers = Layers(s, user)
    layers.lay("--min_duration", sc.min_duration, "min_duration_ms", "min_duration_seconds", 1000)
    layers.lay("--min_query_count", sc.min_query_count, "min_query_count", "min_query_count")
    layers.lay(
        "--qsl_samples",
        sc.qsl_samples,
        "performance_sample_count_override",
        "performance_sample_count",
    )
    if s.performance_sample_count_override <= 0:
        s.performance_sample_count_override = DEFAULT_QSL_SAMPLES
    scenario.check(sc.own, user)
    own = sc.own | scenario.lay_flags(sc, layers)  # its own settings, as resolved
    rules = Rules(
        scenario,
        key,
        loadgen_version(),
        sc.user_conf,
        mlperf,
        _values(s),
        tuple(layers.flags),
        user_conf.section(user, layers.given, sc.user_conf) if user else {},
        dataclasses.replace(sc, own=own, expected_from_user_conf=scenario.expected_key in user),
        tiny,
    )
    return rules, s


class Layers:
    """The flags laid over LoadGen's TestSettings, one at a time: what each one set."""

    def __init__(self, settings, user: dict):
        self.settings = settings  # LoadGen's TestSettings
        self.user = user  # the user.conf's keys that apply (user_conf.read)
        self.flags: list[str] = []  # the effective keys the flags set
        self.given: set[str] = set()  # the flags given

    def lay(self, flag: str, value, attr: str, effective: str, scale=1) -> None:
        """FLAG's VALUE (None: not given) x SCALE as TestSettings' ATTR, the EFFECTIVE key."""
        if value is None:
            return
        s, v = self.settings, value * scale
        setattr(s, attr, int(round(v)) if isinstance(getattr(s, attr), int) else float(v))
        self.flags.append(effective)
        self.given.add(flag)


def _read_user_conf(lg, s, path: str, key: str, name: str) -> None:
    rc = s.FromConfig(path, key, name, 1)
    if rc != 0:
        raise errors.UsageError(
            f"--user_conf={path}: LoadGen's reader refused it (code {rc}); every line must be "
            "'model.scenario.key = value' or a # comment"
        )


def for_run(lg, s, sc: ScenarioConfig, expected: float, qps: float | None = None):
    """S with one run's own values: the server's QPS, or the figure LoadGen sizes a run by.

    EXPECTED is seconds per query (single and multi stream) or samples per
    second (offline), from the closed loop or an earlier run; not used where
    the user.conf set it.  The scenario sets it (`Scenario.size_run`).
    """
    sc.plugin.size_run(s, sc, expected, qps)
    return s
