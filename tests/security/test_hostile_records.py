"""Class C of issue 25: a record with absurd figures is a marked exclusion, never a crash.

One bad record (NaN, negative, infinite, 2**200, the wrong type) used to stop
`tpubench report` with an internal TypeError and no report at all, or be
excluded as "no throughput was measured".  Now it is listed among the records
that are not results with the field and what is accepted, and the others are
reported.  A 2 MB model name is shown cut, with the record left whole.
"""

import csv
import io
import json
import os
import subprocess
import sys
import time

import hostile
import pytest
from PIL import Image


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "tpubench", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, COLUMNS="200"),
    )


def _set(rec, path, value):
    node = rec
    *parents, last = path.split(".")
    for p in parents:
        node = node[p]
    node[last] = value


BAD = [
    ("results.examples_per_sec", float("nan"), "results.examples_per_sec is nan"),
    ("results.examples_per_sec", -5.0, "results.examples_per_sec is -5"),
    ("results.examples_per_sec", float("inf"), "results.examples_per_sec is inf"),
    ("results.examples_per_sec", "1000", "results.examples_per_sec is of type str"),
    ("global_batch_size", 2**200, "global_batch_size is 1.607e+60"),
    ("results.examples_per_sec", 2**2000, "examples_per_sec is an integer of 2,001 bits"),
    ("global_batch_size", 12.5, "global_batch_size is of type float"),
    ("examples_per_epoch", [1, 2], "examples_per_epoch is of type list"),
    ("model.name", {"a": 1}, "model.name is of type dict"),
    ("placement.num_replicas", "2", "placement.num_replicas is of type str"),
    ("results.step_time_p50", -1.0, "results.step_time_p50 is -1"),
    ("cost.machines", "gcp:x", "cost.machines is of type str"),
    ("results", [1], "results is of type list"),
]


@pytest.mark.parametrize(
    ("field", "value", "reason"), BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)]
)
def test_one_bad_record_is_excluded_with_its_reason_and_the_report_is_written(
    tmp_path, field, value, reason
):
    runs = hostile.write_records(tmp_path / "runs", "mnist_mlp", n=3)
    rec = hostile.record("bad-one")
    _set(rec, field, value)
    (runs / "bad-one.json").write_text(json.dumps(rec))
    out = tmp_path / "out"
    proc = _cli("report", runs, f"--output={out}")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert (out / "report.html").is_file()
    rows = list(csv.DictReader(io.StringIO((out / "excluded.csv").read_text())))
    assert [r["run_id"] for r in rows] == ["bad-one"]
    assert reason in rows[0]["reason"], rows[0]["reason"]
    summary = list(csv.DictReader(io.StringIO((out / "summary.csv").read_text())))
    assert summary[0]["trials"] == "3"
    proc = _cli("advise", runs, "--model=mnist_mlp", "--deadline=1h")
    assert proc.returncode == 0, proc.stderr
    if field != "model.name":  # advise lists the exclusions of the model it advises on
        assert "bad-one" in proc.stdout and reason in proc.stdout


def test_a_two_megabyte_model_name_is_cut_for_display_and_kept_in_the_record(tmp_path):
    name = "m" * 2_000_000
    runs = hostile.write_records(tmp_path / "runs", name, n=2)
    before = {p.name: p.read_bytes() for p in runs.iterdir()}
    out = tmp_path / "out"
    start = time.monotonic()
    proc = _cli("report", runs, f"--output={out}")
    took = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    assert took < 30, took
    assert "2,000,000 chars" in proc.stdout
    assert max(len(x) for x in proc.stdout.splitlines()) <= 400
    assert len(proc.stdout) < 20_000
    for png in out.glob("*.png"):
        w, h = Image.open(png).size
        assert w <= 4000 and h <= 4000, (png.name, w, h)
    assert {p.name: p.read_bytes() for p in runs.iterdir()} == before  # the record keeps all
    assert (out / "report.md").stat().st_size < 100_000


def test_runs_lists_records_with_absurd_rates_without_a_crash(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    for run_id, rate in (("nan", float("nan")), ("huge", 2**2000), ("neg", -5.0), ("ok", 1000.0)):
        rec = hostile.record(run_id)
        rec["results"]["examples_per_sec"] = rate
        (runs / f"{run_id}.json").write_text(json.dumps(rec))
    proc = _cli("runs", runs)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()[1:]
    assert len(lines) == 4 and sum(" 1,000.0 " in x for x in lines) == 1, proc.stdout
    proc = _cli("runs", runs, "--format=json")
    rates = sorted(str(r["examples_per_sec"]) for r in json.loads(proc.stdout))
    assert rates == ["1000.0", "None", "None", "None"]
