"""`tpubench prices import`: SkyPilot-format vms.csv files into the user catalog."""

import datetime
import os

import pytest

from tpubench.cli import prices as cli
from tpubench.core import errors
from tpubench.cost import catalog, detect, run

# The column orders of SkyPilot's catalogs/v7 files, as they are.
GCP_HEADER = "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,"
GCP = (
    GCP_HEADER
    + """AvailabilityZone,Price,SpotPrice
a3-highgpu-1g,26.0,234.0,,,,us-central1,us-central1-a,1.2,0.3
a3-highgpu-1g,26.0,234.0,,,,us-central1,us-central1-b,1.2,0.25
a3-highgpu-1g,26.0,234.0,,,,europe-west4,europe-west4-b,1.9,0.5
n1-standard-4,4.0,15.0,,,,us-central1,us-central1-a,0.2,0.05
,,,H100,1,"{'Gpus': [{'MemoryInfo': {'SizeInMiB': 81920}}]}",us-central1,us-central1-a,3.0,1.0
,,,H100,1,"{'Gpus': [{'MemoryInfo': {'SizeInMiB': 81920}}]}",us-central1,us-central1-b,3.0,0.75
,,,T4,1,"{'Gpus': [{'MemoryInfo': {'SizeInMiB': 16384}}]}",us-central1,us-central1-a,0.4,0.1
,,,tpu-v5litepod-4,1,tpu-v5litepod-4,us-central1,us-central1-a,4.4,1.2
,,,tpu-v5litepod-8,1,tpu-v5litepod-8,us-central1,us-central1-a,8.8,2.4
,,,tpu-v6e-1,1,tpu-v6e-1,us-central1,us-central1-b,700.0,700.0
"""
)
AWS_HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,"
AWS = (
    AWS_HEADER
    + """SpotPrice,Region,AvailabilityZone
g6.xlarge,L4,1.0,4.0,16.0,"{'Gpus': []}",0.9,0.40,us-east-1,use1-az1
g6.xlarge,L4,1.0,4.0,16.0,"{'Gpus': []}",0.9,0.35,us-east-1,use1-az2
p5.48xlarge,H100,8.0,192.0,2048.0,"{'Gpus': []}",60.0,,us-east-1,use1-az4
c5.xlarge,,,4.0,8.0,,0.18,0.07,us-east-1,use1-az1
"""
)


@pytest.fixture()
def files(tmp_path, monkeypatch):
    monkeypatch.setenv("TPUBENCH_CACHE", str(tmp_path / "cache"))
    (tmp_path / "gcp").mkdir()
    (tmp_path / "aws").mkdir()
    gcp, aws = tmp_path / "gcp" / "vms.csv", tmp_path / "aws" / "vms.csv"
    gcp.write_text(GCP)
    aws.write_text(AWS)
    day = datetime.datetime(2026, 10, 5, 12, 0).timestamp()
    os.utime(gcp, (day, day))
    os.utime(aws, (day, day))
    return str(gcp), str(aws)


def test_import_writes_the_user_catalog_and_overrides_the_shipped_rows(files):
    text = cli.import_main(list(files))
    target = catalog.user_path()
    assert target in text and os.path.exists(target)
    cat = catalog.load()
    # GCP: host + GPU in one machine, on-demand and the lowest spot of the region's zones.
    a3 = cat.lookup("gcp:a3-highgpu-1g")
    assert (a3.on_demand, a3.spot, a3.count) == (pytest.approx(4.2), pytest.approx(1.0), 1)
    assert a3.as_of == datetime.date(2026, 10, 5) and "vms.csv" in a3.source
    assert "accel=h100" in a3.notes
    t4 = cat.lookup("gcp:t4")
    assert (t4.kind, t4.on_demand, t4.spot) == ("gpu", 0.4, 0.1)
    # TPU v5e per chip from the smallest slice; v6e was "not offered" (700.0) here.
    v5e = cat.lookup("gcp:tpu-v5e")
    assert (v5e.on_demand, v5e.spot) == (pytest.approx(1.1), pytest.approx(0.3))
    assert "imported" not in cat.lookup("gcp:tpu-v6e").source  # the shipped row stays
    # AWS: whole instances with their accelerators.
    p5 = cat.lookup("aws:p5.48xlarge")
    assert (p5.on_demand, p5.spot, p5.count) == (60.0, None, 8)
    assert cat.lookup("aws:g6.xlarge").spot == 0.35
    # Shipped rows of the same key are replaced; the historical ones stay pinnable.
    assert [r.on_demand for r in cat.rows_for("aws:p5.48xlarge")] == [60.0]
    assert cat.lookup("gcp:k80@2017").on_demand == 0.70
    # And a run is priced from them.
    prices, note = run.prices(accelerators=[{"kind": "gpu", "name": "NVIDIA H100 80GB HBM3"}])
    assert prices[0].usd_per_hour == pytest.approx(4.2)
    assert prices[0].lines[0].as_of == datetime.date(2026, 10, 5)


