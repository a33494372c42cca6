"""Scenarios are plug-ins: the registry, the built-ins, and a toy scenario added in one file.

The toy (`burst`) is one module written by the test and nothing else: it is
listed by `--scenario`, read by LoadGen's settings, run by the protocol
driver, summarized from LoadGen's log, and run end to end through the CLI.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
import types

import pytest
from conftest import one_line_error, record_files

from tpubench.core import errors
from tpubench.report import scenario_fields
from tpubench.run.infer import loadgen_conf, loadgen_log, loadgen_memory, scenarios, user_conf
from tpubench.storage import record_migrations, records
from tpubench.storage.record_results import LoadGenTraits, MachineCost
from tpubench.testing import registries

# The whole toy scenario: one file, with a flag of its own and a user.conf key range.
TOY = '''"""burst: LoadGen's SingleStream, sized for queries --burst_factor times faster."""

from tpubench.run.infer import loadgen_memory, scenario_knobs, scenarios


@scenarios.register
class Burst(scenarios.Scenario):
    name = "burst"
    loadgen_name = "SingleStream"
    expected_key = "target_latency"  # a user.conf's target_latency sizes it instead
    one_query = True  # a trait reports read: its latencies are not compared at a percentile
    flags = (
        scenario_knobs.Flag(
            "burst_factor",
            "int",
            4,
            "how many times faster than the closed loop LoadGen expects each query.",
            scenario_knobs.Range(1, 16, "times faster", whole=True),
        ),
    )
    conf_keys = {
        "target_latency": scenario_knobs.ConfKey("expected", scenario_knobs.LATENCY_MS),
        # Narrower than single_stream's: a burst is judged at p50 to p99 only.
        "target_latency_percentile": scenario_knobs.ConfKey(
            "honoured", scenario_knobs.Range(50, 99, "percent")
        ),
    }

    def sut_batch(self, batches):
        return batches.single

    def closed_loop_batches(self, batches):
        return [batches.single]

    def size_run(self, s, sc, expected, qps):
        if not sc.expected_from_user_conf:
            s.single_stream_expected_latency_ns = max(1, int(expected / sc.own.burst_factor * 1e9))

    def run(self, test):
        expected = test.closed[test.batches.single]["latency_p50"]
        summary = test.harness.run(self.settings_for(test, expected), "burst-1", self)
        return {"summary": summary, "rate": 1 / summary["mean_latency_seconds"]}

    def schedule(self, s):
        latency = s.single_stream_expected_latency_ns / 1e9
        queries = loadgen_memory.count(s, latency=latency)
        return loadgen_memory.Schedule(queries, queries, f"bursts at {latency * 1e3:g} ms")

    def settings_fields(self, sc, rules):
        return {"burst_factor": sc.own.burst_factor}

    def headline(self, summary, results, settings, show):
        rate = show.num(results.get("examples_per_sec"))
        return f"burst x{settings['burst_factor']}: {rate} samples/sec"
