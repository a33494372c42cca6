"""`tpubench prices diff OLD NEW`: what changed between two catalog snapshots, one key a line."""

import os
import pathlib
import subprocess
import sys

import pytest
from conftest import NO_TF_CLI

from tpubench.cli import prices as cli
from tpubench.core import errors
from tpubench.cost import catalog_diff

V9 = pathlib.Path(__file__).parent / "fixtures" / "skypilot_v9_gcp" / "vms.csv"


@pytest.fixture()
def snapshots(tmp_path, monkeypatch):
    """The real v9 excerpt, and a later one: c4-standard-8 up to 0.41, n2d-standard-96 gone."""
    monkeypatch.setenv("TPUBENCH_CACHE", str(tmp_path / "cache"))
    old, new = tmp_path / "old.csv", tmp_path / "new.csv"
    text = V9.read_text()
    old.write_text(text)
    lines = [
        line.replace(",0.39534,0.22819", ",0.41,0.22819")
        for line in text.splitlines()
        if not line.startswith("n2d-standard-96,")
    ]
    new.write_text("\n".join(lines) + "\n")
    stamp = 1790000000  # 2026-09-21
    for p in (old, new):
        os.utime(p, (stamp, stamp))
    return old, new


def _cli(*args, env=None):
    return subprocess.run(
        [sys.executable, "-c", NO_TF_CLI, "prices", "diff", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def test_a_changed_price_between_two_catalog_files(snapshots):
    old, new = snapshots
    proc = _cli(str(old), str(new))
    assert proc.returncode == 0, proc.stderr
    lines = [" ".join(line.split()) for line in proc.stdout.splitlines()]
    assert lines[1:3] == [
        "~ gcp:c4-standard-8 0.39534 -> 0.41 0.22819 2026-09-21",
        "- gcp:n2d-standard-96 4.05562 1.06752 2026-09-21",
    ]
    assert "0 added (+), 1 removed (-), 1 changed (~), 16 unchanged; OLD" in " ".join(lines)


def test_a_spot_price_refused_at_import_shows_as_refused(snapshots):
    old, _ = snapshots
    cli.import_main([str(old)])
    lines = catalog_diff.diff(catalog_diff.load("shipped"), catalog_diff.load("user"))[0]
    by_key = {line[1]: line for line in lines}
    # The v8 snapshot's 8x H100 spot (host + GPUs) against v9's, which is above on demand.
    assert by_key["gcp:a3-highgpu-8g"][:4] == (
        "~",
        "gcp:a3-highgpu-8g",
        "43.06614 -> 43.06615",
        "26.83013 -> refused",
    )
    assert by_key["gcp:tpu-v6e"][3] == "0.54421 -> 0.59266"
    # a catalog CSV and a SkyPilot file compare too: the import and its own source agree
    user = os.path.join(os.environ["TPUBENCH_CACHE"], "prices.csv")
    lines, same = catalog_diff.diff(catalog_diff.load(user), catalog_diff.load(str(old)))
    assert (lines, same) == ([], 18)


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (["shipped"], "tpubench prices diff needs OLD and NEW (got shipped)"),
        (["missing.csv", "shipped"], "cannot read missing.csv: No such file or directory"),
        (["notes.csv", "shipped"], "notes.csv: neither a price catalog (no 'key' column)"),
        (["shipped", "user"], "user: the user catalog"),
    ],
)
def test_bad_input_is_one_line(tmp_path, args, expect):
    (tmp_path / "notes.csv").write_text("a,b\n1,2\n")
    proc = subprocess.run(
        [sys.executable, "-c", NO_TF_CLI, "prices", "diff", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "TPUBENCH_CACHE": str(tmp_path / "cache")},
    )
    assert proc.returncode == 2, proc.stdout
    assert expect in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


def test_unchanged_snapshots_say_so(snapshots):
    old, _ = snapshots
    text = catalog_diff.main([str(old), str(old)])
    assert text.splitlines()[0] == "no price changed"
    with pytest.raises(errors.UsageError):
        catalog_diff.main([])
