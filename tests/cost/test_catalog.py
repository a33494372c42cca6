"""Tests for the price catalog: the shipped rows, validation, lookup, search, listing."""

import csv
import datetime
import io
import json

import pytest

from tpubench.cli import prices as cli
from tpubench.core import errors
from tpubench.cost import catalog, catalog_rows

HEADER = "key,provider,kind,region,unit,count,on_demand,spot,as_of,source,status,notes"
GOOD = "gcp:v100,gcp,gpu,us-central1,gpu-hour,1,2.48,0.992,2025-01-01,test,confirmed,"

REQUIRED_KEYS = [
    "gcp:v100", "gcp:t4", "gcp:p100", "gcp:l4", "gcp:k80", "gcp:a2-highgpu-1g",
    "gcp:a2-ultragpu-1g", "gcp:a3-highgpu-8g", "gcp:tpu-v2-8", "gcp:tpu-v3-8", "gcp:tpu-v4",
    "gcp:tpu-v5e", "gcp:tpu-v5p", "gcp:tpu-v6e", "gcp:n1-vcpu", "gcp:n1-gib",
    "gcp:n1-standard-1", "gcp:n1-standard-8", "gcp:n1-highcpu-64", "gcp:c2-standard-8",
    "aws:p3.2xlarge", "aws:p4d.24xlarge", "aws:p5.48xlarge", "aws:g4dn.xlarge",
    "aws:g5.xlarge", "aws:c5.xlarge", "aws:c6i.xlarge",
]  # fmt: skip


@pytest.fixture(scope="module")
def shipped():
    return catalog.load()


