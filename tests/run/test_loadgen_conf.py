"""LoadGen's settings as MLPerf loads them: mlperf.conf (built into LoadGen), user.conf, flags.

These call LoadGen's own configuration reader (no TensorFlow): the values
expected are the ones the mlperf.conf inside the installed LoadGen sets,
read back through a second, untouched TestSettings, never typed here.
"""

from __future__ import annotations

import pytest

from tpubench.core import errors
from tpubench.run.infer import loadgen_conf, scenarios

lg = pytest.importorskip("mlperf_loadgen", reason="the loadgen extra is missing")


def _mlperf(model: str, scenario: str):
    s = lg.TestSettings()
    s.FromConfig("", model, scenario, 0)
    return s


def test_server_settings_come_from_mlperf_conf_with_the_flags_on_top():
    sc = scenarios.get("server").config(latency_bound=0.05, min_duration=5.0)
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
    assert rules.from_flags == ("min_duration_seconds", "server_target_latency_seconds")
    # No --latency_percentile: mlperf.conf's (99); the scenario as run says so.
    assert s.server_target_latency_percentile == conf.server_target_latency_percentile == 0.99
    assert rules.config.own.latency_percentile == 99.0 and rules.config.own.latency_bound == 0.05
    section = rules.section()
    assert section["mlperf_conf"] == f"built into LoadGen {loadgen_conf.loadgen_version()}"
    assert section["mlperf_round"].startswith("MLPerf Inference v")
    # mnist_mlp is no MLPerf benchmark: mlperf.conf's `*` values are no rules to meet.
    assert rules.meets_minimums() == {
        "meets_mlperf_minimums": None,
        "note": "mnist_mlp has no MLPerf Inference benchmark: MLPerf's rules do not apply",
    }


def test_an_mlperf_model_gets_its_per_model_sample_count_and_offline_minimum():
    rules, s = loadgen_conf.read(lg, scenarios.get("offline").config(), "resnet50")
    conf = _mlperf("resnet50", "Offline")
    assert rules.model_key == "resnet50"
    assert rules.qsl_samples == conf.performance_sample_count_override > 0
    assert rules.effective["min_query_count"] == conf.min_query_count > 100
    # Not named by mlperf.conf: only its `*` lines apply, and the QSL holds 1024.
    other, _ = loadgen_conf.read(lg, scenarios.get("offline").config(), "mnist_mlp")
    assert other.mlperf["performance_sample_count"] == 0 and other.qsl_samples == 1024
    # With the defaults (no flags) the settings are mlperf.conf's and meet its minimums.
    assert rules.meets_minimums()["meets_mlperf_minimums"] is True
    assert rules.from_flags == ()
    # --tiny: the same settings, but a small network is not MLPerf's ResNet-50.
    tiny, _ = loadgen_conf.read(lg, scenarios.get("offline").config(), "resnet50", tiny=True)
    assert tiny.effective == rules.effective
    assert tiny.meets_minimums() == {
        "meets_mlperf_minimums": None,
        "note": "--tiny resnet50 is a small variant, not MLPerf's resnet50: MLPerf's rules do "
        "not apply",
    }


def test_a_user_conf_is_layered_over_mlperf_conf(tmp_path):
    conf = tmp_path / "user.conf"
    conf.write_text("# mine\nmnist_mlp.Server.min_duration = 7000\n*.Server.min_query_count = 50\n")
    sc = scenarios.get("server").config(latency_bound=0.02, user_conf=str(conf))
    rules, s = loadgen_conf.read(lg, sc, "mnist_mlp")
    assert rules.effective["min_duration_seconds"] == 7.0 and s.min_query_count == 50
    assert s.qsl_rng_seed == _mlperf("mnist_mlp", "Server").qsl_rng_seed  # still mlperf.conf's
    assert rules.section()["user_conf"] == str(conf)
    assert "min_duration_seconds" not in rules.from_flags


@pytest.mark.parametrize(
    "text, says",
    [
        (None, "no such file"),
        ("this is not a setting\n", "line 1 ('this is not a setting') is not 'model.scenario"),
        ("*.Server.min_duration=7000\n", "line 1 ('*.Server.min_duration=7000') is not"),
        ("*.Server.min_duration = 7000 # 7 s\n", "line 1: '# 7 s' after the value"),
        ("*.Server.min_duration = seven\n", "line 1 sets *.Server.min_duration = seven: Load"),
        ("*.Sever.min_duration = 7000\n", "line 1: '*.Sever.min_duration' names scenario"),
    ],
)
def test_a_bad_user_conf_is_one_line(tmp_path, text, says):
    path = tmp_path / "user.conf"
    if text is not None:
        path.write_text(text)
    sc = scenarios.get("offline").config(user_conf=str(path))
    with pytest.raises(errors.UsageError) as e:
        loadgen_conf.read(lg, sc, "mnist_mlp")
    assert f"--user_conf={path}: {says}" in str(e.value) and "\n" not in str(e.value)


