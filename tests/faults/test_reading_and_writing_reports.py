"""`runs` and `report` survive hostile files (issue 11, items 8, 10 and 13).

- `report --output` replaces a symlink planted under an output name instead of
  writing through it to its target;
- a file far larger than any record is skipped unread, with one warning;
- one record with fields of the wrong type is skipped (runs) or excluded
  (report); every other record is still listed;
- a full disk is one line naming the file that could not be written.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
from conftest import one_line_error

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "report" / "fixtures" / "threads"
RECORD = FIXTURES / "cnn-t1-0.json"


def cli(*args, cwd=None, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "tpubench", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
    )


def test_report_output_never_writes_through_a_planted_symlink(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    victims = {}
    for name in ("report.html", "report.md", "summary.csv", "throughput.png"):
        victim = tmp_path / f"victim-{name}"
        victim.write_text("precious\n")
        (out / name).symlink_to(victim)
        victims[name] = victim
    proc = cli("report", FIXTURES, f"--output={out}")
    assert proc.returncode == 0, proc.stderr
    for name, victim in victims.items():
        assert victim.read_text() == "precious\n", f"{name} was written through its symlink"
        assert not (out / name).is_symlink() and (out / name).stat().st_size > 100
    assert (out / "report.html").read_text().lstrip().lower().startswith("<!doctype html")
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")], "no temp file is left"


def _mixed_dir(tmp_path) -> pathlib.Path:
    d = tmp_path / "runs"
    d.mkdir()
    shutil.copy(RECORD, d / "good.json")
    bad = json.loads(RECORD.read_text())
    bad.update(run_id="bad-types", model=5, started=123, results={"examples_per_sec": "fast"})
    (d / "bad.json").write_text(json.dumps(bad))
    return d


def test_runs_skips_a_record_with_wrong_types_and_lists_the_rest(tmp_path):
    d = _mixed_dir(tmp_path)
    proc = cli("runs", d)
    assert proc.returncode == 0, proc.stderr
    assert "good.json" in proc.stdout and "bad.json" not in proc.stdout
    warnings = proc.stderr.strip().splitlines()
    assert len(warnings) == 1 and "Traceback" not in proc.stderr
    assert "bad.json" in warnings[0] and "skipped" in warnings[0]


def test_report_excludes_a_record_with_wrong_types_and_reports_the_rest(tmp_path):
    d = _mixed_dir(tmp_path)
    shutil.copy(FIXTURES / "cnn-t1-1.json", d / "good2.json")
    proc = cli("report", d, "--format=csv")
    assert proc.returncode == 0, proc.stderr
    rows = [x for x in proc.stdout.splitlines() if x.strip()]
    assert len(rows) >= 2 and "cifar10_cnn" in proc.stdout  # the good runs are summarised


def test_a_huge_file_is_skipped_unread_with_one_warning(tmp_path):
    d = tmp_path / "runs"
    d.mkdir()
    shutil.copy(RECORD, d / "good.json")
    with open(d / "huge.json", "wb") as f:  # sparse: 100 MB on paper, nothing on disk
        f.truncate(100 * 2**20)
    proc = cli("runs", d)
    assert proc.returncode == 0, proc.stderr
    assert "good.json" in proc.stdout
    warning = proc.stderr.strip()
    assert len(warning.splitlines()) == 1
    assert "huge.json" in warning and "64 MiB" in warning


def _full_disk_wrapper(tmp_path) -> list[str]:
    """A command prefix that runs its command with tmp_path/full a full 64 KiB tmpfs."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    full = tmp_path / "full"
    full.mkdir()
    script = (
        f'mount -t tmpfs -o size=64k tmpfs "{full}" && '
        f'(head -c 200000 /dev/zero > "{full}/fill") 2>/dev/null; exec "$@"'
    )
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script, "sh", "true"], capture_output=True, timeout=30
    )
    if probe.returncode != 0:
        pytest.skip(f"no user namespaces here to mount a small tmpfs: {probe.stderr!r}")
    return ["unshare", "-rm", "sh", "-c", script, "sh"]


def test_report_on_a_full_disk_names_the_file(tmp_path):
    wrap = _full_disk_wrapper(tmp_path)
    out = tmp_path / "full" / "report"
    proc = subprocess.run(
        [*wrap, sys.executable, "-m", "tpubench", "report", str(FIXTURES), f"--output={out}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    line = one_line_error(proc)
    assert proc.returncode == 2
    assert str(out) in line and "no space left" in line


def test_train_on_a_full_disk_names_the_record(tmp_path):
    wrap = _full_disk_wrapper(tmp_path)
    results = tmp_path / "full" / "runs"
    env = dict(os.environ)
    env.pop("TF_CONFIG", None)
    proc = subprocess.run(
        [
            *wrap,
            sys.executable,
            "-m",
            "tpubench",
            "train",
            "--tiny",
            "--train_steps=1",
            "--use_synthetic_data",
            f"--results_dir={results}",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    line = one_line_error(proc)
    assert proc.returncode == 6  # the record could not be written: saved to the cache instead
    assert str(results) in line and "no space left" in line and "unsent-records" in line
