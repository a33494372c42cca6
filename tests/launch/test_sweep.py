"""Sweep files and the local executor: grid, stable ids, errors, a real pinned run, resume."""

import json
import os
import subprocess
import sys

import pytest
from conftest import record_files

from tpubench_launch import errors
from tpubench_launch.sweep import file as sweep_file

LAUNCH = [sys.executable, "-m", "tpubench_launch.main", "sweep"]

GRID = """
name: study
grid:
  models: [mnist_mlp, cnn]
  machines:
    - {machine: gcp:n1-standard-1, threads: 1}
    - {machine: gcp:n1-standard-2, threads: 2}
  batch_sizes: [64, 128]
  precisions: [fp32]
  strategies: [one_device, {strategy: parameter_server, workers: 2}]
flags: {train_steps: 10, use_synthetic_data: true}
"""


def _file(tmp_path, text, name="s.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_grid_expands_to_every_combination_with_stable_ids(tmp_path):
    path = _file(tmp_path, GRID)
    sw = sweep_file.load(path, "local")
    assert len(sw.configs) == 2 * 2 * 2 * 1 * 2
    ids = [c.id for c in sw.configs]
    assert len(set(ids)) == len(ids)
    assert [c.id for c in sweep_file.load(path, "local").configs] == ids  # stable
    assert set(ids).isdisjoint(c.id for c in sweep_file.load(path, "gce").configs)
    assert sw.results_dir == "runs/sweeps/study"
    first = sw.configs[0]
    assert first.train_flags() == {
        "model": "mnist_mlp",
        "machine": "gcp:n1-standard-1",
        "batch_size": 64,
        "precision": "fp32",
        "num_intra_threads": 1,
        "num_inter_threads": 1,
        "strategy": "one_device",
        "train_steps": 10,
        "use_synthetic_data": True,
    }
    ps = sw.configs[1]
    assert (ps.is_cluster, ps.workers, ps.ps) == (True, 2, 1)
    assert "strategy" not in ps.train_flags()  # the cluster launcher sets it
    # Reordering the file's keys does not change identities.
    flipped = GRID.replace(
        "flags: {train_steps: 10, use_synthetic_data: true}",
        "flags: {use_synthetic_data: true, train_steps: 10}",
    )
    assert [
        c.id for c in sweep_file.load(_file(tmp_path, flipped, "f.yaml"), "local").configs
    ] == ids


@pytest.mark.parametrize(
    "text, message",
    [
        ("grid: {gpus: [1]}", "unknown grid axis in"),
        ("grid: {precisions: [fp8]}", "precision=fp8: not a precision"),
        ("grid: {batch_sizes: []}", "grid.batch_sizes must be a non-empty list"),
        ("grid: {batch_sizes: [0]}", "batch_size=0 must be a whole number from 1 to 1,048,576"),
        ("grid: {models: [a]}\nflags: {model: b}", "flags.model is also set by the grid"),
        ("grid: {threads: [1]}\nflags: {num_intra_threads: 2}", "flags.num_intra_threads"),
        ("grid: {models: [a]}\nflags: {results_dir: x}", "flags.results_dir is set by"),
        ("grid: {strategies: [{strategy: mirrored, workers: 2}]}", "workers=2 needs strategy"),
        ("grid: {models: [a]}\nmodels: [b]", "unknown key in"),
        ("grid: [a, b]", "'grid' must be a mapping"),
        ("grid: {models: [a\n", "is not valid YAML at line"),
    ],
)
def test_bad_sweep_files_name_the_problem(tmp_path, text, message):
    with pytest.raises(errors.UsageError, match=None) as e:
        sweep_file.load(_file(tmp_path, text), "local")
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def test_more_threads_than_cpus_is_refused_before_anything_runs(tmp_path):
    path = _file(tmp_path, "grid: {threads: [4096]}\n")
    out = subprocess.run([*LAUNCH, path, "--dry-run"], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 2
    n = len(os.sched_getaffinity(0))
    assert (
        f"threads=4096 needs 4096 CPUs but this machine lets tpubench-launch use {n}" in out.stderr
    )
    assert out.stderr.count("\n") == 1


def test_local_sweep_pins_cpus_records_and_resumes(tmp_path):
    path = _file(
        tmp_path,
        """
name: pin
results_dir: out
grid:
  models: [mnist_mlp]
  machines: [{machine: gcp:n1-standard-1, threads: 1}]
flags: {tiny: true, use_synthetic_data: true, train_steps: 20, steps_per_loop: 10}
estimate: {seconds: 40}
""",
    )
    (config,) = sweep_file.load(path, "local").configs
    dry = subprocess.run([*LAUNCH, path, "--dry-run"], capture_output=True, text=True, cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines()[-1] == (
        "taskset -c " + str(sorted(os.sched_getaffinity(0))[0]) + " tpubench train "
        "--model=mnist_mlp --machine=gcp:n1-standard-1 --num_intra_threads=1 "
        "--num_inter_threads=1 --tiny --use_synthetic_data --train_steps=20 --steps_per_loop=10 "
        f"--results_dir=out --model_dir=out/model_dirs/{config.id} --run_label={config.id}"
    )
    # n1-standard-1 on demand is $0.0475/h; 40 s estimated.
    row = next(x for x in dry.stdout.splitlines() if x.startswith(config.id))
    assert row.split()[1:5] == ["$0.0475", "0:00:40", "$0.000528", "estimate"]
    assert record_files(tmp_path / "out") == []

    out = subprocess.run([*LAUNCH, path], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    (path_,) = record_files(tmp_path / "out")
    rec = json.loads(path_.read_text())
    assert rec["status"] == "ok" and rec["run_label"] == config.id
    assert rec["hardware"]["cpu"]["affinity_cores"] == 1  # pinned to one CPU
    assert rec["flags"]["num_intra_threads"] == 1 and rec["flags"]["num_inter_threads"] == 1
    assert rec["cost"]["machines"][0]["machine"] == "gcp:n1-standard-1"
    assert f"[1/1] {config.id} done: ok: " in out.stdout
    assert (tmp_path / "out" / "logs" / f"{config.id}.log").exists()

    again = subprocess.run([*LAUNCH, path], capture_output=True, text=True, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "1 already recorded in out, 0 to run" in again.stdout
    assert "nothing to run" in again.stdout
    row = next(x for x in again.stdout.splitlines() if x.startswith(config.id))
    assert row.split()[4] == "done"  # the source column (the description folds after it)
    assert len(record_files(tmp_path / "out")) == 1  # nothing ran twice