# -- a user.conf: every key that applies is honoured or refused -----------------------------


def _conf(tmp_path, text: str) -> str:
    path = tmp_path / "user.conf"
    path.write_text(text)
    return str(path)


def test_a_user_conf_honours_what_no_flag_sets_and_the_flags_win(tmp_path):
    conf = _conf(
        tmp_path,
        "*.Server.min_duration = 7000\n"
        "*.Server.target_latency = 15\n"
        "mnist_mlp.Server.target_latency_percentile = 97\n"
        "*.Server.target_qps = 123\n"
        "*.*.max_query_count = 5000\n"
        "resnet50.Server.target_latency = 99\n"  # another model's: not read
        "*.Offline.target_qps = 9\n",  # another scenario's: not read
    )
    rules, s = loadgen_conf.read(lg, scenarios.get("server").config(user_conf=conf), "mnist_mlp")
    run = rules.config
    # No flag: the user.conf's bound, percentile and QPS (a fixed QPS: no search).
    assert (run.own.latency_bound, run.own.latency_percentile, run.own.target_qps) == (
        0.015,
        97.0,
        123.0,
    )
    assert rules.effective["min_duration_seconds"] == 7.0 and s.max_query_count == 5000
    assert rules.from_flags == ()
    keys = rules.section()["user_conf_keys"]
    assert sorted(keys) == [
        "max_query_count",
        "min_duration",
        "target_latency",
        "target_latency_percentile",
        "target_qps",
    ]
    assert keys["target_qps"] == {
        "line": "user.conf:4",
        "set": "*.Server.target_qps = 123",
        "use": "honoured",
    }
    # The run's own QPS is the user.conf's: LoadGen's effective value is 123.
    loadgen_conf.for_run(lg, s, run, 0.0, run.own.target_qps)
    assert s.server_target_qps == 123.0
    # The flags win over the user.conf, and the record says so.
    sc = scenarios.get("server").config(
        user_conf=conf, latency_bound=0.05, min_duration=2.0, target_qps=400.0
    )
    rules, s = loadgen_conf.read(lg, sc, "mnist_mlp")
    assert rules.config.own.latency_bound == 0.05 and s.server_target_latency_ns == 50_000_000
    assert rules.config.own.target_qps == 400.0 and rules.effective["min_duration_seconds"] == 2.0
    keys = rules.section()["user_conf_keys"]
    assert keys["target_latency"]["use"] == "--latency_bound given: the flag wins"
    assert keys["min_duration"]["use"] == "--min_duration given: the flag wins"
    assert keys["target_qps"]["use"] == "--target_qps given: the flag wins"


def test_a_user_conf_expected_qps_is_not_replaced_by_the_closed_loops(tmp_path):
    conf = _conf(tmp_path, "*.Offline.target_qps = 250\n")
    rules, s = loadgen_conf.read(lg, scenarios.get("offline").config(user_conf=conf), "mnist_mlp")
    assert rules.config.expected_from_user_conf is True
    loadgen_conf.for_run(lg, s, rules.config, 9999.0)
    assert s.offline_expected_qps == 250.0


@pytest.mark.parametrize(
    "line, says",
    [
        ("*.Server.mode = 0", "line 1 sets *.Server.mode = 0: tpubench cannot honour mode "),
        ("*.*.schedule_rng_seed = 7", "LoadGen reads it from mlperf.conf only"),
        ("*.Server.ttft_latency = 100", "reports no tokens"),
        ("*.Server.min_durations = 7000", "LoadGen reads no key 'min_durations' (did you mean"),
        ("*.Server.samples_per_query = 4", "LoadGen does not read samples_per_query for Server"),
    ],
)
def test_a_user_conf_key_tpubench_cannot_honour_is_one_line_naming_it(tmp_path, line, says):
    conf = _conf(tmp_path, f"{line}\n")
    with pytest.raises(errors.UsageError) as e:
        loadgen_conf.read(lg, scenarios.get("server").config(user_conf=conf), "mnist_mlp")
    assert f"--user_conf={conf}: line 1" in str(e.value) and says in str(e.value)
    assert "\n" not in str(e.value) and "accepted" in str(e.value)


