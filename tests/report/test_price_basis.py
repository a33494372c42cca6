"""One named price basis per answer: `--pricing` picks on demand or spot, never a blend.

Every case prices gcp:n1-highcpu-2 from a row that has both prices
($0.07085/h on demand, $0.01967/h spot), so a figure on the wrong basis, or
the median of the two ($0.04526), reads differently from the right one.
"""

from __future__ import annotations

import json
import pathlib

import pytest

from tpubench.cli import report_text
from tpubench.core import money
from tpubench.core.basis import Basis
from tpubench.core.config import AdviseConfig, ReportConfig
from tpubench.cost import run
from tpubench.report import load, serving

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
BASE = sorted((FIXTURES / "batches").glob("*.json"))[0]
ON_DEMAND, SPOT = 0.07085, 0.01967
MACHINE = "gcp:n1-highcpu-2"
RATE = 800.0  # predictions (or examples) per second


@pytest.fixture(autouse=True)
def _wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")


def _rows(per_million: bool) -> list[dict]:
    """The record's cost rows: the chosen basis first, then the other (cost/run.py's order)."""
    out = []
    for basis, hourly in (("on_demand", ON_DEMAND), ("spot", SPOT)):
        dated = [{"row_key": MACHINE, "as_of": "2026-11-26", "status": "confirmed"}]
        row = {"machine": MACHINE, "pricing": basis, "usd_per_hour": hourly, "rows": dated}
        if per_million:
            row["usd_per_million_predictions"] = hourly / (RATE * 3600) * 1e6
        else:
            row["usd_per_epoch"] = hourly * 1437 / RATE / 3600
            row["usd_run"] = hourly * 10 / 3600
        out.append(row)
    return out


def _server_record() -> dict:
    rec = json.loads(BASE.read_text())
    rec.update(kind="infer", scenario="server", status="ok")
    rec["model"]["name"] = rec["config"]["model"] = "mnist_mlp"
    rec["results"] = {"examples_per_sec": RATE, "latency_p99": 0.020}
    point = {
        "run": "confirm-1",
        "qps": RATE,
        "target_qps": RATE,
        "latency_percentile": 99.0,
        "latency_seconds": 0.020,
        "validity": "VALID",
        "valid": True,
        "confirmation": True,
        "machines": _rows(per_million=True),
    }
    rec["loadgen"] = {
        "settings": {"latency_bound_seconds": 0.05, "latency_percentile": 99.0},
        "summary": {"validity": "VALID", "latency_seconds": {"p99": 0.020}},
        "curve": [point],
    }
    rec["cost"] = {"pricing": "on_demand", "machines": _rows(per_million=True)}
    return rec


@pytest.mark.parametrize("basis, hourly", [(Basis.ON_DEMAND, ON_DEMAND), (Basis.SPOT, SPOT)])
def test_serving_advise_prices_the_fleet_on_one_named_basis(tmp_path, basis, hourly):
    (tmp_path / "server.json").write_text(json.dumps(_server_record()))
    cfg = AdviseConfig(
        inputs=(str(tmp_path),),
        model="mnist_mlp",
        qps=20000,
        latency_bound_seconds=0.05,
        pricing=basis,
    )
    text = serving.advise(cfg)
    machines = 25  # 20,000 QPS / 800 QPS per machine
    advice = next(x for x in text.splitlines() if x.startswith("Advice:"))
    assert f"{machines} machine(s) at 800 QPS each" in advice
    assert f"{money.usd(machines * hourly)}/hour on {money.prices_on(basis)}" in advice
    assert money.usd(machines * (ON_DEMAND + SPOT) / 2) not in text  # never the blend


def test_a_record_without_the_basis_is_left_out_and_says_so(tmp_path):
    rec = _server_record()
    rec["cost"]["machines"] = rec["cost"]["machines"][:1]  # on demand only (an older record)
    (tmp_path / "server.json").write_text(json.dumps(rec))
    cfg = AdviseConfig(
        inputs=(str(tmp_path),),
        model="mnist_mlp",
        qps=20000,
        latency_bound_seconds=0.05,
        pricing=Basis.SPOT,
    )
    with pytest.raises(Exception, match="no server-scenario record"):
        serving.advise(cfg)
    run_, _ = load.from_record(rec, "x.json", Basis.SPOT)
    assert run_.usd_per_hour is None and run_.pricing is None and run_.machines == ()
    assert run_.dims["machine"] == MACHINE  # the configuration is the same one


