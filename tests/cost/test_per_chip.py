"""Per-chip figures: a 4-chip and an 8-chip machine at known prices compare per chip."""

import pytest

from tpubench.cost import catalog, pricing, runs

HEADER = "key,provider,kind,region,unit,count,on_demand,spot,as_of,source,status,notes\n"
ROWS = (
    "gcp:tpu-v2-8,gcp,tpu,us,slice-hour,4,4.50,1.35,2025-01-01,test,confirmed,4 chips\n"
    "gcp:tpu-v5e,gcp,tpu,us,chip-hour,1,1.20,0.24,2025-01-01,test,confirmed,per chip\n"
    "gcp:n1-standard-8,gcp,instance,us,instance-hour,0,0.38,0.08,2025-01-01,test,confirmed,\n"
)


@pytest.fixture()
def cat(tmp_path):
    path = tmp_path / "prices.csv"
    path.write_text(HEADER + ROWS)
    return catalog.load(str(path))


def _row(spec, cat, rate, replicas):
    usage = runs.Usage(rate, 3600.0, replicas, examples_per_epoch=1_000_000)
    priced = runs.Prices((pricing.hourly(spec, cat),))
    return runs.train_costs(priced, usage)["machines"][0]


def test_v2_8_is_four_chips_whatever_its_eight_cores(cat):
    # A v2-8 runs 8 replicas (TensorCores); the catalog says it is 4 chips.
    row = _row("gcp:tpu-v2-8", cat, 1000.0, replicas=8)
    assert row["usd_per_hour"] == pytest.approx(4.50)
    assert row["num_accelerators"] == 4
    assert row["examples_per_sec_per_chip"] == pytest.approx(250.0)
    assert row["usd_per_chip_hour"] == pytest.approx(1.125)


def test_v5e_8_is_eight_chips(cat):
    row = _row("gcp:tpu-v5e-8", cat, 4000.0, replicas=8)
    assert row["usd_per_hour"] == pytest.approx(9.60)
    assert row["num_accelerators"] == 8
    assert row["examples_per_sec_per_chip"] == pytest.approx(500.0)
    assert row["usd_per_chip_hour"] == pytest.approx(1.20)


def test_cpu_machine_has_no_per_chip_figures(cat):
    row = _row("gcp:n1-standard-8", cat, 100.0, replicas=0)
    assert row["num_accelerators"] == 0
    assert row["examples_per_sec_per_chip"] is None and row["usd_per_chip_hour"] is None


def test_override_price_falls_back_to_the_run_accelerators():
    row = pricing.summarize_inference(
        pricing.override(8.0), predictions_per_sec=800.0, run_seconds=1.0, num_accelerators=4
    )
    assert row["predictions_per_sec_per_chip"] == pytest.approx(200.0)
    assert row["usd_per_chip_hour"] == pytest.approx(2.0)