def test_reimport_replaces_rows_of_the_same_date(files):
    cli.import_main([files[1]])
    cli.import_main([files[1]])
    rows = catalog.load_user()
    assert len([r for r in rows if r.key == "aws:g6.xlarge"]) == 1


def test_not_a_skypilot_file_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("TPUBENCH_CACHE", str(tmp_path / "cache"))
    bad = tmp_path / "prices.csv"
    bad.write_text("key,price\nx,1\n")
    with pytest.raises(errors.PriceError, match="missing column.*InstanceType"):
        cli.import_main([str(bad)])
    with pytest.raises(errors.PriceError, match="cannot read"):
        cli.import_main([str(tmp_path / "missing.csv")])
    with pytest.raises(errors.UsageError, match="needs FILE"):
        cli.import_main([])
    assert not os.path.exists(catalog.user_path())


def test_detect_and_import_agree_on_accelerator_ids():
    assert detect.accelerator_id("gpu", "H100") == "h100"
    assert detect.accelerator_id("gpu", "A100-80GB") == "a100-80gb"


POISONED = (
    GCP_HEADER
    + """AvailabilityZone,Price,SpotPrice
n1-standard-4,4.0,15.0,,,,us-central1,us-central1-a,0.2,0.05
n9-nan-8,8.0,32.0,,,,us-central1,us-central1-a,nan,0.1
n9-negative-8,8.0,32.0,,,,us-central1,us-central1-a,-0.4,0.1
weird name!,8.0,32.0,,,,us-central1,us-central1-a,0.5,0.1
=cmd|x,8.0,32.0,,,,us-central1,us-central1-a,0.5,0.1
"""
)


def test_an_import_leaves_out_and_names_each_row_later_commands_would_refuse(tmp_path, monkeypatch):
    """A NaN or negative price or an odd instance name is never written: before, one such
    row made every later `prices`, `prices import` and `train` refuse the user catalog."""
    monkeypatch.setenv("TPUBENCH_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "vms.csv"
    path.write_text(POISONED)
    text = cli.import_main([str(path)])
    assert "imported 1 price row(s)" in text
    assert "left out 3 row(s) the catalog would refuse:" in text
    for key in ("gcp:n9-nan-8", "gcp:weird name!", "gcp:=cmd|x"):
        assert f"{path}: {key}: " in text
    cat = catalog.load()  # what later commands read: loads, with the one good row
    assert cat.lookup("gcp:n1-standard-4").on_demand == 0.2
    # SkyPilot writes a price <= 0 for "not offered": such a row is no machine to import
    imported = cat.keys()
    assert "gcp:n9-negative-8" not in imported
    assert cli.import_main([str(path)])  # and a second import still works
    only_bad = tmp_path / "bad.csv"
    only_bad.write_text(
        GCP_HEADER + "AvailabilityZone,Price,SpotPrice\n" + POISONED.splitlines()[2]
    )
    with pytest.raises(errors.PriceError, match=r"no usable price row in .*bad.csv \(1 refused"):
        cli.import_main([str(only_bad)])


def test_prices_csv_never_hands_a_spreadsheet_a_formula(tmp_path, monkeypatch):
    catalog_file = tmp_path / "prices.csv"
    catalog_file.write_text(
        "key,provider,kind,region,unit,count,on_demand,spot,as_of,source,status,notes\n"
        'gcp:v100,gcp,gpu,us,gpu-hour,1,2.48,,2025-01-01,"=HYPERLINK(""x"")",confirmed,'
        '"+cmd|calc"\n'
    )
    rows = catalog.load(str(catalog_file)).rows
    text = cli.format_rows(rows, "csv")
    assert "'=HYPERLINK" in text and "'+cmd|calc" in text and ",2.48," in text
