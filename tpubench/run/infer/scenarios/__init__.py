"""MLPerf LoadGen scenarios as plug-ins: one module per `--scenario`, each a `Scenario`.

A module of this package defines a `Scenario` subclass decorated with
`register`; `names()` imports every module of the package once, so a new
scenario is one file here, and every list of names reads the registry: the
`--scenario` choices, the user.conf refusal, the smoke layer's commands.
`infer_scenario.run` drives the protocol (closed loop, QSL, SUT, LoadGen,
record) and asks the scenario for what differs; it never compares names.

What a scenario decides (docs/architecture.md, "Adding a scenario"):

- `name` (the flag's value and the record's `scenario`), `loadgen_name`
  (LoadGen's TestScenario it runs as), `order` (where `--scenario` lists it);
- its own settings: `flags` (scenario_knobs.Flag: the CLI edge defines them and
  hands the scenario its values as `ScenarioConfig.own`), `conf_keys` (the
  user.conf keys LoadGen reads for it, with their ranges);
- the SUT's batching: `sut_batch`, `closed_loop_batches`,
  `batching_window`, `shed_after`;
- LoadGen's settings: `check` and `lay_flags` (flags over mlperf.conf and the
  user.conf), `expected_key` (the user.conf key that sizes its runs),
  `size_run` (one run's QPS or expected figure), `rules` (MLPerf's rules
  beyond the common minimums);
- the run: `run(test)`, LoadGen's result and the record's rate;
- LoadGen's memory: `schedule` (what one test will hold, loadgen_memory.py),
  `plan_text` (the progress line before a test);
- the record: `log_fields` (from LoadGen's detail log), `latency_results`,
  `settings_fields`, `curve`, and the traits reports read (`loadgen.traits`):
  `bounded_by_latency` (server) and `one_query` (offline);
- the console: `headline` (the line of its figure, cli/scenario_text.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from tpubench.core import config
from tpubench.core import registry as registry_lib
from tpubench.run.infer import loadgen_memory, scenario_knobs


@dataclasses.dataclass(frozen=True)
class Batches:
    """The global batch sizes a scenario may run (each a multiple of the replicas)."""

    single: int  # one sample a query: the smallest batch the replicas can run
    per_query: int  # samples_per_query, rounded up to the replicas
    largest: int  # --max_batch_size, else the largest --batch_size


@dataclasses.dataclass(frozen=True)
class Test:
    """What a scenario's `run` gets: the harness, LoadGen and the closed loop's figures."""

    harness: object  # harness.Harness (or a test's stand-in): run(settings, name, scenario)
    lg: object  # the mlperf_loadgen module
    settings: object  # LoadGen's TestSettings, reused for every run
    config: config.ScenarioConfig  # the scenario as run (loadgen_conf.Rules.config)
    rules: object  # loadgen_conf.Rules
    closed: dict  # {batch: closed-loop figures}, at closed_loop_batches
    batches: Batches


@dataclasses.dataclass(frozen=True)
class Rule:
    """One MLPerf rule a record is held to: mlperf.conf's value against the one run."""

    key: str  # the effective setting (loadgen_conf.Rules.effective)
    what: str  # what it is, in the note
    word: str  # the verb when unmet ("is below")
    show: Callable  # how a value is printed
    ok: Callable  # ok(have, need)


def at_least(have, need) -> bool:
    return have >= need


def at_most(have, need) -> bool:
    return have <= need


def same(have, need) -> bool:
    return have == need


PERCENTILE = ("is below", lambda v: f"p{v:g}", at_least)  # a percentile rule's word, show, ok


