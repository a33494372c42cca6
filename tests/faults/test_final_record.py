"""A finished run's record survives a results directory that fails (issue 11, item 1).

The results table is printed first; the write is retried; the record is
saved under the user cache's unsent-records/ and the one-line error names
it; the same command run again records the finished run instead of
refusing with "nothing to train".
"""

import json
import os
import pathlib
import re
import subprocess
import sys

import fullfs
import pytest
from conftest import one_line_error, record_files, run_cli


def _train_args(model_dir, results_dir, steps=30):
    return [
        "train",
        "--model=mnist_mlp",
        "--tiny",
        "--use_synthetic_data",
        f"--train_steps={steps}",
        f"--model_dir={model_dir}",
        f"--results_dir={results_dir}",
    ]


def _fallback_in(line: str) -> pathlib.Path:
    found = re.search(r"saved it to (\S+\.json)", line)
    assert found, line
    return pathlib.Path(found.group(1))


def test_a_record_the_full_disk_refused_is_saved_and_recorded_by_the_same_command(
    tmp_path, tpubench_cache
):
    full = tmp_path / "full"
    results, model_dir = full / "runs", tmp_path / "model"
    args = _train_args(model_dir, results)
    wrap = fullfs.fills_when(full, "runs/*.json")  # full once the `running` record is there
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    proc = subprocess.run(
        [*wrap, sys.executable, "-m", "tpubench", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert "examples/sec" in proc.stdout  # the results table came first
    line = one_line_error(proc)
    assert proc.returncode == 6
    assert str(results) in line and "no space left" in line and "3 tries" in line
    fallback = _fallback_in(line)
    assert fallback.parent == tpubench_cache / "unsent-records"
    saved = json.loads(fallback.read_text())
    assert saved["status"] == "ok" and saved["results"]["steps_run"] == 30
    assert saved["config"]["model_dir"] == str(model_dir)
    assert (model_dir / "checkpoints" / "ckpt-30.index").exists()

    # The same command again, with space: the finished run is recorded, nothing is retrained.
    again, _ = run_cli(*args)
    assert again.returncode == 0, again.stderr
    assert "nothing to train" not in again.stderr
    assert f"as {results}" in again.stderr and fallback.name in again.stderr
    assert "examples/sec" in again.stdout
    (written,) = record_files(results)
    record = json.loads(written.read_text())
    assert record["run_id"] == saved["run_id"] and record["status"] == "ok"
    assert record["results"]["steps_run"] == 30 and "unsent_to" not in record
    assert not fallback.exists()
    assert not (model_dir / "checkpoints" / "ckpt-60.index").exists()


@pytest.mark.slow
def test_a_record_gcs_refuses_is_saved_and_recorded_by_the_same_command(
    gcs_env, local_gcs, tmp_path, tpubench_cache
):
    from tpubench.storage import gcs

    results, model_dir = "gs://tpubench-test/refused-runs", tmp_path / "model"
    args = _train_args(model_dir, results, steps=200)
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tpubench", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        while not gcs.list_objects(results, ".json") and proc.poll() is None:
            pass  # until the `running` record is there
        # From now on uploads are denied (the object's name is in the body, not the URL).
        local_gcs.fail(r"^/upload/storage/v1/b/tpubench-test/o", 403, method="POST")
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        proc.kill()
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    assert "examples/sec" in stdout
    line = one_line_error(done)
    assert done.returncode == 6 and "HTTP 403" in line and results in line
    saved = json.loads(_fallback_in(line).read_text())
    assert saved["status"] == "ok" and saved["results"]["steps_run"] == 200
    (path,) = gcs.list_objects(results, ".json")
    assert json.loads(gcs.read_bytes(path))["status"] == "running"  # what GCS still holds

    local_gcs.faults.clear()
    again, _ = run_cli(*args)
    assert again.returncode == 0, again.stderr
    record = json.loads(gcs.read_bytes(path))
    assert record["run_id"] == saved["run_id"] and record["status"] == "ok"
    assert record["results"]["steps_run"] == 200
    assert not _fallback_in(line).exists()
