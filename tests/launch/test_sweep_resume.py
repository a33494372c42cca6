"""A sweep's resume counts a configuration done only by a record of its own run.

docs/security.md, "A result only from a record of that run": a record carrying a run's label
counts only when it measured what that run asks; any other is named in one line and the run
runs.  Each case is `tpubench-launch sweep FILE --dry-run` (a real process) over records that
tpubench wrote, relabelled and changed as a colleague's results folder might hand them over.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import sweep_records

from tpubench_launch.sweep import file as sweep_file

LAUNCH = [sys.executable, "-m", "tpubench_launch.main", "sweep"]
RESULTS = "runs/sweeps/s"

ONE = """
name: s
flags: {use_synthetic_data: true, train_steps: 5, num_cpu_devices: 2}
runs:
  - label: mlp
    machine: gcp:n1-standard-4
    model: mnist_mlp
    batch_size: 16
    precision: fp32
    strategy: mirrored
    threads: 2
  - {label: other, model: mnist_mlp, batch_size: 8}
"""


def _sweep(tmp_path, text):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    configs = _configs(tmp_path, text)
    out = subprocess.run(
        [*LAUNCH, str(path), "--dry-run"], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return configs, out


def _configs(tmp_path, text):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return {c.id: c for c in sweep_file.load(str(path), "local").configs}


def _to_run(out) -> list[str]:
    """The ids the dry run would run, in order."""
    body = out.stdout.split("dry run: these commands would run, in this order:\n")[-1]
    return [x.split(":")[0][2:] for x in body.splitlines() if x.startswith("# ")]


def test_its_own_record_marks_a_run_done(tmp_path):
    mlp = _configs(tmp_path, ONE)["mlp"]
    sweep_records.write(tmp_path / RESULTS, mlp, "r1", f"{RESULTS}/model_dirs/mlp")
    _, out = _sweep(tmp_path, ONE)
    assert f"2 configuration(s), 1 already recorded in {RESULTS}, 1 to run" in out.stdout
    assert _to_run(out) == ["other"] and "left out" not in out.stdout


@pytest.mark.parametrize(
    ("changed", "why"),
    [
        ({"model": "mnist_cnn"}, "model mnist_cnn != mnist_mlp"),
        ({"batch_size": 32}, "batch 32 != 16"),
        ({"precision": "bf16"}, "precision bf16 != fp32"),
        ({"strategy": "one_device"}, "strategy one_device != mirrored"),
        ({"num_cpu_devices": 4}, "num_cpu_devices 4 != 2"),
        ({"num_intra_threads": 8}, "num_intra_threads 8 != 2"),
        ({"xla": True}, "sets --xla, which it does not ask"),
    ],
)
def test_a_record_of_another_run_under_its_label_is_named_and_the_run_runs(tmp_path, changed, why):
    mlp = _configs(tmp_path, ONE)["mlp"]
    own_dir = f"{RESULTS}/model_dirs/mlp"
    path = sweep_records.write(tmp_path / RESULTS, mlp, "r1", own_dir, **changed)
    _, out = _sweep(tmp_path, ONE)
    assert f"2 configuration(s), 0 already recorded in {RESULTS}, 2 to run" in out.stdout
    assert _to_run(out) == ["mlp", "other"]
    (line,) = [x for x in out.stdout.splitlines() if "left out" in x]
    shown = path.removeprefix(f"{tmp_path}/")
    assert line == f"  {shown}: labelled mlp ({mlp.describe()}) but {why}; left out"


def test_what_the_record_measured_counts_not_only_its_flags(tmp_path):
    """Flags edited to fit: the steps still ran another batch, model, precision, strategy."""
    mlp = _configs(tmp_path, ONE)["mlp"]
    rec = sweep_records.record(mlp, "r1", f"{RESULTS}/model_dirs/mlp")
    for key, value, why in (
        ("global_batch_size", 32, "batch 32 != 16"),
        ("model", {"name": "resnet50"}, "model resnet50 != mnist_mlp"),
        ("config", {**rec["config"], "precision": "fp16"}, "precision fp16 != fp32"),
        ("placement", {**rec["placement"], "strategy": "one_device"}, "strategy one_device"),
    ):
        (tmp_path / RESULTS).mkdir(parents=True, exist_ok=True)
        (tmp_path / RESULTS / "r1.json").write_text(json.dumps({**rec, key: value}))
        _, out = _sweep(tmp_path, ONE)
        assert "0 already recorded" in out.stdout and _to_run(out) == ["mlp", "other"], key
        assert f"but {why}" in out.stdout, out.stdout


SHARED = """
name: s
flags: {use_synthetic_data: true, train_steps: 5}
runs:
  - {label: b16, run_label: cell, model: mnist_mlp, batch_size: 16}
  - {label: b32, run_label: cell, model: mnist_mlp, batch_size: 32}
"""


def test_runs_that_share_a_label_are_each_done_by_a_record_of_their_own(tmp_path):
    """An infer-like record (no model_dir) of batch 32 marks b32 done, not the first in file
    order; one of another model marks neither and is named."""
    configs = _configs(tmp_path, SHARED)
    sweep_records.write(tmp_path / RESULTS, configs["b32"], "r1")
    _, out = _sweep(tmp_path, SHARED)
    assert "1 already recorded" in out.stdout and _to_run(out) == ["b16"]
    sweep_records.write(tmp_path / RESULTS, configs["b16"], "r2", model="mnist_cnn")
    _, out = _sweep(tmp_path, SHARED)
    assert "1 already recorded" in out.stdout and _to_run(out) == ["b16"]
    assert "r2.json: labelled cell (b16: " in out.stdout
    assert "but model mnist_cnn != mnist_mlp; left out" in out.stdout


REPEATS = """
name: s
flags: {use_synthetic_data: true, train_steps: 5, model: mnist_mlp, batch_size: 16}
runs:
  - {label: rep-1, run_label: cell}
  - {label: rep-2, run_label: cell}
  - {label: rep-3, run_label: cell}
"""


def test_a_model_dir_that_only_ends_like_a_repeats_is_not_its_own(tmp_path):
    """rep-1's record in its own model_dir marks it done; a record of another batch in
    elsewhere/model_dirs/rep-2 (it ends like rep-2's) marks nothing: rep-2 and rep-3 run."""
    configs = _configs(tmp_path, REPEATS)
    sweep_records.write(tmp_path / RESULTS, configs["rep-1"], "r1", f"{RESULTS}/model_dirs/rep-1")
    elsewhere = str(tmp_path / "elsewhere" / "model_dirs" / "rep-2")
    sweep_records.write(tmp_path / RESULTS, configs["rep-2"], "r2", elsewhere, batch_size=32)
    _, out = _sweep(tmp_path, REPEATS)
    assert f"3 configuration(s), 1 already recorded in {RESULTS}, 2 to run" in out.stdout
    assert _to_run(out) == ["rep-2", "rep-3"]
    assert "r2.json: labelled cell (rep-1: " in out.stdout and "but batch 32 != 16" in out.stdout
    # The same run's record elsewhere (another executor wrote it) is a repeat's result.
    sweep_records.write(tmp_path / RESULTS, configs["rep-3"], "r3", elsewhere)
    _, out = _sweep(tmp_path, REPEATS)
    assert "2 already recorded" in out.stdout and _to_run(out) == ["rep-3"]