class Scenario:
    """One `--scenario`: what it asks of the SUT, of LoadGen and of the record.

    The defaults serve a scenario that batches up to the largest batch;
    a subclass overrides what differs and must give `name`, `loadgen_name`,
    `size_run`, `schedule` and `run`.  Its own settings are `sc.own` (from its
    `flags`); it never imports absl.
    """

    name = ""  # --scenario=NAME; the record's `scenario`
    loadgen_name = ""  # LoadGen's TestScenario: SingleStream, MultiStream, Server or Offline
    order = 100  # where --scenario lists it (the built-ins in MLPerf's order)
    # The user.conf key that sets LoadGen's expected latency or QPS (runs are then not
    # sized from the closed loop); None: the scenario has none.
    expected_key: str | None = None
    rules: tuple[Rule, ...] = ()  # MLPerf's rules beyond the common minimums
    # LoadGen's detail-log key of a latency percentile ("{}" is e.g. 99.00).
    latency_log_key = "result_{}_percentile_latency_ns"
    # What reports read from the record (loadgen.traits), so they never name a scenario:
    # the verdict is judged against a latency bound at a QPS (serving sizes fleets by it),
    # and the latencies are one query's completion times (no percentile to compare).
    bounded_by_latency = False
    one_query = False
    # Its own flags (the CLI edge defines them) and the user.conf keys LoadGen reads for it
    # beyond user_conf.GENERIC's, each with what tpubench does with it and its range.
    flags: tuple[scenario_knobs.Flag, ...] = ()
    conf_keys: dict[str, scenario_knobs.ConfKey] = {}
    # LoadGen's bookkeeping per scheduled query and per sample of a query (loadgen_memory.py).
    bytes_per_query = 1100
    bytes_per_sample = 0

    def config(self, **given) -> config.ScenarioConfig:
        """A ScenarioConfig of this scenario: GIVEN's shared fields, the rest its own settings
        over its flags' defaults (what the CLI edge builds from the flags)."""
        shared = {f.name for f in dataclasses.fields(config.ScenarioConfig)} - {"own", "plugin"}
        own = {k: v for k, v in given.items() if k not in shared}
        unknown = set(own) - {f.key for f in self.flags}
        if unknown:
            raise TypeError(f"scenario {self.name!r} has no setting {sorted(unknown)}")
        values = scenario_knobs.defaults(self.flags) | own
        common = {k: v for k, v in given.items() if k in shared}
        return config.ScenarioConfig(name=self.name, own=values, plugin=self, **common)

    def traits(self) -> dict:
        """loadgen.traits of the record."""
        return {"bounded_by_latency": self.bounded_by_latency, "one_query": self.one_query}

    # The SUT's batching.
    def sut_batch(self, batches: Batches) -> int:
        """The largest batch the SUT runs (the record's batch size)."""
        return batches.largest

    def closed_loop_batches(self, batches: Batches) -> list[int]:
        """The batch sizes the closed loop measures first (what sizes LoadGen's runs)."""
        return [batches.single, batches.largest]

    def batching_window(self, sc: config.ScenarioConfig) -> float:
        """How long a batch waits for more queries (0: it takes what is waiting)."""
        return 0.0

    def shed_after(self, sc: config.ScenarioConfig) -> float | None:
        """How long the oldest queued query may wait before the run is given up (None: never)."""
        return None

    # LoadGen's settings.
    def check(self, given: dict, user: dict) -> None:
        """Refuses, in one line, settings the scenario cannot run with (before any run).

        GIVEN: its own settings as given (`ScenarioConfig.own`; None: not given);
        USER: the user.conf's keys that apply (user_conf.read).
        """

    def lay_flags(self, sc: config.ScenarioConfig, layers) -> dict:
        """Lays the scenario's own flags over LoadGen's settings (`layers.lay`, as
        loadgen_conf.Layers does); returns its own settings (`sc.own`) the run resolves."""
        return {}

    def size_run(self, s, sc: config.ScenarioConfig, expected: float, qps: float | None) -> None:
        """Sets one run's own value on TestSettings S: a QPS, or what LoadGen sizes it by.

        EXPECTED is seconds per query or samples per second, from the closed
        loop or an earlier run; not used where the user.conf set it.
        """
        raise NotImplementedError(f"scenario {self.name!r} gives no size_run")

    def settings_for(self, test: Test, expected: float = 0.0, qps: float | None = None):
        """TEST's TestSettings with one run's value set (size_run)."""
        self.size_run(test.settings, test.config, expected, qps)
        return test.settings

    # The run.
    def run(self, test: Test) -> dict:
        """LoadGen's run(s): {"summary": the result's, "rate": the record's predictions/sec,
        and any further `loadgen` sections of the record (e.g. "confirmation")}."""
        raise NotImplementedError(f"scenario {self.name!r} gives no run")

    # LoadGen's memory and the progress line.
    def schedule(self, s) -> loadgen_memory.Schedule:
        """What LoadGen will schedule for TestSettings S (loadgen_memory.count sizes it)."""
        raise NotImplementedError(f"scenario {self.name!r} gives no schedule")

    def plan_text(self, s) -> str:
        """What a test will do and, at least, for how long (LoadGen's minimums)."""
        return f"at least {s.min_duration_ms / 1e3:,.0f} s and {int(s.min_query_count):,} queries"

    # The record.
    def log_fields(self, detail: dict) -> dict:
        """The scenario's own figures from LoadGen's detail log (loadgen_log.summarize)."""
        return {}

    def latency_results(self, summary: dict, out: dict, test: Test) -> dict:
        """The record's `results` latencies: LoadGen's p50 / p90 / p99 of a query."""
        lat = summary.get("latency_seconds", {})
        return {f"latency_{p}": lat.get(p) for p in ("p50", "p90", "p99")}

    def settings_fields(self, sc: config.ScenarioConfig, rules) -> dict:
        """The scenario's own entries of the record's `loadgen.settings`."""
        return {}

    def curve(self, runs: list[dict], sc: config.ScenarioConfig, prices, accelerators: int):
        """The record's `loadgen.curve` of RUNS (None: the record has none)."""
        return None

    def headline(self, summary: dict, results: dict, settings: dict, show) -> str:
        """The console's line of the scenario's figure: SUMMARY (loadgen.summary), RESULTS,
        SETTINGS (loadgen.settings); SHOW formats numbers (`num`, `latency_ms`)."""
        lat = summary.get("latency_seconds", {})
        lats = " / ".join(show.latency_ms(lat.get(q)) for q in ("p50", "p90", "p99"))
        rate = show.num(results.get("examples_per_sec"))
        return f"{self.name}: latency p50 / p90 / p99 {lats} ms ({rate} samples/sec)"


def _instance(cls: type[Scenario]) -> Scenario:
    """The one instance of scenario class CLS, once it names itself and LoadGen's scenario."""
    if not cls.name or not cls.loadgen_name:
        raise ValueError(f"scenario {cls.__name__} needs a name and a loadgen_name")
    return cls()


# `--scenario`'s plug-ins: this package's modules, listed in their `order` (then by name).
REGISTRY = registry_lib.Registry(
    "--scenario",
    package=__name__,
    make=_instance,
    order=lambda name, scenario: (scenario.order, name),
    hint=f"; a new one is a module of {__name__}",
)


def register(cls: type[Scenario]) -> type[Scenario]:
    """Class decorator: CLS (with a `name`) becomes a value of `--scenario`."""
    return REGISTRY.register(cls)


def names() -> tuple[str, ...]:
    """Every registered scenario's name, in their `order` (then by name)."""
    return REGISTRY.names()


def get(name: str) -> Scenario:
    """The scenario called NAME.

    Raises:
      UsageError: no scenario has that name (the error lists the accepted ones).
    """
    return REGISTRY.get(name)


def choices() -> tuple[str, ...]:
    """`--scenario`'s values: the closed loop (no LoadGen), then every scenario."""
    return (config.CLOSED_LOOP, *names())
