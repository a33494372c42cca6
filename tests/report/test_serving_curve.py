"""A server record's latency-QPS-cost curve: `advise` reads it, the report draws it (no TF).

The record is a real training fixture turned into a server-scenario record
with a hand-made curve, so the numbers advise must pick are known: the
curve is read in QPS order up to the first run over the bound asked for.
"""

from __future__ import annotations

import copy
import json
import pathlib

import pytest

from tpubench.core import errors
from tpubench.core.config import AdviseConfig
from tpubench.report import group, load, serving, serving_plots, serving_table

BASE = sorted((pathlib.Path(__file__).parent / "fixtures" / "batches").glob("*.json"))[0]
HOURLY = 0.36  # $/hour of the one machine priced


def _point(run, qps, p99, valid, confirmation=False):
    usd = HOURLY / (qps * 3600) * 1e6
    return {
        "run": run,
        "qps": qps,
        "target_qps": float(int(qps) // 100 * 100),  # a probe and its confirmation: one level
        "latency_percentile": 99.0,
        "latency_seconds": p99,
        "validity": "VALID" if valid else "INVALID",
        "valid": valid,
        "confirmation": confirmation,
        "machines": [
            {"machine": "gcp:m", "usd_per_hour": HOURLY, "usd_per_million_predictions": usd}
        ],
    }


# The search chose 1,200 QPS; its confirmation there was INVALID, the one at 800 VALID.
# (Scheduled QPS differ a little between runs asked for the same QPS.)
CURVE = [
    _point("server-2", 800.0, 0.030, True),
    _point("confirm-2", 801.0, 0.026, True, confirmation=True),
    _point("server-3", 1200.0, 0.017, True),
    _point("confirm-1", 1201.0, 0.065, False, confirmation=True),
    _point("server-4", 1400.0, 0.140, False),
    _point("server-1", 3000.0, 0.270, False),
]


def _record(curve=CURVE, result="confirm-2", rate=801.0, bound=0.05, percentile=99.0) -> dict:
    rec = json.loads(BASE.read_text())
    rec.update(kind="infer", scenario="server", status="ok")
    rec["model"]["name"] = rec["config"]["model"] = "mnist_mlp"
    rec["results"] = {"examples_per_sec": rate, "latency_p99": 0.026}
    rec["loadgen"] = {
        "settings": {"latency_bound_seconds": bound, "latency_percentile": percentile},
        "summary": {"validity": "VALID", "latency_seconds": {"p99": 0.026}, "run": result},
        "curve": curve,
    }
    rec["cost"] = {"machines": [{"machine": "gcp:m", "usd_per_hour": HOURLY}]}
    return rec


def _advise(tmp_path, bound: float, rec=None, qps=4000, others=()) -> str:
    (tmp_path / "server.json").write_text(json.dumps(rec or _record()))
    for i, other in enumerate(others):
        (tmp_path / f"other-{i}.json").write_text(json.dumps(other))
    cfg = AdviseConfig(
        inputs=(str(tmp_path),), model="mnist_mlp", qps=qps, latency_bound_seconds=bound
    )
    return serving.advise(cfg)


def _said(out: str) -> str:
    return " ".join(out.split())  # lines folded at the console's width


def test_at_the_bound_the_valid_confirmation_sizes_the_fleet(tmp_path):
    # Not server-3's 1,200 QPS (VALID as a probe): its confirmation was INVALID.
    out = _said(_advise(tmp_path, 0.05))
    assert "5 machine(s) at 801 QPS each" in out  # ceil(4000 / 801)
    assert (
        "QPS per machine: LoadGen VALID confirmation (confirm-2) at p99<=50ms; the "
        "confirmation(s) at 1,200 QPS were INVALID"
    ) in out


def test_an_invalid_confirmation_under_the_bound_never_sizes_the_fleet(tmp_path):
    # The user's case: the confirmation at 1,000 QPS had p99 48 ms under the 50 ms bound,
    # but LoadGen called it INVALID (too few queries); the step down to 800 was VALID.
    curve = [
        _point("server-1", 1000.0, 0.030, True),
        _point("confirm-1", 1000.0, 0.048, False, confirmation=True),
        _point("confirm-2", 800.0, 0.030, True, confirmation=True),
    ]
    out = _said(_advise(tmp_path, 0.05, _record(curve, "confirm-2", 800.0), qps=20000))
    assert "25 machine(s) at 800 QPS each serve 20000 QPS" in out
    assert (
        "QPS per machine: LoadGen VALID confirmation (confirm-2) at p99<=50ms; "
        "the confirmation(s) at 1,000 QPS were INVALID"
    ) in out


def test_a_looser_bound_reads_no_higher_than_loadgens_verdict(tmp_path):
    # At 70 ms server-3's 1,200 QPS and confirm-1 (65 ms) are under the bound, but LoadGen
    # judged them at 50 ms (INVALID, or a probe alone): the VALID confirmation still counts.
    out = _said(_advise(tmp_path, 0.07))
    assert "5 machine(s) at 801 QPS each" in out
    assert "measured" not in out


def test_a_tighter_bound_than_loadgen_judged_is_refused_with_the_reason(tmp_path):
    # 28 ms: LoadGen's VALID at 50 ms says nothing of 28 ms.
    with pytest.raises(errors.UsageError) as e:
        _advise(tmp_path, 0.028)
    assert "no server-scenario record of mnist_mlp with a LoadGen VALID confirmation at " in (
        str(e.value)
    )
    assert "server.json not used: LoadGen judged it at p99<=50ms, looser than the p99<=28ms" in (
        str(e.value)
    )


def test_a_lower_percentile_than_asked_is_not_used(tmp_path):
    rec = _record(percentile=90.0)
    with pytest.raises(errors.UsageError, match=r"judged it at p90<=50ms, looser than the p99"):
        _advise(tmp_path, 0.05, rec)


def test_valid_probes_with_no_valid_confirmation_are_not_used_and_the_note_says_why(tmp_path):
    probes_only = [
        _point("server-1", 700.0, 0.020, True),
        _point("server-2", 900.0, 0.030, True),
        _point("confirm-1", 900.0, 0.045, False, confirmation=True),
        _point("confirm-2", 720.0, 0.047, False, confirmation=True),
    ]
    rec = _record(probes_only, "confirm-2", 720.0)
    rec["loadgen"]["summary"]["validity"] = "INVALID"
    good = _record([_point("confirm-1", 500.0, 0.02, True, confirmation=True)], "confirm-1", 500.0)
    good["run_id"] += "-other"
    out = _said(_advise(tmp_path, 0.05, rec, others=[good]))
    assert "8 machine(s) at 500 QPS each" in out  # ceil(4000 / 500): only the other record
    assert (
        "note: server.json not used: its 2 VALID point(s) are search probes and no "
        "confirmation run was VALID (confirmations INVALID at 700, 900 QPS)"
    ) in out
    alone = tmp_path / "alone"
    alone.mkdir()
    with pytest.raises(errors.UsageError, match=r"its 2 VALID point\(s\) are search probes"):
        _advise(alone, 0.05, rec)


def test_a_run_at_a_given_target_qps_is_its_own_result(tmp_path):
    # --target_qps: no search, no confirmation; the one full run is MLPerf's result.
    curve = [_point("server-target", 600.0, 0.02, True)]
    out = _said(_advise(tmp_path, 0.05, _record(curve, "server-target", 600.0)))
    assert "7 machine(s) at 600 QPS each" in out
    assert "LoadGen VALID run at the given --target_qps (server-target) at p99<=50ms" in out


def test_the_report_and_advise_say_when_a_model_has_no_mlperf_benchmark(tmp_path):
    rec = _record()
    rec["loadgen"]["settings"]["meets_mlperf_minimums"] = None
    out = _said(_advise(tmp_path, 0.05, rec))
    assert "note: mnist_mlp has no MLPerf Inference benchmark: MLPerf's rules do not apply" in out
    t = serving_table.table(group.group(load.load([str(tmp_path)]).runs))
    assert t.rows[0][-1] == "no MLPerf benchmark" and t.csv_rows[0][-1] is None
    rec["loadgen"]["settings"]["meets_mlperf_minimums"] = False
    (tmp_path / "server.json").write_text(json.dumps(rec))
    t = serving_table.table(group.group(load.load([str(tmp_path)]).runs))
    assert t.rows[0][-1] == "no" and t.csv_rows[0][-1] is False


def test_the_chart_draws_every_point_with_the_bound_and_the_confirmed_qps(tmp_path):
    (tmp_path / "server.json").write_text(json.dumps(_record()))
    groups = group.group(load.load([str(tmp_path)]).runs)
    (c,) = serving_plots.curves(groups)
    assert [p["qps"] for p in c["points"]] == [p["qps"] for p in CURVE]
    assert c["bound_seconds"] == 0.05 and c["confirmed_qps"] == 801.0
    fig, series = serving_plots.chart([c], "prices of today")
    lat, usd = fig.axes
    # The search line leaves the confirmation runs out; every run is a marker.
    assert list(lat.lines[0].get_xdata()) == [800.0, 1200.0, 1400.0, 3000.0]
    assert len(lat.collections) >= len(CURVE) and series == [c]
    assert [p["usd_per_million"] for p in c["points"]] == pytest.approx(
        [HOURLY / (p["qps"] * 3600) * 1e6 for p in CURVE]
    )


def test_a_forged_curve_is_left_out_with_the_reason(tmp_path):
    bad = copy.deepcopy(CURVE)
    bad[2]["latency_seconds"] = "fast"
    (tmp_path / "server.json").write_text(json.dumps(_record(bad)))
    loaded = load.load([str(tmp_path)])
    assert loaded.runs == []
    (x,) = loaded.excluded
    assert "loadgen.curve[2].latency_seconds is of type str; accepted: a number" in x.reason


def test_an_overloaded_qps_ends_the_reading(tmp_path):
    curve = copy.deepcopy(CURVE)
    curve[2]["latency_seconds"] = None  # server-3 at 1,200 QPS was given up
    curve[2]["overloaded"] = True
    out = _advise(tmp_path, 10.0, _record(curve))  # a bound every measured run meets
    assert "5 machine(s) at 801 QPS each" in out


# ---------------------------------------------------------------- traits, not names
# report/ reads loadgen.traits (what the scenario declared), never the scenario's name;
# a record written before traits gets them from its name, in storage alone.
SERVER_TRAITS = {"bounded_by_latency": True, "one_query": False}


def _read(tmp_path, name: str, rec: dict):
    """(advise's answer or refusal, the serving table's rows, the chart's curves) of REC."""
    where = tmp_path / name
    where.mkdir()
    try:
        said = _said(_advise(where, 0.05, rec))
    except errors.UsageError as e:
        said = f"refused: {e}"
    groups = group.group(load.load([str(where)]).runs)
    t = serving_table.table(groups)
    return said, t.rows if t else None, serving_plots.curves(groups)


def _named(rec: dict, scenario: str, traits: dict | None) -> dict:
    rec = copy.deepcopy(rec) | {"scenario": scenario}
    if traits is not None:
        rec["loadgen"]["traits"] = traits
    return rec


def test_a_server_record_from_before_traits_reads_as_one_that_carries_them(tmp_path):
    old = _read(tmp_path, "old", _record())  # no loadgen.traits: written before them
    new = _read(tmp_path, "new", _named(_record(), "server", SERVER_TRAITS))
    assert old == new
    said, rows, curves = old
    assert "5 machine(s) at 801 QPS each" in said and len(curves) == 1
    assert rows[0][1] == "server" and rows[0][6] == "p99<=50ms"


def test_a_scenario_bounded_by_latency_is_served_like_server_whatever_its_name(tmp_path):
    said, rows, curves = _read(tmp_path, "s", _record())
    toy = _read(tmp_path, "toy", _named(_record(), "poisson_burst", SERVER_TRAITS))
    # advise sizes the same fleet from the same curve, at the same bound
    advice = said[said.index("5 machine(s) at 801 QPS each") :]
    assert advice.replace("[infer server]", "[infer poisson_burst]") in toy[0]
    assert "at p99<=50ms; the confirmation(s) at 1,200 QPS were INVALID" in advice
    (drawn,) = toy[2]  # and the chart draws it, every point as server's
    assert drawn == curves[0] | {"label": curves[0]["label"].replace("server", "poisson_burst")}
    assert toy[1][0][1] == "poisson_burst" and toy[1][0][2:] == rows[0][2:]
    assert toy[1][0][0].replace("poisson_burst", "server") == rows[0][0]


def test_the_traits_decide_not_the_name(tmp_path):
    # A record named server that declares no latency bound is no fleet's sizing.
    said, rows, curves = _read(
        tmp_path, "x", _named(_record(), "server", {"bounded_by_latency": False})
    )
    assert said.startswith("refused: no server-scenario record of mnist_mlp")
    assert curves == [] and rows[0][6] == "n/a"  # no bound shown either


def test_one_querys_latencies_are_no_p99_whatever_its_name(tmp_path):
    def offline_like(scenario, traits):
        rec = _named(_record(curve=[]), scenario, traits)
        rec["loadgen"]["settings"] = {}
        return rec

    old = _read(tmp_path, "old", offline_like("offline", None))  # before traits
    toy = _read(tmp_path, "toy", offline_like("all_at_once", {"one_query": True}))
    plain = _read(tmp_path, "plain", offline_like("all_at_once", {}))
    assert old[1][0][5] == toy[1][0][5] == "n/a"  # p99 ms: not compared
    assert plain[1][0][5] == "26.00"  # a scenario that is not one query shows its p99
    assert old[1][0][2:] == toy[1][0][2:]


@pytest.mark.parametrize(
    ("traits", "reason"),
    [
        ("yes", "loadgen.traits is of type str; accepted: a mapping"),
        ({"bounded_by_latency": "no"}, "traits.bounded_by_latency is of type str; accepted: true"),
        ({"one_query": 1}, "loadgen.traits.one_query is of type int; accepted: true or false"),
    ],
)
def test_forged_traits_are_left_out_with_the_reason(tmp_path, traits, reason):
    (tmp_path / "server.json").write_text(json.dumps(_named(_record(), "server", traits)))
    loaded = load.load([str(tmp_path)])
    assert loaded.runs == []
    (x,) = loaded.excluded
    assert reason in x.reason
