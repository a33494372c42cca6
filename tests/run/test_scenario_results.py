"""The server confirmation run, the offline repeats and the latency-QPS-cost curve (no TF).

A scripted harness stands in for LoadGen: it answers each run from the QPS
(or expected rate) the settings carry, so what is checked is the decision
tpubench takes from LoadGen's verdicts, and what the console prints of it.
"""

from __future__ import annotations

import types

import pytest

from tpubench.cli import scenario_text
from tpubench.core import errors
from tpubench.cost import pricing
from tpubench.cost import runs as cost_runs
from tpubench.run.infer import scenarios, server_search, serving_curve
from tpubench.run.infer.scenarios import offline

# As loadgen_conf.read() hands it on: every setting filled in.
SERVER = scenarios.get("server").config(
    latency_bound=0.05, latency_percentile=99.0, min_duration=5.0
)


class Scripted:
    """Harness.run's contract: one summary per run, appended to .runs."""

    def __init__(self, verdict):
        self.verdict = verdict  # (settings, name) -> summary fields
        self.runs = []

    def run(self, settings, name, scenario):
        summary = {"run": name, "wall_seconds": 5.0} | self.verdict(settings, name)
        self.runs.append(summary)
        return summary


def _run(harness, s, sc, args, rules):
    """The scenario's LoadGen runs, as infer_scenario.run drives them (Scenario.run)."""
    closed, largest, single, per_query = args
    batches = scenarios.Batches(single, per_query, largest)
    test = scenarios.Test(harness, None, s, sc, rules, closed, batches)
    return sc.plugin.run(test)


def _stream(name: str, **shared):
    """A stream scenario's config: multi_stream's 8 samples a query (its own setting)."""
    own = {"samples_per_query": 8} if name == "multi_stream" else {}
    return scenarios.get(name).config(**own, **shared)


def _server(valid_up_to: float, confirm_up_to: float):
    def verdict(s, name):
        qps = s.server_target_qps
        limit = confirm_up_to if name.startswith("confirm") else valid_up_to
        ok = qps <= limit
        return {
            "target_qps": qps,
            "scheduled_qps": qps,
            "valid": ok,
            "validity": "VALID" if ok else "INVALID",
            "latency_seconds": {"p99": 0.02 if ok else 0.09},
        }

    return verdict


def test_the_searched_qps_is_confirmed_by_one_more_run():
    h = Scripted(_server(valid_up_to=700, confirm_up_to=700))
    s = types.SimpleNamespace()
    found = server_search.search_server(
        h, None, s, SERVER, server_search.Capacity(1000.0, 32, 0.001)
    )
    check = server_search.confirm_server(h, None, s, SERVER, found)
    assert check["confirmed"]["target_qps"] == found["best"]["target_qps"] <= 700
    assert [r["run"] for r in check["tries"]] == ["confirm-1"] and check["stepped_down"] == []
    assert h.runs[-1]["confirmation"] is True


def test_a_failed_confirmation_steps_down_to_a_lower_valid_probe():
    h = Scripted(_server(valid_up_to=700, confirm_up_to=600))
    s = types.SimpleNamespace()
    found = server_search.search_server(
        h, None, s, SERVER, server_search.Capacity(1000.0, 32, 0.001)
    )
    best = found["best"]["target_qps"]
    check = server_search.confirm_server(h, None, s, SERVER, found)
    valid_probes = sorted(
        r["target_qps"] for r in found["runs"] if r["valid"] and r["run"][0] == "s"
    )
    assert best > 600 and check["stepped_down"][0] == best
    # Each step goes to the next lower VALID probe of the search, and the first VALID one counts.
    assert check["confirmed"]["target_qps"] == max(q for q in valid_probes if q <= 600)
    text = scenario_text._confirmation(
        {
            "searched_qps": best,
            "tries": [r["run"] for r in check["tries"]],
            "stepped_down_from": check["stepped_down"],
        },
        check["confirmed"],
    )
    assert f"the search chose {best:,.1f} QPS; INVALID at {best:,.1f}" in text
    assert f"VALID at {check['confirmed']['target_qps']:,.1f} QPS" in text


def test_no_confirmed_qps_is_one_line():
    h = Scripted(_server(valid_up_to=700, confirm_up_to=0))
    s = types.SimpleNamespace()
    found = server_search.search_server(
        h, None, s, SERVER, server_search.Capacity(1000.0, 32, 0.001)
    )
    check = server_search.confirm_server(h, None, s, SERVER, found)
    assert check["confirmed"] is None and len(check["tries"]) == server_search.CONFIRM_TRIES
    e = server_search.unconfirmed(SERVER, found["best"], check["tries"])
    assert isinstance(e, errors.UsageError) and "\n" not in str(e)
    assert f"the search's best QPS ({found['best']['target_qps']}) was not confirmed" in str(e)


