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
from conftest import record_files

from tpubench.core import errors
from tpubench.core.config import ScenarioConfig
from tpubench.report import scenario_fields
from tpubench.run.infer import loadgen_conf, loadgen_log, scenarios
from tpubench.storage import record_migrations, records
from tpubench.storage.record_results import LoadGenTraits, MachineCost
from tpubench.testing import registries

# The whole toy scenario: one file.
TOY = '''"""burst: LoadGen's SingleStream, its schedule sized for queries four times faster."""

from tpubench.run.infer import scenarios


@scenarios.register
class Burst(scenarios.Scenario):
    name = "burst"
    loadgen_name = "SingleStream"
    expected_key = "target_latency"  # a user.conf's target_latency sizes it instead
    one_query = True  # a trait reports read: its latencies are not compared at a percentile

    def sut_batch(self, batches):
        return batches.single

    def closed_loop_batches(self, batches):
        return [batches.single]

    def size_run(self, s, sc, expected, qps):
        if not sc.expected_from_user_conf:
            s.single_stream_expected_latency_ns = max(1, int(expected / 4 * 1e9))

    def run(self, test):
        expected = test.closed[test.batches.single]["latency_p50"]
        summary = test.harness.run(self.settings_for(test, expected), "burst-1", self.name)
        return {"summary": summary, "rate": 1 / summary["mean_latency_seconds"]}

    def settings_fields(self, sc, rules):
        return {"burst_factor": 4}
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
    sc = ScenarioConfig(name="burst", min_duration=1.0, min_query_count=10)
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
    out = scenarios.get("burst").run(test)
    assert out["summary"]["expected"] == 1_000_000  # ns: a quarter of the closed loop's p50
    assert out["rate"] == pytest.approx(500.0)
    detail = {"effective_scenario": "SingleStream", "result_validity": "VALID"}
    detail["result_50.00_percentile_latency_ns"] = 2e6
    summary = loadgen_log.summarize(detail, "burst")
    assert summary["scenario"] == "SingleStream" and summary["latency_seconds"] == {"p50": 0.002}


def test_a_toy_scenario_in_one_file_runs_end_to_end_through_the_cli(toy, tmp_path):
    pytest.importorskip("mlperf_loadgen", reason="the loadgen extra (mlcommons-loadgen)")
    # `tpubench infer` with the toy module imported first: nothing else names it.
    boot = "import sys, burst; from tpubench.cli import main; main.run(['tpubench', *sys.argv[1:]])"
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    env["PYTHONPATH"] = os.pathsep.join([str(toy.parent), *sys.path])
    results = tmp_path / "runs"
    args = ["--model=mnist_mlp", "--tiny", "--scenario=burst", "--min_duration=1s"]
    args += ["--min_query_count=50", "--qsl_samples=64", "--num_warmup_batches=1"]
    proc = subprocess.run(
        [sys.executable, "-c", boot, "infer", *args, f"--results_dir={results}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    (path,) = record_files(results)
    rec = json.loads(path.read_text())
    assert rec["status"] == "ok" and rec["scenario"] == "burst"
    summary = rec["loadgen"]["summary"]
    assert summary["scenario"] == "SingleStream" and summary["run"] == "burst-1"
    assert summary["validity"] in ("VALID", "INVALID")  # LoadGen's verdict, whichever it is
    assert rec["loadgen"]["settings"]["burst_factor"] == 4
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
    assert "burst: latency p50 / p90 / p99" in out


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
