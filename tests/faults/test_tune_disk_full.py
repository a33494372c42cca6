"""`tune` on a disk that fills: one line, exit 6, nothing lost, and the same command resumes.

A real tmpfs (tests/faults/fullfs.py) holds the tune's records; it fills to
the last byte once the first trial's `running` record is there.  The trial's
record goes to the cache's unsent-records (run/train/unsent.py), tune stops
with one line naming it, and, with space again, the same command records
that trial's record where it belongs, runs the rest and writes the flag file
and the summary.  The first is fast; the second (a whole tune) is slow.
"""

import json
import os
import subprocess
import sys

import fullfs
import pytest
from conftest import one_line_error


def _tune_args(results):
    return [
        sys.executable,
        "-m",
        "tpubench",
        "tune",
        "--model=mnist_mlp",
        "--tiny",
        "--search=xla",
        "--trial_steps=10",
        "--finalists=1",
        "--repeats=1",
        "--max_repeats=1",
        f"--results_dir={results}",
    ]


def test_tune_on_a_full_disk_stops_at_the_first_trial_in_one_line(tmp_path, tpubench_cache):
    """A full 64 KiB tmpfs from the start: the first trial's record and its log are refused."""
    full = tmp_path / "full"
    wrap = fullfs.full_disk(full)
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    proc = subprocess.run(
        [*wrap, *_tune_args(full / "r")], capture_output=True, text=True, env=env, timeout=600
    )
    line = one_line_error(proc)  # before: an internal error (OSError: [Errno 28])
    assert proc.returncode == 6, line
    assert line.startswith("tpubench tune: error: tune stopped: trial "), line
    assert "no space left on the device" in line and "unsent-records" in line, line
    assert "run the same command again to resume" in line, line
    saved = [
        p for p in (tpubench_cache / "unsent-records").glob("*.json") if str(full) in p.read_text()
    ]
    assert len(saved) == 1 and str(saved[0]) in line  # the trial's record, kept
    assert "no space left" in json.loads(saved[0].read_text())["unsent_reason"]
    saved[0].unlink()  # the session's cache is shared with other tests


class _Ran:
    def __init__(self, folder):
        self.returncode = int((folder / "first.rc").read_text())
        self.stdout = (folder / "first.out").read_text()
        self.stderr = (folder / "first.err").read_text()


@pytest.mark.slow
def test_tune_on_a_disk_that_fills_stops_in_one_line_and_the_same_command_resumes(
    tmp_path, tpubench_cache
):
    full, kept = tmp_path / "full", tmp_path / "kept"
    args = _tune_args(full / "r")
    unsent = tpubench_cache / "unsent-records"
    wrap = fullfs.fills_then_frees(full, "r/tune-*/*.json", kept, unsent)
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    second = subprocess.run([*wrap, *args], capture_output=True, text=True, env=env, timeout=900)

    first = _Ran(kept)
    line = one_line_error(first)
    assert first.returncode == 6, line
    assert line.startswith("tpubench tune: error: tune stopped: trial "), line
    assert "no space left on the device" in line and "unsent-records" in line, line
    assert "run the same command again to resume" in line, line
    assert str(full / "r" / "tune-") in line  # where the finished trials are
    # Nothing lost: the trial's finished record waits in the cache, named in the line.
    (saved,) = (kept / "snapshot").glob("*.json")  # the cache as the first command left it
    assert str(unsent / saved.name) in line
    record = json.loads(saved.read_text())  # ok, or failed where TensorFlow hit the full disk
    assert "no space left" in record["unsent_reason"]

    # With space again, the same command records that trial and finishes the tune.
    assert second.returncode == 0, second.stderr
    assert "(throughput): " in second.stdout and "train with:" in second.stdout
    assert not (unsent / saved.name).exists()  # recorded where it belongs
    (tune_dir,) = (kept / "second" / "r").glob("tune-*")
    runs = [json.loads(p.read_text()) for p in tune_dir.glob("2*.json")]
    again = [r for r in runs if r["run_id"] == record["run_id"]]
    assert len(again) == 1 and again[0]["status"] == record["status"]
    label = record["run_label"]  # that trial ran to the end this time, or was recorded ok
    assert any(r["run_label"] == label and r["status"] == "ok" for r in runs)
    assert (tune_dir / "winner-throughput.flags").is_file()
    summary = json.loads((tune_dir / "tune-summary.json.txt").read_text())
    assert summary["winners"]["throughput"]["status"] == "ok"


def test_tune_looks_for_a_refused_record_where_train_saves_it():
    from tpubench.run.train import unsent
    from tpubench.tune import disk_full

    assert disk_full.UNSENT_FOLDER == unsent.FOLDER
