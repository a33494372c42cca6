"""--memory_limit: a run capped at N bytes (RLIMIT_DATA), and what a run at its cap leaves."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import one_line_error, run_cli

from tpubench.core import errors
from tpubench.hardware import memory_cap


@pytest.mark.parametrize(
    "text, size",
    [("1GiB", 2**30), ("512MiB", 2**29), ("1.5GB", 1_500_000_000), ("700000000", 700_000_000)],
)
def test_sizes_with_units(text, size):
    assert memory_cap.parse(text) == size


@pytest.mark.parametrize(
    "text, words",
    [
        ("lots", "is not a size"),
        ("1PB", "is not a size"),
        ("1MiB", "accepted: 64 MiB to"),
        ("9" * 5000, "is more than 1024 TiB; accepted: 64 MiB to"),  # an OverflowError before
    ],
)
def test_bad_sizes_name_the_value_and_what_is_accepted(text, words):
    with pytest.raises(errors.UsageError) as e:
        memory_cap.parse(text)
    assert text[:20] in str(e.value) and words in str(e.value)
    assert len(str(e.value)) < 200


@pytest.mark.parametrize("command", ["train", "infer"])
def test_a_cap_too_small_for_tensorflow_still_leaves_a_failed_record(tmp_path, command):
    """300 MB: TensorFlow's start-up fails at the cap (a MemoryError or a native abort), before
    the run wrote any record; the record left says so and carries the cell's label, so a study
    counts the cell as measured instead of running it again on every resume."""
    args = [command, "--model=mnist_mlp", "--tiny", "--memory_limit=300MB", "--run_label=cell-1"]
    args += ["--use_synthetic_data"] if command == "infer" else ["--train_steps=2"]
    proc, record = run_cli(*args, results_dir=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert f"tpubench {command}: error: the run" in proc.stderr
    assert "memory cap of 300,000,000 bytes" in proc.stderr and str(tmp_path) in proc.stderr
    assert record["status"] == "failed" and record["run_label"] == "cell-1"
    assert record["kind"] == command and memory_cap.reached(record)
    # no wall of "Exception ignored ... MemoryError" from the child's failed start-up
    assert len([x for x in proc.stderr.splitlines() if x.strip()]) <= 3, proc.stderr[-2000:]


def test_a_bad_limit_is_one_line_before_anything_runs(tmp_path):
    proc, record = run_cli(
        "train", "--model=ptb_lstm", "--tiny", "--memory_limit=lots", results_dir=tmp_path
    )
    line = one_line_error(proc)
    assert proc.returncode == 2 and "--memory_limit='lots' is not a size" in line
    assert record is None


def test_a_run_at_its_cap_fails_naming_it_and_its_record_says_so(tmp_path):
    """512 MiB is below what TensorFlow alone maps: the run dies; the parent says why."""
    proc, _ = run_cli(
        "train",
        "--model=ptb_lstm",
        "--tiny",
        "--train_steps=2",
        "--memory_limit=512MiB",
        f"--model_dir={tmp_path}/m",
        results_dir=tmp_path,
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "Fatal Python error" not in proc.stderr
    # At most TensorFlow's own cause line before ours: no native stack frames.
    assert "stack trace" not in proc.stderr and " @ 0x" not in proc.stderr, proc.stderr
    assert len([x for x in proc.stderr.splitlines() if x.strip()]) <= 3, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("tpubench train: error: the run died")
    assert "memory cap of 512 MiB (--memory_limit, RLIMIT_DATA)" in last
    records = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    assert [r["status"] for r in records] == ["failed"]
    assert records[0]["memory_limit_bytes"] == 2**29
    assert "memory cap of 512 MiB" in records[0]["error"]
    assert memory_cap.reached(records[0])
    assert str(tmp_path) in last  # the line names the record


def test_a_capped_run_stops_on_sigterm_with_its_interrupted_record(tmp_path):
    """The signal reaches the capped child once (through the parent) and its record says so."""
    cmd = [sys.executable, "-m", "tpubench", "train", "--model=ptb_lstm", "--tiny"]
    cmd += ["--train_steps=1000000", "--steps_per_loop=2", "--memory_limit=4GiB"]
    cmd += [f"--results_dir={tmp_path}", f"--model_dir={tmp_path}/m"]
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    while not list((tmp_path / "m").glob("metrics.jsonl")) and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode != 0 and "Traceback" not in err, err
    records = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    assert [r["status"] for r in records] == ["interrupted"], err
    assert records[0]["memory_limit_bytes"] == 4 * 2**30
    assert records[0]["pid"] != proc.pid  # the capped child ran it


def _import_failed_at_the_cap() -> ImportError:
    try:
        try:
            raise MemoryError
        except MemoryError:
            raise ImportError("cannot import name 'pywrap_tensorflow'") from None
    except ImportError as e:
        e.__context__ = MemoryError()
        return e


@pytest.mark.parametrize(
    "error, capped",
    [
        (MemoryError(), True),
        # a MemoryError CPython's import machinery lost (CI, under a 300 MB cap)
        (
            SystemError(
                "<function _find_and_load at 0x7f> returned NULL without setting an exception"
            ),
            True,
        ),
        (SystemError("error return without exception set"), True),
        (_import_failed_at_the_cap(), True),
        (RuntimeError("can't start new thread"), True),  # a thread's stack counts too
        (SystemError("bad argument to internal function"), False),
        (ImportError("No module named 'tensorflow'"), False),
        (ValueError("batch size 0"), False),
    ],
)
def test_what_counts_as_the_cap_refusing_an_allocation(monkeypatch, error, capped):
    monkeypatch.setenv(memory_cap.ENV, "300000000")
    line = memory_cap.explain(error)
    assert (line is not None) == capped, line
    if capped:
        assert line.startswith("the run reached its memory cap of 300,000,000 bytes")
    monkeypatch.delenv(memory_cap.ENV)
    assert memory_cap.explain(error) is None  # uncapped: never the cap


# A capped child that ends the way TensorFlow's start-up at a small cap can end: an error the
# edge's own handler could not catch, or no line at all (Python lost sys.stderr itself).
_CHILD = """
import os, sys
from tpubench.hardware import capped_child
capped_child.run_capped(300 * 2**20, sys.argv[1], "train", {"run_label": "cell-1"})
sys.stderr.write("MemoryErrorException ignored in sys.unraisablehookMemoryError\\n:\\n:\\n")
sys.stderr.write("object address  : 0x7f90227bd780\\nlost sys.stderr\\n")
sys.stderr.flush()
if sys.argv[2] == "uncaught":
    raise SystemError("error return without exception set")
