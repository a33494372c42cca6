"""`tpubench prices import` on a real SkyPilot v9 GCP catalog excerpt (fixtures/skypilot_v9_gcp).

v9 lists GPU rows whose spot price is above their on-demand price; an import
names each row that would answer on one, in one line, keeps no spot price for
it, and every spot answer on it is refused, saying why.
"""

import datetime
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
from conftest import NO_TF_CLI

from tpubench.cli import prices as cli
from tpubench.core import errors
from tpubench.core.basis import Basis
from tpubench.cost import catalog, pricing, skypilot, skypilot_import

V9 = pathlib.Path(__file__).parent / "fixtures" / "skypilot_v9_gcp" / "vms.csv"
COMMIT = "2c3d7ea7d76bf84cf80d382e946c1609571485fd"
DAY = datetime.date(2026, 10, 5)


@pytest.fixture()
def v9(tmp_path, monkeypatch):
    monkeypatch.setenv("TPUBENCH_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "v9" / "gcp" / "vms.csv"
    path.parent.mkdir(parents=True)
    shutil.copy(V9, path)
    stamp = datetime.datetime(DAY.year, DAY.month, DAY.day, 12).timestamp()
    os.utime(path, (stamp, stamp))
    return path


def _cli(*args, env):
    return subprocess.run(
        [sys.executable, "-c", NO_TF_CLI, "prices", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


def test_import_flags_each_spot_above_on_demand_in_one_line(v9, tmp_path):
    proc = _cli("import", f"--source_commit={COMMIT}", str(v9),
                env={"TPUBENCH_CACHE": str(tmp_path / "cache")})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    head = "spot above on demand in 3 row(s), so no spot price kept (--pricing=spot refuses them):"
    at = lines.index(head)
    assert lines[at + 1 :] == [
        "  gcp:a2-ultragpu-1g: spot 2.1604 above on demand 1.8462 "
        "(SkyPilot, 1x A100-80GB in us-central1)",
        "  gcp:a3-highgpu-1g: spot 5.3387 above on demand 4.20076 "
        "(SkyPilot, 1x H100 in us-central1)",
        "  gcp:a3-highgpu-8g: spot 42.7096 above on demand 33.60609 "
        "(SkyPilot, 8x H100 in us-central1)",
    ]


def test_a_spot_answer_on_a_refused_row_says_why_and_on_demand_still_answers(v9):
    cli.import_main([str(v9)], COMMIT)
    cat = catalog.load()
    a3 = cat.lookup("gcp:a3-highgpu-8g")
    assert (a3.on_demand, a3.spot, a3.count) == (43.06615, None, 8)  # 9.46006 + 33.60609
    with pytest.raises(errors.PriceError) as e:
        pricing.hourly("gcp:a3-highgpu-8g", cat, Basis.SPOT)
    assert str(e.value) == (
        "gcp:a3-highgpu-8g: no spot price in catalog row gcp:a3-highgpu-8g (2026-10-05): spot "
        "42.7096 above on demand 33.60609 (SkyPilot, 8x H100 in us-central1); on_demand is "
        "available (--pricing=on_demand)"
    )
    assert pricing.hourly("gcp:a3-highgpu-8g", cat, Basis.ON_DEMAND).usd_per_hour == 43.06615
    # A100-80GB x1: the machine's sum (2.73756) is below its on demand (2.94582), but it
    # would be built on the GPU row's "discount" of -0.3142: refused too.
    with pytest.raises(errors.PriceError, match="spot 2.1604 above on demand 1.8462"):
        pricing.hourly("gcp:a2-ultragpu-1g", cat, Basis.SPOT)


@pytest.mark.parametrize(
    ("key", "on_demand", "spot", "gpus"),
    [
        ("gcp:a3-ultragpu-8g", 12.266 + 74.49392, 6.68552 + 40.972, 8),  # H200
        ("gcp:a4-highgpu-8g", 90.216, 37.7464, 8),  # B200: the VM row is 0.0
        ("gcp:c4-standard-8", 0.39534, 0.22819, 0),
        ("gcp:c3d-standard-8", 0.36319, 0.07704, 0),
        ("gcp:c4d-standard-8", 0.36999, 0.12988, 0),
        ("gcp:n2d-standard-8", 0.33797, 0.08896, 0),
        ("gcp:tpu-v6e", 2.7, 0.59266, 1),  # the 700.0 placeholder of another region skipped
    ],
)
def test_v9_rows_import_with_both_prices(v9, key, on_demand, spot, gpus):
    cli.import_main([str(v9)], COMMIT)
    row = catalog.load().lookup(key)
    assert (row.on_demand, row.spot, row.count) == (
        pytest.approx(on_demand, abs=1e-9),
        pytest.approx(spot, abs=1e-9),
        gpus,
    )
    assert row.region == "us-central1" and not row.spot_refused


def test_each_row_keeps_its_source_commit_and_read_date(v9):
    done = skypilot_import.import_files([str(v9)], commit=COMMIT.upper(),
                                        today=datetime.date(2026, 12, 7))  # fmt: skip
    rows = catalog.load_user(done.target)
    assert {(r.source_commit, r.read_on, r.as_of) for r in rows} == {
        (COMMIT, datetime.date(2026, 12, 7), DAY)
    }
    assert all("at commit 2c3d7ea7d76b" in r.source for r in rows)
    b200 = next(r for r in rows if r.key == "gcp:a4-highgpu-8g")
    assert "accel=b200" in b200.notes and "VM listed at 0.0" in b200.notes
    text = pathlib.Path(done.target).read_text()
    assert text.splitlines()[0].endswith(",date_known,source_commit,read_on,spot_refused")


def test_a_bad_commit_or_an_unreadable_file_is_one_line(v9, tmp_path):
    env = {"TPUBENCH_CACHE": str(tmp_path / "cache")}
    proc = _cli("import", "--source_commit=main", str(v9), env=env)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "--source_commit='main' is not a git commit" in proc.stderr
    proc = _cli("import", str(tmp_path), env=env)  # a directory: the checked opener refuses
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "is a directory, not a regular file" in proc.stderr
    assert not (tmp_path / "cache" / "prices.csv").exists()


def test_v7_and_v9_headers_read_alike():
    """v9's header is v7's; the v9 cells differ (unquoted GpuInfo, 0.0 VM rows)."""
    v9_header = V9.read_text().splitlines()[0]
    assert v9_header == (
        "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,"
        "AvailabilityZone,Price,SpotPrice"
    )
    rows = skypilot.read(V9.read_text(), "vms.csv", DAY)
    assert len(rows) == 18
