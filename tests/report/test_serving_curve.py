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
from tpubench.report import group, load, serving, serving_plots

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


def _record(curve=CURVE) -> dict:
    rec = json.loads(BASE.read_text())
    rec.update(kind="infer", scenario="server", status="ok")
    rec["model"]["name"] = rec["config"]["model"] = "mnist_mlp"
    rec["results"] = {"examples_per_sec": 801.0, "latency_p99": 0.026}
    rec["loadgen"] = {
        "settings": {"latency_bound_seconds": 0.05, "latency_percentile": 99.0},
        "summary": {"validity": "VALID", "latency_seconds": {"p99": 0.026}},
        "curve": curve,
    }
    rec["cost"] = {"machines": [{"machine": "gcp:m", "usd_per_hour": HOURLY}]}
    return rec


def _advise(tmp_path, bound: float, rec=None) -> str:
    (tmp_path / "server.json").write_text(json.dumps(rec or _record()))
    cfg = AdviseConfig(
        inputs=(str(tmp_path),), model="mnist_mlp", qps=4000, latency_bound_seconds=bound
    )
    return serving.advise(cfg)


def test_at_the_bound_loadgen_judged_the_confirmed_result_counts(tmp_path):
    # Not server-3's 1,200 QPS (VALID as a probe): its confirmation went over 50 ms.
    out = _advise(tmp_path, 0.05)
    assert "5 machine(s) at 801 QPS each" in out  # ceil(4000 / 801)
    assert "from the curve: confirmed run (LoadGen VALID)" in out


def test_a_looser_bound_reads_further_up_the_curve_and_says_it_is_measured(tmp_path):
    out = _advise(tmp_path, 0.07)
    # At 1,200 QPS the worst run (confirm-1, 65 ms) is under 70 ms; server-4 (140 ms) is
    # the first over it.  The level counts at the lower QPS its runs kept.
    assert "4 machine(s) at 1,200 QPS each" in out
    assert "p99 65 ms measured at this QPS (LoadGen judged p99<=50ms)" in out


def test_a_tighter_bound_stops_at_the_first_run_over_it(tmp_path):
    # 28 ms: server-2 (30 ms) at the lowest QPS is already over it.
    with pytest.raises(errors.UsageError, match="VALID or measured at p99 <= 28 ms"):
        _advise(tmp_path, 0.028)


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
