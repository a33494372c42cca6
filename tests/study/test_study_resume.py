"""Interrupting a study (SIGINT, then SIGTERM) and running it again runs only the missing cells."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

STUDY = """
title: three cells
form: {kind: relative}
parts:
  - name: train
    models: [mnist_mlp]
    data: [synthetic]
    setups:
      - {label: a, vcpus: 1}
      - {label: b, vcpus: 2}
      - {label: c}
    scale:
      smoke: {tiny: true, train_steps: 40, steps_per_loop: 2}
"""


def _start(path, results, log):
    """The study from a directory holding a folder named tpubench (not the package):
    its cells must still import the real one (they start `python -P`)."""
    cwd = results.parent
    (cwd / "tpubench").mkdir(exist_ok=True)
    (cwd / "tpubench" / "__init__.py").write_text('raise ImportError("not the package")\n')
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    cmd = [sys.executable, "-P", "-m", "tpubench", "study", "run", str(path), "--scale=smoke"]
    return subprocess.Popen(
        [*cmd, f"--results_dir={results}"],
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
        env=env,
        cwd=cwd,
    )


def _wait_for(log, text, proc, timeout=240):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        content = log.read_text()
        if text in content:
            return content
        assert proc.poll() is None, f"ended ({proc.returncode}) first:\n{content}"
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"timed out waiting for {text!r}:\n{log.read_text()}")


def _ok_records(results):
    out = {}
    for path in results.glob("*.json"):
        record = json.loads(path.read_text())
        if record.get("status") == "ok":
            out.setdefault(record["run_label"], []).append(path.name)
    return out


def test_an_interrupted_study_runs_only_its_missing_cells(tmp_path):
    path = tmp_path / "three.yaml"
    path.write_text(STUDY)
    results = tmp_path / "r"

    # 1: SIGINT while the second cell runs.
    log = tmp_path / "1.log"
    proc = _start(path, results, log)
    _wait_for(log, "[2/3]", proc)
    time.sleep(1.0)  # the cell's process has started (TensorFlow's start-up takes seconds)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=120) == 130, log.read_text()
    assert "interrupted by SIGINT after 2 of 3 cell(s) (1 recorded)" in log.read_text()
    first = _ok_records(results)
    assert len(first) == 1, first

    # 2: the recorded cell is skipped; SIGTERM while the next one runs.
    log = tmp_path / "2.log"
    proc = _start(path, results, log)
    text = _wait_for(log, "[1/2]", proc)
    assert "1 already recorded" in text and "2 to run" in text, text
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 130, log.read_text()
    assert "interrupted by SIGTERM" in log.read_text()

    # 3: the two missing cells run, the recorded one does not.
    log = tmp_path / "3.log"
    proc = _start(path, results, log)
    assert proc.wait(timeout=300) == 0, log.read_text()
    text = log.read_text()
    assert "1 already recorded" in text and "2 to run" in text, text
    assert "[2/2]" in text and "[3/" not in text
    done = _ok_records(results)
    assert len(done) == 3 and all(len(v) == 1 for v in done.values()), done
    label, names = next(iter(first.items()))
    assert done[label] == names  # the first cell's record is the one from run 1
    assert "3 measured" in text


def test_a_closed_terminal_stops_the_study_and_its_running_cell(tmp_path):
    """SIGHUP (terminal or ssh session closed) reaches only the study, not the cell in its
    own session: the study stops the cell (which records itself interrupted) and says so."""
    path = tmp_path / "one.yaml"
    path.write_text(STUDY.replace("train_steps: 40", "train_steps: 100000"))
    results = tmp_path / "r"
    log = tmp_path / "hup.log"
    proc = _start(path, results, log)
    _wait_for(log, "[1/3]", proc)
    deadline = time.monotonic() + 120
    while not any(results.glob("*.json")):  # the cell's `running` record: it is training
        assert time.monotonic() < deadline and proc.poll() is None, log.read_text()
        time.sleep(0.1)
    proc.send_signal(signal.SIGHUP)
    assert proc.wait(timeout=120) == 130, log.read_text()
    assert "interrupted by SIGHUP" in log.read_text()
    (record,) = [json.loads(p.read_text()) for p in results.glob("*.json")]
    assert record["status"] == "interrupted", record.get("status")
