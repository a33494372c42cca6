"""Tests for $/hour, $/epoch, $ to target and the priced `tpubench prices --machine` view."""

import json
import math
import subprocess
import sys

import pytest

from tpubench.cli import prices as cli
from tpubench.core import basis as basis_lib
from tpubench.core import errors
from tpubench.core.basis import Basis
from tpubench.cost import catalog, pricing


@pytest.fixture(scope="module")
def cat():
    return catalog.load()


@pytest.mark.parametrize(
    ("spec", "kind", "usd"),
    [
        # Hand-computed from the catalog rows.
        ("gcp:n1-standard-8+4xgcp:v100", "on_demand", 0.380 + 4 * 2.48),  # 10.30
        ("2xgcp:n1-standard-8+8xgcp:v100", "on_demand", 2 * 0.380 + 8 * 2.48),
        ("gcp:tpu-v5e-8", "on_demand", 9.60),
        ("gcp:tpu-v5e-8", "spot", 8 * 0.24493),
        ("2xgcp:tpu-v5e-8", "spot", 16 * 0.24493),
        ("gcp:tpu-v4-8", "on_demand", 4 * 3.22),
        ("gcp:tpu-v5p-8", "on_demand", 4 * 4.20),
        ("gcp:tpu-v6e-8", "spot", 8 * 0.54421),
        ("gcp:tpu-v2-8", "on_demand", 4.50),
        ("gcp:tpu-v2-8", "spot", 1.35),
        ("gcp:tpu-v2-32", "on_demand", 4 * 4.50),
        ("gcp:tpu-v3-8", "spot", 2.04),
        ("aws:p3.2xlarge", "on_demand", 3.06),
        ("aws:p3.2xlarge", "spot", 0.52),
        ("aws:p4d.24xlarge", "on_demand", 32.77),
        ("gcp:a2-highgpu-1g", "spot", 0.36975 + 1.4341),
        ("8xgcp:n1-vcpu+30xgcp:n1-gib", "on_demand", 8 * 0.031611 + 30 * 0.004237),
        # The SkyPilot v9 snapshot's rows (2c3d7ea7d76b): H200, B200 and AMD/Xeon VMs.
        ("gcp:a3-ultragpu-8g", "on_demand", 12.266 + 74.49392),
        ("gcp:a3-ultragpu-8g", "spot", 6.68552 + 40.972),
        ("gcp:a4-highgpu-8g", "on_demand", 90.216),
        ("gcp:a4-highgpu-8g", "spot", 37.7464),
        ("gcp:c4-standard-8", "spot", 0.22819),
        ("gcp:c3d-standard-8", "on_demand", 0.36319),
        ("gcp:c3d-standard-8", "spot", 0.07704),
        ("gcp:c4d-standard-48", "on_demand", 2.21995),
        ("gcp:n2d-standard-8+4xgcp:t4", "spot", 0.08896 + 4 * 0.175),
        # The 2017-2018 studies, reproduced from historical rows.
        ("gcp:n1-standard-1@2017+gcp:k80@2017", "on_demand", 0.745),
        ("gcp:n1-highcpu-64@2017", "spot", 0.509),
        ("gcp:tpu-v2-8@2018", "on_demand", 6.50),
        ("gcp:k80@2018+gcp:p100@2018", "spot", 0.22 + 0.73),
    ],
)
def test_hourly(cat, spec, kind, usd):
    price = pricing.hourly(spec, cat, Basis(kind))
    assert price.usd_per_hour == pytest.approx(usd, abs=1e-4)
    assert price.pricing == kind
    assert price.usd_per_hour == pytest.approx(sum(line.subtotal for line in price.lines))


def test_lines_say_which_rows_were_used(cat):
    price = pricing.hourly("gcp:n1-standard-8+4xgcp:v100", cat)
    host, gpus = price.lines
    assert (host.count, host.key, host.status) == (1, "gcp:n1-standard-8", "confirmed")
    assert "SkyPilot catalog v8" in host.source
    assert (gpus.count, gpus.row_key, gpus.unit_price, gpus.subtotal) == (4, "gcp:v100", 2.48, 9.92)
    assert gpus.as_of.isoformat() == "2026-11-26"
    assert "SkyPilot" in gpus.source
    assert price.machine == "gcp:n1-standard-8+4xgcp:v100"


