"""Issue 61, item 1: which killed run the same command resumes (run/train/resume.py).

Without --model_dir a run keeps its checkpoints in RESULTS_DIR/RUN_ID; the
same command run again resumes the newest run of that command line that
died or was interrupted with a checkpoint, and nothing else: not a run that
finished, not another command line, not a live run, not a folder outside
the results directory a record names.
"""

import json
import os
import subprocess
import sys

import pytest

from tpubench.run.train import resume

ARGV = ["/usr/bin/tpubench", "train", "--model=mnist_mlp", "--train_steps=3000"]


def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], text=True,
                          capture_output=True, check=True)  # fmt: skip
    return int(proc.stdout)


def _run(results, run_id, status="running", argv=ARGV, model_dir=None, pid=None, ckpt=True,
         started="2026-12-07T10:00:00+00:00"):  # fmt: skip
    model_dir = model_dir or str(results / run_id)
    if ckpt:
        os.makedirs(os.path.join(model_dir, "checkpoints"), exist_ok=True)
        open(os.path.join(model_dir, "checkpoints", "ckpt-40.index"), "w").close()
    record = {
        "schema_version": 2, "run_id": run_id, "kind": "train", "status": status,
        "started": started, "pid": pid or _dead_pid(), "host": os.uname().nodename,
        "heartbeat": started, "argv": argv, "flags": {"model_dir": None},
        "config": {"model_dir": model_dir},
    }  # fmt: skip
    (results / f"{run_id}.json").write_text(json.dumps(record))


@pytest.fixture
def results(tmp_path):
    path = tmp_path / "runs"
    path.mkdir()
    return path


def test_a_killed_run_of_the_same_command_is_resumed(results):
    _run(results, "20261207-100000-mnist_mlp-aaaaaa")
    killed = resume.killed_run(str(results), ARGV)
    assert killed.run_id == "20261207-100000-mnist_mlp-aaaaaa" and killed.status == "died"
    assert killed.model_dir == str(results / killed.run_id)


def test_an_interrupted_run_is_resumed_and_the_newest_wins(results):
    _run(results, "20261207-100000-mnist_mlp-aaaaaa", status="interrupted")
    _run(results, "20261207-110000-mnist_mlp-bbbbbb", started="2026-12-07T11:00:00+00:00")
    assert resume.killed_run(str(results), ARGV).run_id == "20261207-110000-mnist_mlp-bbbbbb"


@pytest.mark.parametrize(
    "change",
    [
        {"status": "ok"},
        {"status": "failed"},
        {"argv": [*ARGV, "--batch_size=64"]},  # another command line
        {"pid": os.getpid()},  # alive: its lock would stop this run
        {"ckpt": False},  # killed before its first checkpoint: nothing to resume
    ],
)
def test_nothing_else_is_resumed(results, change):
    _run(results, "20261207-100000-mnist_mlp-aaaaaa", **change)
    assert resume.killed_run(str(results), ARGV) is None


def test_a_model_dir_outside_the_results_directory_is_never_resumed(results, tmp_path):
    _run(results, "20261207-100000-mnist_mlp-aaaaaa", model_dir=str(tmp_path / "elsewhere"))
    assert resume.killed_run(str(results), ARGV) is None


def test_a_finished_resume_ends_the_chain(results):
    """The resumed run's own record names the same model_dir; once ok, nothing is resumed."""
    _run(results, "20261207-100000-mnist_mlp-aaaaaa")
    model_dir = str(results / "20261207-100000-mnist_mlp-aaaaaa")
    _run(results, "20261207-110000-mnist_mlp-bbbbbb", status="ok", model_dir=model_dir,
         started="2026-12-07T11:00:00+00:00")  # fmt: skip
    assert resume.killed_run(str(results), ARGV) is None


def test_a_missing_results_directory_has_none(tmp_path):
    assert resume.killed_run(str(tmp_path / "none"), ARGV) is None