def test_the_most_specific_user_conf_line_wins_as_in_loadgen(tmp_path):
    conf = _conf(
        tmp_path,
        "*.*.min_duration = 1000\n"
        "mnist_mlp.*.min_duration = 2000\n"
        "*.Server.min_duration = 3000\n"
        "mnist_mlp.Server.min_duration = 4000\n"
        "*.Server.min_duration = 5000\n",
    )
    sc = scenarios.get("server").config(latency_bound=0.05, user_conf=conf)
    rules, s = loadgen_conf.read(lg, sc, "mnist_mlp")
    assert s.min_duration_ms == 4000  # LoadGen's own reading
    assert rules.section()["user_conf_keys"]["min_duration"]["line"] == "user.conf:4"


# -- MLPerf's rules are the model's own -------------------------------------------------------


def test_resnet50_server_at_a_looser_bound_than_mlperfs_does_not_meet_its_rules():
    rules, _ = loadgen_conf.read(lg, scenarios.get("server").config(latency_bound=0.05), "resnet50")
    assert rules.mlperf["server_target_latency_seconds"] == 0.015  # LoadGen's mlperf.conf
    verdict = rules.meets_minimums()
    assert verdict["meets_mlperf_minimums"] is False
    assert verdict["mlperf_rules_unmet"] == ["latency bound 50 ms is looser than MLPerf's 15 ms"]
    assert verdict["note"].startswith("below MLPerf's resnet50 Server rules (mlperf.conf of")
    # At MLPerf's own bound and durations (the settings only: nothing runs 600 s here).
    rules, _ = loadgen_conf.read(
        lg, scenarios.get("server").config(latency_bound=0.015), "resnet50"
    )
    assert rules.meets_minimums()["meets_mlperf_minimums"] is True


def _rules(scenario: str, **effective) -> loadgen_conf.Rules:
    mlperf = {
        "min_duration_seconds": 600.0,
        "min_query_count": 100,
        "performance_sample_count": 1024,
        "server_target_latency_seconds": 0.015,
        "server_target_latency_percentile": 99.0,
        "single_stream_target_latency_percentile": 90.0,
        "multi_stream_target_latency_percentile": 99.0,
        "multi_stream_samples_per_query": 8,
    }
    return loadgen_conf.Rules(
        scenarios.get(scenario), "resnet50", "6.0.17", None, mlperf, mlperf | effective, ()
    )


@pytest.mark.parametrize(
    "scenario, effective, unmet",
    [
        ("server", {}, []),
        ("server", {"server_target_latency_seconds": 0.01}, []),  # tighter: still kept
        (
            "server",
            {"server_target_latency_percentile": 90.0, "min_duration_seconds": 2.0},
            [
                "bound's percentile p90 is below MLPerf's p99",
                "min duration 2 s is below MLPerf's 600 s",
            ],
        ),
        ("offline", {"min_query_count": 50}, ["min query count 50 is below MLPerf's 100"]),
        (
            "offline",
            {"performance_sample_count": 64},
            ["samples loaded 64 are below MLPerf's 1,024"],
        ),
        (
            "single_stream",
            {"single_stream_target_latency_percentile": 50.0},
            ["latency percentile p50 is below MLPerf's p90"],
        ),
        (
            "multi_stream",
            {"multi_stream_samples_per_query": 4},
            ["samples per query 4 differs from MLPerf's 8"],
        ),
    ],
)
def test_meets_minimums_names_each_rule_and_both_values(scenario, effective, unmet):
    verdict = _rules(scenario, **effective).meets_minimums()
    assert verdict["meets_mlperf_minimums"] is (not unmet)
    assert verdict.get("mlperf_rules_unmet", []) == unmet
    if unmet:
        assert "; ".join(unmet) in verdict["note"] and "not a submittable result" in verdict["note"]


@pytest.mark.parametrize(
    "line, accepted",
    [
        ("*.Server.target_qps = 0", "a number from 0.1 to 1e+07 (queries per second)"),
        ("*.Server.target_latency = 0.5", "a whole number from 0.001 to"),
        ("*.Server.min_duration = 1e400", "a whole number from 1 to"),
        ("*.Server.min_query_count = 12.5", "a whole number from 1 to 1e+07 (queries)"),
    ],
)
def test_a_user_conf_value_tpubench_uses_must_be_in_its_flags_range(tmp_path, line, accepted):
    conf = _conf(tmp_path, f"{line}\n")
    with pytest.raises(errors.UsageError) as e:
        loadgen_conf.read(lg, scenarios.get("server").config(user_conf=conf), "mnist_mlp")
    assert f"line 1 sets {line}: out of range; accepted: {accepted}" in str(e.value)
