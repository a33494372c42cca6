"""`tpubench report` per chip: a 4-chip and an 8-chip machine at known prices compare per chip."""

import csv
import json
import pathlib
import sys

import pytest

from tpubench.cli import report as cli
from tpubench.core.config import ReportConfig

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "fixtures"))
import make_fixtures  # noqa: E402


def _record(run_id, machine, chips, rate, optimizer="model"):
    rec = make_fixtures.record(
        run_id,
        "resnet50",
        make_fixtures.RESNET,
        rate,
        machine=machine,
        batch=128 * max(chips, 1),
        replicas=max(chips, 1),
        accelerator="tpu" if chips else "cpu",
        dataset="synthetic",
        epoch=1_281_167,
    )
    rec["cost"]["machines"][0]["num_accelerators"] = chips
    # what ran: as many TPU chips as the machine carries (a price only for the hardware that ran)
    rec["hardware"]["accelerators"] = [{"kind": "tpu", "name": "TPU v5 lite"}] * chips
    rec["config"]["optimizer"] = optimizer
    return rec


@pytest.fixture()
def chips_dir(tmp_path):
    # tpu-v5e-4: 4 chips at $4.80/hour; tpu-v5e-8: 8 chips at $9.60/hour (make_fixtures.PRICES).
    for rec in (
        _record("v5e4", "gcp:tpu-v5e-4", 4, 2000.0),
        _record("v5e8", "gcp:tpu-v5e-8", 8, 3200.0),
        _record("cpu", "gcp:n1-standard-2", 0, 100.0),
    ):
        (tmp_path / f"{rec['run_id']}.json").write_text(json.dumps(rec))
    return tmp_path


def test_summary_csv_has_exact_per_chip_figures(chips_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("chips_report")
    report = cli.build(ReportConfig(inputs=(str(chips_dir),), output=str(out)))
    cli.write(report, str(out), "per chip")
    with open(out / "summary.csv") as f:
        rows = {r["run_ids"]: r for r in csv.DictReader(f)}
    assert float(rows["v5e4"]["examples_per_sec_per_chip_median"]) == pytest.approx(500.0)
    assert float(rows["v5e4"]["usd_per_chip_hour_median"]) == pytest.approx(1.20)
    assert float(rows["v5e8"]["examples_per_sec_per_chip_median"]) == pytest.approx(400.0)
    assert float(rows["v5e8"]["usd_per_chip_hour_median"]) == pytest.approx(1.20)
    assert rows["cpu"]["examples_per_sec_per_chip_median"] == ""  # no chips on a CPU machine


def test_terminal_table_shows_per_chip_columns(chips_dir, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    text = cli.report_main(ReportConfig(inputs=(str(chips_dir),)))
    header = next(line for line in text.splitlines() if "┃ configuration" in line)
    assert "ex/s per chip" in header and "$/chip-hour" in header
    v5e8 = next(line for line in text.splitlines() if "gcp:tpu-v5e-8" in line)
    assert "400" in v5e8 and "$1.20" in v5e8


def test_optimizer_is_a_configuration(tmp_path):
    for rec in (
        _record("sgd", "gcp:tpu-v5e-8", 8, 3300.0, optimizer="sgd"),
        _record("own", "gcp:tpu-v5e-8", 8, 3000.0),
    ):
        (tmp_path / f"{rec['run_id']}.json").write_text(json.dumps(rec))
    labels = [s.label for s in cli.build(ReportConfig(inputs=(str(tmp_path),))).summaries]
    assert sorted(labels) == [
        "resnet50 · gcp:tpu-v5e-8 · optimizer=model",
        "resnet50 · gcp:tpu-v5e-8 · optimizer=sgd",
    ]