def test_tpu_slice_line(cat):
    (line,) = pricing.hourly("gcp:tpu-v5e-8", cat).lines
    assert (line.count, line.key, line.row_key, line.unit) == (
        8,
        "gcp:tpu-v5e-8",
        "gcp:tpu-v5e",
        "chip-hour",
    )
    assert "8 chips" in line.note


def test_to_dict_is_json_friendly(cat):
    d = json.loads(json.dumps(pricing.hourly("gcp:k80@2017+gcp:n1-standard-1@2017", cat).to_dict()))
    assert d["usd_per_hour"] == pytest.approx(0.745)
    assert d["lines"][0]["key"] == "gcp:k80@2017"
    assert d["lines"][0]["as_of"] == "2017-06-01"
    assert d["lines"][0]["status"] == "historical"


def test_spot_without_a_spot_price_says_on_demand_exists(cat):
    with pytest.raises(errors.PriceError) as e:
        pricing.hourly("gcp:n1-standard-8+gcp:g2-standard-8", cat, Basis.SPOT)
    assert "gcp:g2-standard-8" in str(e.value)
    assert "on_demand is available" in str(e.value)


def test_on_demand_on_a_spot_only_row_says_spot_exists(cat):
    with pytest.raises(errors.PriceError, match=r"gcp:k80@2018.*spot is available"):
        pricing.hourly("gcp:k80@2018", cat)


def test_unknown_pricing_and_key(cat):
    with pytest.raises(errors.UsageError, match=r"'preemptible'.*on_demand, spot"):
        basis_lib.parse("preemptible")  # the basis is parsed at the edge, typed below it
    with pytest.raises(errors.PriceError, match="did you mean gcp:v100"):
        pricing.hourly("gcp:n1-standard-8+4xgcp:v10", cat)


def test_override():
    price = pricing.override(12.5, " onprem:dgx1 ")
    assert (price.usd_per_hour, price.pricing, price.lines, price.machine) == (
        12.5,
        "override",
        (),
        "onprem:dgx1",
    )
    assert pricing.override(3).machine == ""


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf, "abc", None])
def test_override_rejects_non_positive(bad):
    with pytest.raises(errors.UsageError, match="--price_per_hour"):
        pricing.override(bad, None)


def test_summarize_imagenet_epoch():
    price = pricing.override(10.30, "gcp:n1-standard-8+4xgcp:v100")
    s = pricing.summarize(
        price,
        examples_per_sec=1000.0,
        examples_per_epoch=1_281_167,
        run_seconds=7200.0,
        seconds_to_target=3600.0,
        num_accelerators=4,
    )
    assert s["usd_per_hour"] == 10.30
    assert s["hours_per_epoch"] == pytest.approx(1281.167 / 3600)
    assert s["usd_per_epoch"] == pytest.approx(3.6656, abs=1e-4)
    assert s["usd_run"] == pytest.approx(20.60)
    assert s["usd_to_target"] == pytest.approx(10.30)
    assert s["usd_per_million_examples"] == pytest.approx(2.8611, abs=1e-4)
    assert s["examples_per_usd"] == pytest.approx(3_600_000 / 10.30)
    assert s["usd_per_accelerator_hour"] == pytest.approx(2.575)
    assert s["pricing"] == "override"
    json.dumps(s)


def test_summarize_with_catalog_rows(cat):
    price = pricing.hourly("gcp:n1-standard-8+4xgcp:v100", cat)
    s = pricing.summarize(
        price,
        examples_per_sec=1000.0,
        examples_per_epoch=1_281_167,
        run_seconds=60.0,
        seconds_to_target=None,
        num_accelerators=4,
    )
    assert s["usd_per_epoch"] == pytest.approx(3.6656, abs=1e-3)
    assert s["usd_to_target"] is None
    assert [(r["row_key"], r["as_of"]) for r in s["rows"]] == [
        ("gcp:n1-standard-8", "2026-11-26"),
        ("gcp:v100", "2026-11-26"),
    ]
    assert all(r["source"] for r in s["rows"])