'''

BUILT_INS = ("single_stream", "multi_stream", "server", "offline")


@pytest.fixture
def toy(tmp_path):
    """The toy module, loaded from its file; the registry as it was afterwards."""
    with registries.added(scenarios.REGISTRY):  # the toy's module registers it itself
        path = tmp_path / "burst.py"
        path.write_text(TOY)
        spec = importlib.util.spec_from_file_location("burst", path)
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
        yield path


def test_the_built_ins_are_registered_in_mlperfs_order():
    assert scenarios.choices() == ("closed_loop", *BUILT_INS)
    names = [scenarios.get(n).loadgen_name for n in BUILT_INS]
    assert names == ["SingleStream", "MultiStream", "Server", "Offline"]


@pytest.mark.parametrize("name", BUILT_INS)
def test_a_built_ins_record_from_before_traits_reads_with_the_traits_it_declares(name):
    """Storage fills the traits of a record written before them by its scenario's name:
    what each built-in declares today, so old and new records of it read the same."""
    traits = scenarios.get(name).traits()
    assert set(traits) == {f.name for f in dataclasses.fields(LoadGenTraits)}
    old = {"scenario": name, "loadgen": {"summary": {}}}
    assert record_migrations.loadgen_traits(old)["loadgen"]["traits"] == traits


def test_an_unknown_scenario_is_one_line_naming_the_accepted_ones():
    with pytest.raises(errors.UsageError) as e:
        scenarios.get("servr")
    assert "unknown --scenario 'servr'" in str(e.value) and "server" in str(e.value)


def test_a_toy_scenario_in_one_file_is_listed_set_up_and_run(toy):
    lg = pytest.importorskip("mlperf_loadgen", reason="the loadgen extra (mlcommons-loadgen)")
    assert scenarios.choices() == ("closed_loop", *BUILT_INS, "burst")
    sc = scenarios.get("burst").config(min_duration=1.0, min_query_count=10)
    rules, s = loadgen_conf.read(lg, sc, "mnist_mlp")
    assert s.scenario == lg.TestScenario.SingleStream
    assert rules.effective["min_query_count"] == 10 and rules.config.name == "burst"
    assert rules.meets_minimums()["meets_mlperf_minimums"] is None  # mnist_mlp: no benchmark

    class Harness:  # Harness.run's contract: one summary per LoadGen test
        def __init__(self):
            self.runs = []

        def run(self, settings, name, scenario):
            expected = settings.single_stream_expected_latency_ns
            summary = {"run": name, "mean_latency_seconds": 0.002, "expected": expected}
            self.runs.append(summary)
            return summary

    closed = {1: {"latency_p50": 0.004}}
    test = scenarios.Test(
        Harness(), lg, s, rules.config, rules, closed, scenarios.Batches(1, 8, 32)
    )
    out = rules.config.plugin.run(test)
    assert out["summary"]["expected"] == 1_000_000  # ns: a quarter (its default) of the p50
    assert out["rate"] == pytest.approx(500.0)
    # Its own setting, given: the run is sized by it.
    two = scenarios.get("burst").config(burst_factor=2, min_duration=1.0, min_query_count=10)
    rules, s = loadgen_conf.read(lg, two, "mnist_mlp")
    test = scenarios.Test(
        Harness(), lg, s, rules.config, rules, closed, scenarios.Batches(1, 8, 32)
    )
    assert rules.config.plugin.run(test)["summary"]["expected"] == 2_000_000
    assert rules.config.to_dict()["burst_factor"] == 2  # the record's config.scenario
    # LoadGen's memory is checked by its own schedule and bytes.
    # 1.1 x 1 s at a 2 ms query (4 ms / 2): 550 queries of 1,100 bytes.
    assert loadgen_memory.estimate(s, rules.config.plugin) == 550 * 1100
    detail = {"effective_scenario": "SingleStream", "result_validity": "VALID"}
    detail["result_50.00_percentile_latency_ns"] = 2e6
    summary = loadgen_log.summarize(detail, scenarios.get("burst"))
    assert summary["scenario"] == "SingleStream" and summary["latency_seconds"] == {"p50": 0.002}


def test_a_toy_scenarios_user_conf_keys_are_held_to_the_ranges_it_declares(toy, tmp_path):
    conf = tmp_path / "user.conf"
    conf.write_text("*.SingleStream.target_latency_percentile = 99.9\n")
    # The built-in SingleStream accepts up to 99.99; the toy declares 50 to 99.
    assert user_conf.read(str(conf), "mnist_mlp", scenarios.get("single_stream"))
    with pytest.raises(errors.UsageError) as e:
        user_conf.read(str(conf), "mnist_mlp", scenarios.get("burst"))
    assert "target_latency_percentile = 99.9: out of range; accepted: a number from 50 to 99 " in (
        str(e.value)
    )
    conf.write_text("*.SingleStream.target_latency_percentile = 90\n")
    assert user_conf.read(str(conf), "mnist_mlp", scenarios.get("burst"))


def _infer(toy, *args, timeout=300):
    """`tpubench infer ARGS` with the toy module imported first: nothing else names it."""
    boot = "import sys, burst; from tpubench.cli import main; main.run(['tpubench', *sys.argv[1:]])"
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    env["PYTHONPATH"] = os.pathsep.join([str(toy.parent), *sys.path])
    return subprocess.run(
        [sys.executable, "-c", boot, "infer", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def test_a_toy_scenarios_own_flag_is_in_help_and_held_to_its_range(toy, tmp_path):
    helped = _infer(toy, "--helpfull", timeout=120)
    assert helped.returncode == 0, helped.stderr
    text = " ".join(helped.stdout.split())
    assert "--burst_factor" in text
    assert "burst: how many times faster than the closed loop" in text
    assert "Accepted: 1 to 16 (times faster)" in text
    results = tmp_path / "runs"
    for bad in ("0", "17"):
        proc = _infer(
            toy,
            "--tiny",
            "--scenario=burst",
            f"--burst_factor={bad}",
            f"--results_dir={results}",
            timeout=120,
        )
        line = one_line_error(proc)
        assert proc.returncode == 2
        assert f"--burst_factor={bad} is out of range; accepted: 1 to 16 (times faster)" in line
    assert not results.exists()  # refused before any run: no record
    conf = tmp_path / "user.conf"
    conf.write_text("*.SingleStream.target_latency_percentile = 99.5\n")
    proc = _infer(toy, "--tiny", "--scenario=burst", f"--user_conf={conf}", timeout=120)
    assert proc.returncode == 2 and "accepted: a number from 50 to 99 (percent)" in (
        one_line_error(proc)
    )


def test_a_toy_scenario_in_one_file_runs_end_to_end_through_the_cli(toy, tmp_path):
    pytest.importorskip("mlperf_loadgen", reason="the loadgen extra (mlcommons-loadgen)")
    results = tmp_path / "runs"
    conf = tmp_path / "user.conf"
    conf.write_text("*.SingleStream.target_latency_percentile = 95\n")
    args = ["--model=mnist_mlp", "--tiny", "--scenario=burst", "--min_duration=1s"]
    args += ["--min_query_count=50", "--qsl_samples=64", "--num_warmup_batches=1"]
    args += ["--burst_factor=2", f"--user_conf={conf}", f"--results_dir={results}"]
    proc = _infer(toy, *args)
    assert proc.returncode == 0, proc.stderr
    (path,) = record_files(results)
    rec = json.loads(path.read_text())
    assert rec["status"] == "ok" and rec["scenario"] == "burst"
    summary = rec["loadgen"]["summary"]
    assert summary["scenario"] == "SingleStream" and summary["run"] == "burst-1"
    assert summary["validity"] in ("VALID", "INVALID")  # LoadGen's verdict, whichever it is
    assert rec["loadgen"]["settings"]["burst_factor"] == 2  # its own flag, as given
    assert rec["config"]["scenario"]["burst_factor"] == 2
    assert rec["loadgen"]["rules"]["user_conf_keys"]["target_latency_percentile"]["use"] == (
        "honoured"
    )
    assert rec["loadgen"]["rules"]["effective"]["single_stream_target_latency_percentile"] == 95
    # Its declared traits reach the record, and the report reads them, not its name:
    # latencies of one query are not a p99 to compare, though LoadGen measured one.
    assert rec["loadgen"]["traits"] == {"bounded_by_latency": False, "one_query": True}
    assert summary["latency_seconds"]["p99"] > 0
    typed = records.typed(rec)
    served = scenario_fields.serving(typed, MachineCost())
    assert served["latency_p99"] is None and served["bounded_by_latency"] is False
    assert scenario_fields.bound_text(typed) is None
    assert [c["batch_size"] for c in rec["results"]["closed_loop"]] == [1]
    assert rec["results"]["examples_per_sec"] > 0
    assert rec["loadgen"]["settings"]["max_batch_size"] == 1  # the SUT's batch: sut_batch
    out = " ".join(proc.stdout.split())  # folded at 100 columns
    assert "MLPerf LoadGen burst scenario" in out and f"LoadGen: {summary['validity']}" in out
    assert "burst x2: " in out and " samples/sec" in out  # its own headline


def test_below_the_cli_edge_the_resolved_plugin_travels_never_its_name():
    """A scenario the registry does not know runs the whole protocol below the edge: nothing
    there looks a scenario up by its name again (a lookup would refuse 'unlisted')."""
    lg = pytest.importorskip("mlperf_loadgen", reason="the loadgen extra (mlcommons-loadgen)")
    from tpubench.run.infer.scenarios import single_stream

    class Unlisted(single_stream.SingleStream):  # never registered
        name = "unlisted"

    plugin = Unlisted()
    sc = plugin.config(min_duration=1.0, min_query_count=10)
    rules, s = loadgen_conf.read(lg, sc, "resnet50")
    assert rules.scenario is plugin and rules.config.plugin is plugin
    assert rules.meets_minimums()["meets_mlperf_minimums"] is False  # 1 s: below MLPerf's
    runs = []

    class Harness:
        def run(self, settings, name, scenario):
            assert scenario is plugin
            detail = {"effective_scenario": "SingleStream", "result_validity": "VALID"}
            detail["result_mean_latency_ns"] = 2e6
            summary = loadgen_log.summarize(detail, scenario) | {"min_duration_met": True}
            runs.append(loadgen_memory.estimate(settings, scenario))
            return summary

    test = scenarios.Test(
        Harness(),
        lg,
        s,
        rules.config,
        rules,
        {1: {"latency_p50": 0.004}},
        scenarios.Batches(1, 8, 32),
    )
    assert plugin.run(test)["rate"] == pytest.approx(500.0)
    assert runs == [1100 * 275]  # 1.1 x 1 s at the closed loop's 4 ms: 275 queries
    with pytest.raises(errors.UsageError):
        scenarios.get("unlisted")


def test_the_toy_is_gone_once_its_test_ends():
    assert "burst" not in scenarios.choices()


def test_a_stand_in_config_is_enough_for_the_defaults():
    """The base class's defaults: batches up to the largest, no window, no shedding, no curve."""
    base = scenarios.Scenario()
    b = scenarios.Batches(1, 8, 32)
    sc = types.SimpleNamespace(batching_window=0.5)
    assert base.sut_batch(b) == 32 and base.closed_loop_batches(b) == [1, 32]
    assert base.batching_window(sc) == 0.0 and base.shed_after(sc) is None
    assert base.curve([], sc, None, 0) is None and base.settings_fields(sc, None) == {}
    with pytest.raises(NotImplementedError):
        base.run(None)