def test_offline_reports_the_median_of_its_repeats_and_their_spread():
    rates = iter([900.0, 1800.0, 1000.0])

    def verdict(s, name):
        return {"samples_per_sec": next(rates), "min_duration_met": True, "validity": "VALID"}

    h = Scripted(verdict)
    sc = scenarios.get("offline").config(offline_runs=3)
    found = offline.run_offline(h, None, types.SimpleNamespace(), sc, 1200.0)
    assert [r["run"] for r in found["results"]] == ["offline-1", "offline-2", "offline-3"]
    assert found["median"]["samples_per_sec"] == 1000.0
    spread = offline.spread([r["samples_per_sec"] for r in found["results"]])
    assert spread["median"] == 1000.0 and spread["relative_spread"] == pytest.approx(0.9)


def test_a_short_offline_run_is_run_again_sized_by_loadgens_rate():
    answers = iter([(5000.0, False), (4000.0, True)])

    def verdict(s, name):
        rate, met = next(answers)
        return {
            "samples_per_sec": rate,
            "min_duration_met": met,
            "expected": s.offline_expected_qps,
        }

    h = Scripted(verdict)
    sc = scenarios.get("offline").config(offline_runs=1)
    found = offline.run_offline(h, None, types.SimpleNamespace(), sc, 1000.0)
    assert [r["run"] for r in h.runs] == ["offline-1", "offline-1b"]
    assert h.runs[1]["expected"] == 1.25 * 5000.0 and found["median"]["samples_per_sec"] == 4000.0


def test_a_user_conf_expected_qps_is_kept_for_a_short_offline_run():
    """The user.conf set the offline target_qps: a short run is not resized (LoadGen judges)."""
    h = Scripted(lambda s, name: {"samples_per_sec": 5000.0, "min_duration_met": False})
    sc = scenarios.get("offline").config(offline_runs=1, expected_from_user_conf=True)
    offline.run_offline(h, None, types.SimpleNamespace(), sc, 1000.0)
    assert [r["run"] for r in h.runs] == ["offline-1"]


def test_every_server_run_is_a_point_priced_at_its_own_qps():
    prices = cost_runs.Prices((pricing.HourlyPrice(3.6, "override", (), "m1"),))
    runs = [
        {"run": "server-2", "scheduled_qps": 500.0, "valid": True, "validity": "VALID"}
        | {"latency_seconds": {"p99": 0.01}, "wall_seconds": 5.0},
        {"run": "server-1", "scheduled_qps": 1000.0, "valid": False, "validity": "INVALID"}
        | {"latency_seconds": {"p99": 0.2}, "wall_seconds": 5.0},
    ]
    points = serving_curve.points(runs, 99.0, prices, 0)
    assert [p["run"] for p in points] == ["server-2", "server-1"]  # in QPS order
    assert [p["latency_seconds"] for p in points] == [0.01, 0.2]
    # $3.60/hour at 500 QPS: 3.6 / (500 * 3600) * 1e6 = $2 per million; half that at 1000.
    usd = [p["machines"][0]["usd_per_million_predictions"] for p in points]
    assert usd == pytest.approx([2.0, 1.0])
    assert (
        serving_curve.percentile_key(99.9) == "p99.9" and serving_curve.percentile_key(90) == "p90"
    )


def test_an_overloaded_run_is_a_point_with_no_latency():
    """Its queries were completed unserved: LoadGen's latencies of them are not the curve's."""
    prices = cost_runs.Prices((pricing.HourlyPrice(3.6, "override", (), "m1"),))
    run = {"run": "server-1", "scheduled_qps": 900.0, "valid": False, "validity": "OVERLOADED"}
    run |= {"overloaded": {"backlog": 10}, "latency_seconds": {"p99": 0.001}}
    (point,) = serving_curve.points([run], 99.0, prices, 0)
    assert point["latency_seconds"] is None and point["overloaded"] is True


def test_the_confirmation_steps_at_least_a_tenth_then_a_fifth():
    h = Scripted(_server(valid_up_to=700, confirm_up_to=0))
    s = types.SimpleNamespace()
    found = server_search.search_server(
        h, None, s, SERVER, server_search.Capacity(1000.0, 32, 0.001)
    )
    probes = sorted({r["target_qps"] for r in found["runs"] if r["valid"]}, reverse=True)
    h.verdict = _server(valid_up_to=700, confirm_up_to=round(0.85 * probes[-1], 1))
    check = server_search.confirm_server(h, None, s, SERVER, found)
    tried = [r["target_qps"] for r in check["tries"]]
    # The scripted search's VALID probes: 687.5, 625, 500.  Each step is at least 10%
    # down (625 is skipped), and below the last probe 20% down.
    assert probes == [687.5, 625.0, 500.0]
    assert tried == [687.5, 500.0, round(server_search.STEP_DOWN * 500.0, 1)]
    assert check["confirmed"]["target_qps"] == tried[-1]


def test_a_given_target_qps_is_one_run_and_no_confirmation():
    """--target_qps: no search, so the one full run at that QPS is the result."""
    h = Scripted(_server(valid_up_to=700, confirm_up_to=700))
    sc = scenarios.get("server").config(
        latency_bound=0.05, latency_percentile=99.0, target_qps=400.0
    )
    closed = {1: {"latency_p99": 0.001}, 32: {"examples_per_sec": 1000.0}}
    rules = types.SimpleNamespace(effective={"min_query_count": 100, "min_duration_seconds": 1.0})
    out = _run(h, types.SimpleNamespace(), sc, (closed, 32, 1, 8), rules)
    assert [r["run"] for r in h.runs] == ["server-target"] and "confirmation" not in out
    assert out["summary"]["valid"] is True and out["rate"] == 400.0
    text = scenario_text._runs_table(h.runs, [], {"qps_search": "given --target_qps"}, "spot").title
    assert text.startswith("server run at --target_qps: the latency-QPS-cost curve")