@pytest.mark.parametrize("rate", [0.0, -5.0, math.nan])
def test_summarize_without_throughput_gives_none_not_zero(rate):
    s = pricing.summarize(
        pricing.override(10.30),
        examples_per_sec=rate,
        examples_per_epoch=1000,
        run_seconds=3600.0,
        seconds_to_target=None,
        num_accelerators=0,
    )
    for name in ("hours_per_epoch", "usd_per_epoch", "usd_per_million_examples"):
        assert s[name] is None, name
    assert s["examples_per_usd"] is None
    assert s["usd_per_accelerator_hour"] is None
    assert s["usd_run"] == pytest.approx(10.30)  # the machine was still paid for


def test_compare(cat):
    prices = pricing.compare(["gcp:tpu-v5e-8", "aws:p3.2xlarge"], cat, Basis.SPOT)
    assert [p.machine for p in prices] == ["gcp:tpu-v5e-8", "aws:p3.2xlarge"]
    assert [round(p.usd_per_hour, 4) for p in prices] == [round(8 * 0.24493, 4), 0.52]


# --- `tpubench prices --machine` ---------------------------------------------------


def test_prices_main_machine_breakdown():
    text = cli.prices_main("", "table", None, "gcp:n1-standard-8+4xgcp:v100", "on_demand")
    assert "total 10.30 USD/hour (on_demand)" in text
    assert "4 x v100" in text
    assert "gcp:n1-standard-8" in text and "confirmed" in text
    assert "9.92" in text and "read 2026-11-26" in text and "SkyPilot" in text


def test_prices_main_machine_flags_doubtful_rows():
    text = cli.prices_main("", "table", None, "aws:p5.48xlarge", "spot")
    assert "total 21.00 USD/hour (spot)" in text
    assert "aws:p5.48xlarge (stale)" in text


def test_prices_main_machine_json_and_csv():
    d = json.loads(cli.prices_main("", "json", None, "gcp:tpu-v5e-8", "spot"))
    assert d["usd_per_hour"] == pytest.approx(8 * 0.24493)
    assert d["accelerators"] == {"kind": "tpu", "name": "tpu-v5e", "count": 8}
    text = cli.prices_main("", "csv", None, "gcp:tpu-v5e-8", "on_demand")
    assert text.splitlines()[1].startswith("8,gcp:tpu-v5e-8,gcp:tpu-v5e,chip-hour,1.2,9.6,")


def test_prices_main_rejects_query_with_machine_and_bad_pricing():
    with pytest.raises(errors.UsageError, match="not both"):
        cli.prices_main("v100", "table", None, "gcp:v100", "on_demand")
    with pytest.raises(errors.UsageError, match="'cheap'"):
        cli.prices_main("", "table", None, "gcp:v100", "cheap")


def test_cost_modules_do_not_import_tensorflow():
    code = (
        "import sys\n"
        "import tpubench.cost.catalog, tpubench.cost.pricing, tpubench.cost.machine\n"
        "import tpubench.cli.prices\n"
        "from tpubench.cost import catalog, pricing\n"
        "pricing.hourly('gcp:n1-standard-8+4xgcp:v100', catalog.load())\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow was imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_v9_rows_price_on_both_bases_from_the_cli():
    """`--machine=gcp:c3d-standard-8` on demand and spot, exact, from the shipped rows."""
    for basis, total in (("on_demand", "0.3632"), ("spot", "0.077")):
        proc = subprocess.run(
            [sys.executable, "-m", "tpubench", "prices", "--machine=gcp:c3d-standard-8",
             f"--pricing={basis}", "--format=json"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        data = json.loads(proc.stdout)
        (line,) = data["lines"]
        assert line["unit_price"] == {"on_demand": 0.36319, "spot": 0.07704}[basis]
        assert line["source"] == "SkyPilot catalog v9 gcp/vms.csv at commit 2c3d7ea7d76b"
        assert data["accelerators"]["count"] == 0
        text = subprocess.run(
            [sys.executable, "-m", "tpubench", "prices", "--machine=gcp:c3d-standard-8",
             f"--pricing={basis}"],
            capture_output=True, text=True, timeout=120,
        ).stdout  # fmt: skip
        assert f"total {total} USD/hour ({basis})" in text