os._exit(int(sys.argv[2]))
"""


@pytest.mark.parametrize("end", ["uncaught", "1"])
def test_a_child_that_ends_at_its_cap_without_its_line_still_leaves_one_and_a_record(tmp_path, end):
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tmp_path), end],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert proc.returncode == 1, proc.stderr
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, proc.stderr  # the noise above is left out
    assert lines[0].startswith("tpubench train: error: the run ")
    assert "memory cap of 300 MiB" in lines[0] and f"[run record: {tmp_path}" in lines[0]
    (path,) = tmp_path.glob("*.json")
    record = json.loads(path.read_text())
    assert record["status"] == "failed" and record["run_label"] == "cell-1"
    assert memory_cap.reached(record) and record["memory_limit_bytes"] == 300 * 2**20
    if end == "uncaught":
        assert "SystemError: error return without exception set" in record["error"]


def test_a_child_that_fails_with_its_own_line_is_passed_through_untouched(tmp_path):
    """A usage error's line (no cap reached) is the child's; the parent adds nothing."""
    child = _CHILD.replace('if sys.argv[2] == "uncaught"', "if False").replace(
        "os._exit(",
        'print("tpubench train: error: --batch_size=0 is not accepted", '
        "file=sys.stderr); sys.stderr.flush(); os._exit(",
    )
    proc = subprocess.run(
        [sys.executable, "-c", child, str(tmp_path), "2"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == "tpubench train: error: --batch_size=0 is not accepted"
    assert not list(tmp_path.glob("*.json"))