def test_a_user_conf_qps_out_of_reach_names_the_user_conf():
    rules = types.SimpleNamespace(user_conf_keys={"target_qps": {"use": "honoured"}})
    name = server_search.qps_source(rules)
    sc = scenarios.get("server").config(latency_bound=0.05, latency_percentile=99.0, target_qps=5e4)
    with pytest.raises(errors.UsageError) as e:
        server_search.check_server(sc, server_search.Capacity(1000.0, 32, 0.001), name)
    assert str(e.value).startswith("the user.conf's target_qps=50000 is out of reach")
    assert "; lower the user.conf's target_qps, or give none to search" in str(e.value)


@pytest.mark.parametrize("name", ["single_stream", "multi_stream"])
def test_a_stream_whose_queries_ran_out_before_the_minimum_duration_runs_once_more(name):
    """LoadGen sizes a stream by the expected latency: queries faster than the closed loop
    said run out early; one more run is sized by LoadGen's own mean, a fifth to spare."""
    answers = iter([(0.001, False), (0.001, True)])

    def verdict(s, run):
        mean, met = next(answers)
        expected = getattr(s, f"{name}_expected_latency_ns", None)
        return {"mean_latency_seconds": mean, "min_duration_met": met, "expected": expected}

    h = Scripted(verdict)
    sc = _stream(name)
    closed = {1: {"latency_p50": 0.004}, 8: {"latency_p50": 0.004}}
    out = _run(h, types.SimpleNamespace(), sc, (closed, 8, 1, 8), None)
    assert [r["run"] for r in h.runs] == [name, f"{name}b"]
    assert [r["expected"] for r in h.runs] == [4_000_000, 800_000]  # ns: closed p50, 0.8 x mean
    assert out["rate"] == pytest.approx((1 if name == "single_stream" else 8) / 0.001)
    # A run that met its duration is not repeated; nor one whose user.conf set the latency.
    for kept, met in (
        (_stream(name), True),
        (_stream(name, expected_from_user_conf=True), False),
    ):
        answers = iter([(0.001, met)])
        h = Scripted(verdict)
        _run(h, types.SimpleNamespace(), kept, (closed, 8, 1, 8), None)
        assert len(h.runs) == 1


def test_a_bisection_with_no_valid_run_goes_on_down_until_one_is():
    # A busy machine: the closed loop saw 1000/s, but only 5 QPS or less is VALID.  The
    # bisection's 6 runs end at 15.6 QPS; the descent goes on from the QPS it would have
    # tried next (7.8), a quarter at a time.
    h = Scripted(_server(valid_up_to=5.0, confirm_up_to=5.0))
    s = types.SimpleNamespace()
    found = server_search.search_server(
        h, None, s, SERVER, server_search.Capacity(1000.0, 32, 0.001)
    )
    names = [r["run"] for r in found["runs"]]
    assert names == [f"server-{i}" for i in range(1, 7)] + ["server-low-1", "server-low-2"]
    assert [r["target_qps"] for r in found["runs"][5:]] == [15.6, 7.8, 1.9]
    assert found["best"]["run"] == "server-low-2" and found["best"]["valid"]
    check = server_search.confirm_server(h, None, s, SERVER, found)
    assert check["confirmed"]["target_qps"] == 1.9


def test_a_search_that_finds_nothing_says_how_low_it_went_and_why_it_stopped():
    h = Scripted(_server(valid_up_to=0.0, confirm_up_to=0.0))
    s = types.SimpleNamespace()
    found = server_search.search_server(
        h, None, s, SERVER, server_search.Capacity(1000.0, 32, 0.001)
    )
    assert found["best"] is None and [r["target_qps"] for r in found["runs"][6:]] == [7.8, 1.9]
    assert found["stopped"] == "the next, 0.5 QPS, is below 1 QPS"
    e = server_search.no_valid_qps(SERVER, found["runs"], found["stopped"])
    assert isinstance(e, errors.UsageError) and "\n" not in str(e)
    assert str(e) == (
        "--latency_bound=50ms at p99: no QPS tried was VALID in 8 LoadGen run(s); at the "
        "lowest, 1.9 QPS (the search stopped: the next, 0.5 QPS, is below 1 QPS), LoadGen "
        "said: INVALID"
    )
    # With a floor further down, the descent's run count is what ends it.
    h = Scripted(_server(valid_up_to=0.0, confirm_up_to=0.0))
    found = server_search.search_server(h, None, s, SERVER, server_search.Capacity(1e6, 32, 0.001))
    assert len(found["runs"]) == 6 + server_search.DESCENT_RUNS
    assert found["stopped"] == "4 runs below the bisection, each a quarter of the QPS before"
