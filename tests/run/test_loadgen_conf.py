"""LoadGen's settings as MLPerf loads them: mlperf.conf (built into LoadGen), user.conf, flags.

These call LoadGen's own configuration reader (no TensorFlow): the values
expected are the ones the mlperf.conf inside the installed LoadGen sets,
read back through a second, untouched TestSettings, never typed here.
"""

from __future__ import annotations

import pytest

from tpubench.core import errors
from tpubench.core.config import ScenarioConfig
from tpubench.run.infer import loadgen_conf

lg = pytest.importorskip("mlperf_loadgen", reason="the loadgen extra is missing")


def _mlperf(model: str, scenario: str):
    s = lg.TestSettings()
    s.FromConfig("", model, scenario, 0)
    return s


def test_server_settings_come_from_mlperf_conf_with_the_flags_on_top():
    sc = ScenarioConfig(name="server", latency_bound=0.05, min_duration=5.0)
    rules, s = loadgen_conf.read(lg, sc, "mnist_mlp")
    conf = _mlperf("mnist_mlp", "Server")
    # mlperf.conf's own values: 600 s, its seeds; no Server query minimum (LoadGen's 100).
    assert rules.mlperf["min_duration_seconds"] == conf.min_duration_ms / 1e3 == 600.0
    assert rules.mlperf["min_query_count"] == conf.min_query_count
    assert s.qsl_rng_seed == conf.qsl_rng_seed != 0
    assert s.schedule_rng_seed == conf.schedule_rng_seed != 0
    # The flags win: 5 s, the bound; what the flags did not set stays mlperf.conf's.
    assert s.min_duration_ms == 5000 and s.server_target_latency_ns == 50_000_000
    assert s.min_query_count == conf.min_query_count
    assert rules.from_flags == (
        "min_duration_seconds",
        "server_target_latency_seconds",
        "server_target_latency_percentile",
    )
    section = rules.section()
    assert section["mlperf_conf"] == f"built into LoadGen {loadgen_conf.loadgen_version()}"
    assert section["mlperf_round"].startswith("MLPerf Inference v")
    minimums = rules.meets_minimums()
    assert minimums["meets_mlperf_minimums"] is False
    assert "below the minimums of mlperf.conf (600 s" in minimums["note"]


def test_an_mlperf_model_gets_its_per_model_sample_count_and_offline_minimum():
    rules, s = loadgen_conf.read(lg, ScenarioConfig(name="offline"), "resnet50")
    conf = _mlperf("resnet50", "Offline")
    assert rules.model_key == "resnet50"
    assert rules.qsl_samples == conf.performance_sample_count_override > 0
    assert rules.effective["min_query_count"] == conf.min_query_count > 100
    # Not named by mlperf.conf: only its `*` lines apply, and the QSL holds 1024.
    other, _ = loadgen_conf.read(lg, ScenarioConfig(name="offline"), "mnist_mlp")
    assert other.mlperf["performance_sample_count"] == 0 and other.qsl_samples == 1024
    # With the defaults (no flags) the settings are mlperf.conf's and meet its minimums.
    assert rules.meets_minimums()["meets_mlperf_minimums"] is True
    assert rules.from_flags == ()


def test_a_user_conf_is_layered_over_mlperf_conf(tmp_path):
    conf = tmp_path / "user.conf"
    conf.write_text("# mine\nmnist_mlp.Server.min_duration = 7000\n*.Server.min_query_count = 50\n")
    sc = ScenarioConfig(name="server", latency_bound=0.02, user_conf=str(conf))
    rules, s = loadgen_conf.read(lg, sc, "mnist_mlp")
    assert rules.effective["min_duration_seconds"] == 7.0 and s.min_query_count == 50
    assert s.qsl_rng_seed == _mlperf("mnist_mlp", "Server").qsl_rng_seed  # still mlperf.conf's
    assert rules.section()["user_conf"] == str(conf)
    assert "min_duration_seconds" not in rules.from_flags


@pytest.mark.parametrize(
    "text, says",
    [(None, "no such file"), ("this is not a setting\n", "LoadGen's reader refused it")],
)
def test_a_bad_user_conf_is_one_line(tmp_path, text, says):
    path = tmp_path / "user.conf"
    if text is not None:
        path.write_text(text)
    sc = ScenarioConfig(name="offline", user_conf=str(path))
    with pytest.raises(errors.UsageError) as e:
        loadgen_conf.read(lg, sc, "mnist_mlp")
    assert f"--user_conf={path}: {says}" in str(e.value) and "\n" not in str(e.value)