@pytest.mark.parametrize("basis, hourly", [(Basis.ON_DEMAND, ON_DEMAND), (Basis.SPOT, SPOT)])
def test_report_reads_every_figure_on_the_basis(tmp_path, basis, hourly):
    from tpubench.cli import report as report_cli

    rec = json.loads(BASE.read_text())
    rec["results"]["examples_per_sec"] = RATE
    rec["cost"] = {"pricing": "on_demand", "examples_per_epoch": 1437, "machines": _rows(False)}
    (tmp_path / "a.json").write_text(json.dumps(rec))
    report = report_cli.build(ReportConfig(inputs=(str(tmp_path),), pricing=basis))
    (summary,) = report.summaries
    assert summary.usd_per_hour.median == pytest.approx(hourly)
    table = report.tables["summary"]
    assert table.title.endswith(f"$ on {money.prices_on(basis)}")
    csv_row = table.csv_rows[0]
    assert csv_row[table.csv_columns.index("pricing")] == basis
    assert any(f"costs use {money.prices_on(basis)}" in w for w in report.warnings)


def test_train_cost_table_shows_the_chosen_basis_only():
    rec = json.loads(BASE.read_text())
    rows = _rows(False)
    rec["cost"] = {"pricing": "spot", "examples_per_epoch": 1437, "machines": rows[::-1]}
    text = report_text.train_summary(rec)
    table = text[text.index("cost at the measured rate") :]
    assert "spot prices (--pricing=spot)" in table
    assert money.usd(SPOT) in table and money.usd(ON_DEMAND) not in table


def test_train_cost_table_keeps_machine_names_and_three_digits_at_80_columns(monkeypatch):
    """n1-standard-1 and -2 differ in their last character: it is never cut."""
    monkeypatch.setenv("COLUMNS", "80")
    rec = json.loads(BASE.read_text())
    long_name = "gcp:n1-standard-8+4xgcp:v100"
    rows = []
    for name in ("gcp:n1-standard-1", "gcp:n1-standard-2", long_name):
        rows.append(
            {
                "machine": name,
                "pricing": "on_demand",
                "usd_per_hour": 0.0475,
                "usd_per_epoch": 0.00000194,
                "usd_per_million_examples": 0.00135,
                "usd_run": 0.0000448,
                "usd_to_target": 0.0000123,
                "rows": [],
            }
        )
    rec["cost"] = {"pricing": "on_demand", "examples_per_epoch": 1437, "machines": rows}
    text = report_text.train_summary(rec)
    table = text[text.index("cost at the measured rate") : text.index("record:")]
    assert max(len(x) for x in table.splitlines()) <= 80
    assert "gcp:n1-standard-1 " in table and "gcp:n1-standard-2 " in table
    flat = "".join(x.split("│")[1].strip() for x in table.splitlines() if x.startswith("│"))
    assert long_name in flat  # folded onto two lines, every character kept
    # What fits keeps 3 significant digits; what does not is named, never shown cut.
    for figure in ("$0.0475", "$0.00000194", "$0.00135", "$0.0000123"):
        assert figure in table
    assert "left out to fit 80 columns: $ this run (in the record" in table
    assert "…" not in table


def test_a_run_records_both_bases_with_the_chosen_one_first():
    for basis, other in ((Basis.ON_DEMAND, Basis.SPOT), (Basis.SPOT, Basis.ON_DEMAND)):
        hourly, _ = run.prices(machines=(MACHINE, "gcp:n1-standard-1"), pricing_kind=basis)
        assert [h.pricing for h in hourly] == [basis, basis, other, other]
        assert [h.machine for h in hourly][:2] == [MACHINE, "gcp:n1-standard-1"]
        assert hourly[0].usd_per_hour != hourly[2].usd_per_hour


def test_a_server_curve_keeps_each_points_basis_and_the_report_reads_its_own():
    from tpubench.cost import pricing as pricing_lib
    from tpubench.cost import runs as cost_runs
    from tpubench.run.infer import serving_curve

    hourly = (
        pricing_lib.HourlyPrice(ON_DEMAND, "on_demand", (), MACHINE),
        pricing_lib.HourlyPrice(SPOT, "spot", (), MACHINE),
    )
    runs = [{"run": "confirm-1", "scheduled_qps": RATE, "valid": True, "confirmation": True}]
    (point,) = serving_curve.points(runs, 99.0, cost_runs.Prices(hourly), 0)
    assert [m["pricing"] for m in point["machines"]] == ["on_demand", "spot"]
    rec = _server_record()
    rec["loadgen"]["curve"][0]["machines"] = point["machines"]
    for basis, hourly_usd in (("on_demand", ON_DEMAND), ("spot", SPOT)):
        run_, _ = load.from_record(rec, "x.json", basis)
        (p,) = run_.serving["curve"]
        assert p["usd_per_million"] == pytest.approx(hourly_usd / (RATE * 3600) * 1e6)