def write(tmp_path, *lines, name="prices.csv"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


# --- the shipped catalog ------------------------------------------------------


def test_shipped_catalog_has_every_required_key(shipped):
    assert set(REQUIRED_KEYS) - set(shipped.keys()) == set()


def test_shipped_current_rows(shipped):
    v100 = shipped.lookup("gcp:v100")
    assert (v100.on_demand, v100.spot) == (2.48, 1.0885)
    assert v100.as_of == datetime.date(2026, 11, 26)
    assert v100.status == "confirmed"
    assert "SkyPilot" in v100.source
    assert shipped.lookup("gcp:v100@2025").as_of == datetime.date(2025, 1, 1)
    assert shipped.lookup("gcp:tpu-v2-8").count == 4
    assert shipped.lookup("aws:p4d.24xlarge").count == 8
    assert shipped.lookup("aws:p5.48xlarge").status == "stale"
    # The 2025 secondary figure is kept as history beside the catalog's host + 8 GPUs.
    assert shipped.lookup("gcp:a3-highgpu-8g@2025").on_demand == 88.49
    assert shipped.lookup("gcp:a3-highgpu-8g").on_demand == pytest.approx(9.46006 + 33.60609)
    assert shipped.lookup("aws:c5.xlarge").count == 0
    # A spot range in the reference is stored as its low end.
    assert shipped.lookup("aws:p3.2xlarge").spot == 0.52


# Issue 12 item 4: every current GPU machine shape of GCP and AWS.
GPU_SHAPES = {
    **{f"gcp:a3-highgpu-{n}g": ("h100", n) for n in (1, 2, 4, 8)},
    "gcp:a3-megagpu-8g": ("h100", 8),
    **{f"gcp:a2-highgpu-{n}g": ("a100-40gb", n) for n in (1, 2, 4, 8)},
    **{f"gcp:a2-ultragpu-{n}g": ("a100-80gb", n) for n in (1, 2, 4, 8)},
    "gcp:g2-standard-4": ("l4", 1), "gcp:g2-standard-48": ("l4", 4),
    "gcp:g2-standard-96": ("l4", 8),
    "aws:p5.48xlarge": ("h100", 8), "aws:p4d.24xlarge": ("a100-40gb", 8),
    "aws:g5.xlarge": ("a10g", 1), "aws:g5.48xlarge": ("a10g", 8),
    "aws:g6.xlarge": ("l4", 1), "aws:g6.48xlarge": ("l4", 8),
    "aws:g4dn.xlarge": ("t4", 1), "aws:g4dn.12xlarge": ("t4", 4),
}  # fmt: skip


@pytest.mark.parametrize("key", sorted(GPU_SHAPES))
def test_gpu_machine_shapes_are_priced_with_their_accelerators(shipped, key):
    from tpubench.cost import machine

    accel = machine.parse(key).accelerators(shipped)
    assert (accel.kind, accel.name, accel.count) == ("gpu", *GPU_SHAPES[key])
    row = shipped.lookup(key)
    assert row.on_demand > 0 and row.source and row.as_of.year >= 2025


@pytest.mark.parametrize("gpu", ["t4", "v100", "p100"])
def test_n1_with_an_attached_gpu_is_priced_as_host_plus_gpus(shipped, gpu):
    from tpubench.cost import pricing

    price = pricing.hourly(f"gcp:n1-standard-8+2xgcp:{gpu}", shipped)
    expected = (
        shipped.lookup("gcp:n1-standard-8").on_demand + 2 * shipped.lookup(f"gcp:{gpu}").on_demand
    )
    assert price.usd_per_hour == pytest.approx(expected)


@pytest.mark.parametrize(
    "slice_, chips",
    [("tpu-v2-8", 4), ("tpu-v3-32", 16), ("tpu-v4-8", 4), ("tpu-v5e-4", 4), ("tpu-v5p-16", 8),
     ("tpu-v6e-8", 8)],
)  # fmt: skip
def test_every_tpu_generation_prices_its_slices(shipped, slice_, chips):
    from tpubench.cost import machine

    accel = machine.parse(f"gcp:{slice_}").accelerators(shipped)
    assert (accel.kind, accel.count) == ("tpu", chips)


def test_derived_n1_shapes_follow_the_per_vcpu_and_gib_prices(shipped):
    vcpu = shipped.lookup("gcp:n1-vcpu").on_demand
    gib = shipped.lookup("gcp:n1-gib").on_demand
    gib_per_vcpu = {"standard": 3.75, "highcpu": 0.9, "highmem": 6.5}
    derived = [r for r in shipped.rows if r.status == "derived" and r.key.startswith("gcp:n1-")]
    assert len(derived) >= 20
    for row in derived:
        family, n = row.key.removeprefix("gcp:n1-").rsplit("-", 1)
        expected = int(n) * vcpu + int(n) * gib_per_vcpu[family] * gib
        assert row.on_demand == pytest.approx(expected, abs=1e-6), row.key
        assert "vCPU" in row.notes
    assert shipped.lookup("gcp:n1-standard-8").on_demand == pytest.approx(0.380, abs=1e-4)
    assert shipped.lookup("gcp:n1-highcpu-64").on_demand == pytest.approx(2.267, abs=1e-3)


def test_year_pin_selects_the_historical_row(shipped):
    assert shipped.lookup("gcp:k80", "2017").on_demand == 0.70
    assert shipped.lookup("gcp:k80@2017").status == "historical"
    assert shipped.lookup("gcp:tpu-v2-8").on_demand == 4.50
    assert shipped.lookup("gcp:tpu-v2-8@2018").on_demand == 6.50
    assert shipped.lookup("gcp:tpu-v2-8", "2018-02-01").on_demand == 6.50
    assert shipped.lookup("gcp:n1-standard-1").on_demand == pytest.approx(0.0475, abs=1e-6)
    assert shipped.lookup("gcp:n1-standard-1@2017").on_demand == 0.045
    assert shipped.lookup("gcp:n1-highcpu-64@2017").spot == 0.509
    assert shipped.lookup("gcp:p100@2017").on_demand == 2.30
    assert shipped.lookup("gcp:p100@2018").spot == 0.73


def test_current_row_is_the_newest_non_historical(tmp_path):
    path = write(
        tmp_path,
        HEADER,
        "gcp:x,gcp,gpu,us,gpu-hour,1,1.00,,2020-01-01,a,confirmed,",
        "gcp:x,gcp,gpu,us,gpu-hour,1,2.00,,2024-01-01,b,stale,",
        "gcp:x,gcp,gpu,us,gpu-hour,1,9.00,,2026-01-01,c,historical,",
    )
    assert catalog.load(path).lookup("gcp:x").on_demand == 2.00


def test_only_historical_rows_need_a_pin(shipped):
    with pytest.raises(errors.PriceError, match=r"only historical.*gcp:k80@2017"):
        shipped.lookup("gcp:k80")


def test_unknown_key_suggests_close_matches(shipped):
    with pytest.raises(errors.PriceError, match="gcp:v100") as e:
        shipped.lookup("gcp:v10")
    assert "'gcp:v10'" in str(e.value)


def test_bad_or_missing_dates(shipped):
    with pytest.raises(errors.UsageError, match="'17'"):
        shipped.lookup("gcp:k80", "17")
    with pytest.raises(errors.PriceError, match=r"dated 2019.*2025-01-01"):
        shipped.lookup("gcp:v100@2019")


def test_search(shipped):
    keys = {r.key for r in shipped.search("v100")}
    assert {"gcp:v100", "aws:p3.2xlarge"} <= keys
    assert {r.key for r in shipped.search("GCP V100")} == {"gcp:v100"}
    assert len(shipped.search("")) == len(shipped.rows)
    historical_tpu = shipped.search("tpu historical")
    assert [(r.key, r.on_demand) for r in historical_tpu] == [("gcp:tpu-v2-8", 6.50)]
    assert [r.key for r in shipped.search("h200")] == ["gcp:a3-ultragpu-8g"]
    assert shipped.search("gb200") == []


def test_row_to_dict_is_json_friendly(shipped):
    d = json.loads(json.dumps(shipped.lookup("gcp:v100").to_dict()))
    assert d["as_of"] == "2026-11-26"
    assert d["on_demand"] == 2.48


# --- validation ----------------------------------------------------------------

BAD_ROWS = [
    ("gcp:v100,gcp,gpu,us,gpu-hour,1,abc,,2025-01-01,s,confirmed,", "on_demand 'abc'"),
    ("gcp:v100,gcp,gpu,us,gpu-hour,1,-1,,2025-01-01,s,confirmed,", "on_demand '-1'"),
    ("gcp:v100,gcp,gpu,us,gpu-hour,1,1.0,nan,2025-01-01,s,confirmed,", "spot 'nan'"),
    ("gcp:v100,gcp,gpu,us,gpu-hour,1,,,2025-01-01,s,confirmed,", "both empty"),
    ("gcp:v100,gcp,gpu,us,gpu-hour,1,1.0,,2025-13-01,s,confirmed,", "as_of '2025-13-01'"),
    ("gcp:v100,gcp,gpu,us,gpu-hour,1,1.0,,01/02/2025,s,confirmed,", "as_of '01/02/2025'"),
    ("gcp:v100,gcp,gpu,us,gpu-hour,1,1.0,,2025-01-01,s,maybe,", "status 'maybe'"),
    ("gcp:v100,gcp,fpga,us,gpu-hour,1,1.0,,2025-01-01,s,confirmed,", "kind 'fpga'"),
    ("v100,gcp,gpu,us,gpu-hour,1,1.0,,2025-01-01,s,confirmed,", "key 'v100' has no provider"),
    (",gcp,gpu,us,gpu-hour,1,1.0,,2025-01-01,s,confirmed,", "key is empty"),
    ("gcp:v100,aws,gpu,us,gpu-hour,1,1.0,,2025-01-01,s,confirmed,", "provider 'aws'"),
    ("gcp:v100,gcp,gpu,us,gpu-hour,two,1.0,,2025-01-01,s,confirmed,", "count 'two'"),
    ("gcp:v100,gcp,gpu,us,,1,1.0,,2025-01-01,s,confirmed,", "unit is empty"),
    ("gcp:v100,gcp,gpu,us,gpu-hour,1,1.0,,2025-01-01,,confirmed,", "source is empty"),
    ("gcp:v100,gcp,gpu,us,gpu-hour,1,1.0,,2025-01-01,s,confirmed,x,extra", "13 fields"),
]


@pytest.mark.parametrize(("bad", "expected"), BAD_ROWS)
def test_malformed_row_names_file_line_and_value(tmp_path, bad, expected):
    path = write(
        tmp_path, HEADER, "gcp:t4,gcp,gpu,us,gpu-hour,1,0.35,,2025-01-01,s,confirmed,", bad
    )
    with pytest.raises(errors.PriceError) as e:
        catalog.load(path)
    message = str(e.value)
    assert message.startswith(f"{path} line 3: ")
    assert expected in message
    assert "\n" not in message


def test_not_a_number_message_is_exact(tmp_path):
    path = write(tmp_path, HEADER, GOOD.replace("2.48", "abc"))
    with pytest.raises(errors.PriceError) as e:
        catalog.load(path)
    assert str(e.value).endswith(
        "prices.csv line 2: on_demand 'abc' is not a number "
        "(expected a price in USD per unit, e.g. 2.48)"
    )


def test_line_numbers_count_blank_lines(tmp_path):
    path = write(tmp_path, HEADER, GOOD, "", "", GOOD.replace("0.992", "x"))
    with pytest.raises(errors.PriceError, match=r"line 5: spot 'x'"):
        catalog.load(path)


def test_missing_header_columns_are_named(tmp_path):
    path = write(tmp_path, "key,provider,region,on_demand,as_of", "gcp:v100,gcp,us,1,2025-01-01")
    with pytest.raises(
        errors.PriceError, match=r"line 1: header is missing column\(s\) kind, unit"
    ):
        catalog.load(path)


def test_duplicate_key_and_date(tmp_path):
    path = write(tmp_path, HEADER, GOOD, GOOD)
    with pytest.raises(errors.PriceError, match=r"line 3: key 'gcp:v100' has two rows.*line 2"):
        catalog.load(path)


@pytest.mark.parametrize(
    ("content", "expected"), [("", "empty file"), ("  \n", "empty file"), (HEADER, "no price rows")]
)
def test_empty_catalogs(tmp_path, content, expected):
    path = tmp_path / "prices.csv"
    path.write_text(content)
    with pytest.raises(errors.PriceError, match=expected):
        catalog.load(str(path))


def test_missing_or_unreadable_file_names_the_path(tmp_path):
    missing = str(tmp_path / "nope.csv")
    with pytest.raises(errors.PriceError, match="nope.csv"):
        catalog.load(missing)
    with pytest.raises(errors.PriceError, match=str(tmp_path)):
        catalog.load(str(tmp_path))  # a directory


def test_user_catalog_replaces_the_shipped_one(tmp_path):
    cat = catalog.load(write(tmp_path, HEADER, GOOD.replace("2.48", "1.00")))
    assert cat.lookup("gcp:v100").on_demand == 1.00
    assert cat.keys() == ["gcp:v100"]
    assert cat.path.endswith("prices.csv")


def test_gs_catalog_reads_through_google_cloud_storage(gcs_env):
    """gs:// catalogs come through google-cloud-storage, against the local GCS server."""
    from tpubench.storage import gcs

    gcs.write_bytes("gs://tpubench-test/prices.csv", f"{HEADER}\n{GOOD}\n".encode(), "text/csv")
    assert catalog.load("gs://tpubench-test/prices.csv").lookup("gcp:v100").on_demand == 2.48
    with pytest.raises(errors.PriceError, match="gs://tpubench-test/missing.csv"):
        catalog.load("gs://tpubench-test/missing.csv")


# --- `tpubench prices` listing ---------------------------------------------------


def test_format_rows_table(shipped):
    text = cli.format_rows(shipped.search("gcp v100"), "table")
    # Each row's source is folded onto a line of its own, indented, to fit 100 columns.
    header, *rows = [" ".join(x.split()) for x in text.splitlines() if not x.startswith(" ")]
    assert header.split() == ["key", "unit", "on_demand", "spot", "as_of", "status", "source"]
    assert "gcp:v100 gpu-hour 2.48 0.992 2025-01-01 confirmed" in rows
    # the snapshot of unknown date: the day it was read, and that its date is unknown
    assert "gcp:v100 gpu-hour 2.48 1.0885 date unknown (read 2026-11-26) confirmed" in rows


def test_format_rows_csv_round_trips(shipped, tmp_path):
    text = cli.format_rows(list(shipped.rows), "csv")
    assert next(csv.reader(io.StringIO(text))) == [
        *catalog_rows.COLUMNS,
        "date_known",
        "source_commit",
        "read_on",
        "spot_refused",
    ]
    reloaded = catalog.load(write(tmp_path, text))
    assert reloaded.rows == shipped.rows


def test_format_rows_json_and_unknown_format(shipped):
    data = json.loads(cli.format_rows(shipped.search("tpu-v5e"), "json"))
    assert data[0]["key"] == "gcp:tpu-v5e"
    with pytest.raises(errors.UsageError, match="'yaml'"):
        cli.format_rows([], "yaml")


def test_prices_main_lists_matches():
    text = cli.prices_main("v100", "table", None, None, "on_demand")
    assert "gcp:v100" in text and "aws:p3.2xlarge" in text


def test_prices_main_no_match_suggests_close_keys():
    with pytest.raises(errors.UsageError, match=r"match 'v10o'.*gcp:v100"):
        cli.prices_main("v10o", "table", None, None, "on_demand")


def test_prices_main_uses_the_given_catalog(tmp_path):
    path = write(tmp_path, HEADER, GOOD.replace("2.48", "7.77"))
    assert "7.77" in cli.prices_main("", "table", path, None, "on_demand")
