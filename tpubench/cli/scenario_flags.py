"""`tpubench infer --scenario=...`'s flags: the shared ones, and each plug-in's own.

A scenario plug-in declares its flags (`Scenario.flags`, scenario_knobs.Flag)
and never imports absl; here the union of every plug-in's flags is defined
once, `--scenario` is resolved to its plug-in once, and that plug-in gets
its own flags' values, parsed and held to their declared ranges, as
`ScenarioConfig.own` (the resolved plug-in travels as `ScenarioConfig.plugin`).
"""

from __future__ import annotations

import dataclasses

from absl import flags

from tpubench.cli import values
from tpubench.core import config, errors
from tpubench.run.infer import scenario_knobs, scenarios

FLAGS = flags.FLAGS


def define() -> None:
    """--scenario, the settings every scenario shares, then each plug-in's own flags."""
    f = flags
    f.DEFINE_enum(
        "scenario",
        config.CLOSED_LOOP,
        list(scenarios.choices()),  # the closed loop, then every scenario plug-in
        "closed_loop: tpubench's own timing, one batch in flight (no LoadGen); the others run "
        "the model through MLPerf's LoadGen as that scenario.",
    )
    f.DEFINE_integer(
        "max_batch_size",
        None,
        "server and offline: largest batch the SUT runs; default: the largest --batch_size.",
        lower_bound=1,
    )
    f.DEFINE_string(
        "min_duration",
        None,
        "LoadGen's minimum run duration; default: mlperf.conf's (600s). Shorter runs are "
        "marked as below mlperf.conf's minimums.",
    )
    f.DEFINE_integer(
        "min_query_count",
        None,
        "LoadGen's minimum query count; default: mlperf.conf's for the model and scenario.",
        lower_bound=1,
    )
    f.DEFINE_integer(
        "qsl_samples",
        None,
        "Samples the query sample library loads before timing (performance_sample_count); "
        "default: mlperf.conf's for the model, else 1024.",
        lower_bound=1,
    )
    f.DEFINE_string(
        "user_conf",
        None,
        "An MLPerf user.conf ('model.scenario.key = value' lines) read by LoadGen over the "
        "mlperf.conf built into it; the flags, where given, win over both. A key "
        "tpubench cannot honour is refused before any run (docs/inference.md).",
    )
    for flag, owners in _declared().values():
        _define_one(flag, owners)


def declared_names() -> tuple[str, ...]:
    """Every scenario plug-in's own flag names, in `--scenario`'s order (--helpfull's group)."""
    return tuple(_declared())


def _declared() -> dict[str, tuple[scenario_knobs.Flag, list[str]]]:
    """{name: (its declaration, the scenarios declaring it)}; one name, one declaration."""
    out: dict[str, tuple[scenario_knobs.Flag, list[str]]] = {}
    for name in scenarios.names():
        for flag in scenarios.get(name).flags:
            if flag.name in out and out[flag.name][0] != flag:
                raise ValueError(
                    f"--{flag.name}: scenarios {out[flag.name][1]} and {name!r} "
                    "declare it differently"
                )
            out.setdefault(flag.name, (flag, []))[1].append(name)
    return out


def define_for(plugin, defaults: dict, who: str) -> None:
    """PLUGIN's flags named in DEFAULTS, for another subcommand WHO (tune's serving objective
    passes them on to `infer --scenario=NAME`), each with that subcommand's default."""
    for flag in plugin.flags:
        if flag.name in defaults:
            _define_one(dataclasses.replace(flag, default=defaults[flag.name]), [who])


def parsed(plugin, name: str):
    """PLUGIN's flag NAME as typed, parsed and held to its declared range (None: not given)."""
    return _value(next(f for f in plugin.flags if f.name == name))


def _define_one(flag: scenario_knobs.Flag, owners: list[str]) -> None:
    """FLAG as an absl flag; its range is the plug-in's (`Flag.range`, checked in `_value`),
    not core/bounds.FLAGS (tests/security/test_range_table.py holds plug-ins to declaring one)."""
    helptext = f"{' and '.join(owners)}: {flag.help}"
    if flag.range is not None:
        helptext += f" Accepted: {flag.range_text()}."
    default = flag.default
    if flag.kind == "duration" and default is not None:
        default = f"{default * 1e3:g}ms"  # typed as text (50ms, 2s)
    _DEFINERS[flag.kind](flag.name, default, helptext)


_DEFINERS = {"int": flags.DEFINE_integer, "float": flags.DEFINE_float}
_DEFINERS["duration"] = flags.DEFINE_string


def scenario_config() -> config.ScenarioConfig:
    """--scenario and its settings: the plug-in resolved once, its own flags parsed."""
    from tpubench.run.infer import loadgen_conf, user_conf

    name = FLAGS.scenario
    if name == config.CLOSED_LOOP:
        if FLAGS.user_conf:
            raise errors.UsageError(
                f"--user_conf={FLAGS.user_conf}: the closed loop runs no LoadGen; accepted: "
                f"with --scenario={'|'.join(scenarios.names())}"
            )
        return config.ScenarioConfig()
    plugin = scenarios.get(name)
    own = {flag.key: _value(flag) for flag in plugin.flags}
    user = {}
    if FLAGS.user_conf:
        # Before any run: a key of the user.conf tpubench cannot honour is refused here.
        key = loadgen_conf.model_key(FLAGS.model)
        user = user_conf.read(FLAGS.user_conf, key, plugin)
    plugin.check(own, user)
    return plugin.config(
        max_batch_size=FLAGS.max_batch_size,
        min_duration=(
            None
            if FLAGS.min_duration is None
            else values.parse_duration(FLAGS.min_duration, "--min_duration")
        ),
        min_query_count=FLAGS.min_query_count,
        qsl_samples=FLAGS.qsl_samples,
        user_conf=FLAGS.user_conf,
        **own,
    )


def _value(flag: scenario_knobs.Flag):
    """FLAG's value as typed (its default when not), parsed and held to its declared range."""
    raw = FLAGS[flag.name].value
    if raw is None:
        return None
    if flag.kind != "duration":
        flag.check(raw)
        return raw
    if raw.strip() in ("0", "0ms", "0s") and flag.range is not None and flag.range.holds(0):
        return 0.0  # e.g. no batching window: each batch takes what is already waiting
    seconds = values.parse_duration(raw, f"--{flag.name}")
    flag.check(seconds, raw)
    return seconds
