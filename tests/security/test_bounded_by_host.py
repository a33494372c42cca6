"""Work bounded by the host: every count of local processes a flag or a file chooses is
checked against what this host holds before anything starts, dry run too, in one line
(docs/security.md, *Work bounded by the host*); a refused fork is one line and a record."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys

import pytest
from conftest import record_files

from tpubench.core import host_procs

LAUNCH = [sys.executable, "-m", "tpubench_launch.main"]
TRAIN = "{model: mnist_mlp, tiny: true, use_synthetic_data: true, train_steps: 4, batch_size: 16}"


def _run(args, cwd, timeout=300):
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    return subprocess.run(args, capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout)


def _one_line(out) -> str:
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    return lines[0]


def _sweep(tmp_path, runs: str, cloud: str = "") -> str:
    path = tmp_path / "wide.yaml"
    path.write_text(
        f"name: wide\nresults_dir: {tmp_path / 'runs'}\nflags: {TRAIN}\n{cloud}runs:\n{runs}"
    )
    return str(path)


HOLDS = host_procs.this_host().most  # what this host holds: 8 on the 2-core development VM

WIDE = [
    ("    - {label: mw64, strategy: multi_worker, workers: 64}\n", "mw64 (workers=64)", 64),
    (
        "    - {label: ps1024, strategy: parameter_server, workers: 2, ps: 1024}\n",
        "ps1024 (workers=2, ps=1024) with its chief",
        1027,
    ),
    (
        "    - {label: mw1024, strategy: multi_worker, workers: 1024}\n",
        "mw1024 (workers=1024)",
        1024,
    ),
]


@pytest.mark.skipif(HOLDS >= 64, reason="this host holds 64 processes")
@pytest.mark.parametrize(("runs", "asked", "count"), WIDE)
@pytest.mark.parametrize("dry", [True, False], ids=["dry_run", "run"])
def test_a_sweep_file_asking_the_local_executor_for_too_many_processes_is_one_line(
    tmp_path, runs, asked, count, dry
):
    path = _sweep(tmp_path, runs)
    out = _run(
        [*LAUNCH, "sweep", path, "--executor=local", *(["--dry-run"] if dry else [])], tmp_path
    )
    assert out.returncode == 2
    line = _one_line(out)
    assert line.startswith(f"tpubench-launch sweep: error: {path}: {asked} asks for {count:,} ")
    assert f"this host holds at most {HOLDS}" in line and "CPU(s) x 4 a CPU" in line
    assert line.endswith(f"accepted: 1 to {HOLDS} processes; nothing was started")
    assert not (tmp_path / "runs" / "logs").exists()  # no task ever started
    assert "dry run:" not in out.stdout


def test_pinned_threads_bound_a_cluster_by_the_cpus_it_is_pinned_to(tmp_path):
    runs = "    - {label: pinned, threads: 1, strategy: multi_worker, workers: 5}\n"
    out = _run(
        [*LAUNCH, "sweep", _sweep(tmp_path, runs), "--executor=local", "--dry-run"], tmp_path
    )
    assert out.returncode == 2
    line = _one_line(out)
    assert "pinned (workers=5) asks for 5 processes at once" in line
    assert "holds at most 4 (1 CPU(s) x 4 a CPU" in line


@pytest.mark.skipif(HOLDS >= 500, reason="this host holds 500 processes")
@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--workers=500"], "--workers=500 asks for 500 processes"),
        (["--workers=2", "--ps=300"], "--workers=2 --ps=300 with its chief asks for 303 processes"),
        # Past the flag's own range (the range table) before the host's bound.
        (["--workers=" + "9" * 40], f"--workers={'9' * 40} is out of range; accepted: 1 to"),
    ],
)
def test_local_cluster_with_more_processes_than_the_host_holds_is_one_line(tmp_path, flags, said):
    out = _run(
        [*LAUNCH, "local-cluster", *flags, "--", f"--results_dir={tmp_path / 'r'}"], tmp_path
    )
    assert out.returncode == 2
    line = _one_line(out)
    assert line.startswith("tpubench-launch local-cluster: error: ") and said in line
    if "out of range" not in said:
        assert f"accepted: 1 to {HOLDS} processes; nothing was started" in line
    assert not (tmp_path / "r").exists()  # no record, no logs: nothing started


def test_a_sweep_cluster_that_fits_still_runs(tmp_path):
    runs = "    - {label: two, strategy: multi_worker, workers: 2}\n"
    out = _run([*LAUNCH, "sweep", _sweep(tmp_path, runs), "--executor=local"], tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    (path,) = record_files(tmp_path / "runs")
    record = json.loads(path.read_text())
    assert record["status"] == "ok" and len(record["cluster"]["tasks"]) == 2


ONE_MACHINE = "cloud: {project: proj-42, zone: us-central1-a, bucket: 'gs://bkt/tb'}\n"


def test_a_rented_machine_bounds_its_one_machine_cluster_not_this_host(tmp_path):
    runs = (
        "    - {label: ps64, machine: 'gcp:%s', strategy: parameter_server, one_machine: true,"
        " workers: 64}\n"
    )
    big = _sweep(tmp_path, runs % "n1-standard-96", ONE_MACHINE)
    out = _run([*LAUNCH, "sweep", big, "--executor=gce", "--dry-run"], tmp_path)
    assert out.returncode == 0, out.stderr  # 66 tasks on 96 vCPUs: more than this host holds
    assert "local-cluster --workers=64 --ps=1" in out.stdout
    small = _sweep(tmp_path, runs % "n1-standard-4", ONE_MACHINE)
    out = _run([*LAUNCH, "sweep", small, "--executor=gce", "--dry-run"], tmp_path)
    assert out.returncode == 2
    assert _one_line(out).endswith(
        "ps64 (workers=64, ps=1, one_machine) with its chief asks for 66 processes at once; "
        "gcp:n1-standard-4 (4 vCPUs, 15 GiB) holds at most 16 (4 CPU(s) x 4 a CPU; 15.0 GiB of "
        "memory at about 0.5 GiB a process); accepted: 1 to 16 processes; nothing was started"
    )


STUDY = """
title: wide
form: {kind: strategies}
parts:
  - name: p
    models: [mnist_mlp]
    setups:
      - {label: small, device: cpu, devices: 2, strategy: parameter_server}
      - {label: huge, device: cpu, devices: 1024, strategy: parameter_server}
    scale:
      smoke: {tiny: true, train_steps: 2}
findings: []
"""


def test_a_study_cluster_cell_past_the_host_is_not_runnable_here(tmp_path):
    path = tmp_path / "wide.yaml"
    path.write_text(STUDY)
    args = [sys.executable, "-P", "-m", "tpubench", "study", "run", str(path), "--dry-run"]
    out = _run([*args, f"--results_dir={tmp_path / 'r'}"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert (
        "not runnable here: p · huge (1 cell(s)): needs 1026 processes at once (1024 workers, "
        f"a parameter server, a chief); this host holds {HOLDS} (" in out.stdout
    )
    assert "local-cluster --workers=2 --ps=1 --" in out.stdout  # the cell that fits runs


def _refuse_second_fork(monkeypatch):
    """subprocess.Popen as the kernel answers a fork past the process limit, from the 2nd on."""
    real, calls = subprocess.Popen, []

    def popen(*args, **kwargs):
        calls.append(args)
        if len(calls) > 1:
            raise BlockingIOError(errno.EAGAIN, os.strerror(errno.EAGAIN))
        return real(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", popen)


def test_a_refused_fork_in_a_cluster_is_one_line_and_a_failed_record(tmp_path, monkeypatch, capsys):
    from tpubench_launch import cli

    _refuse_second_fork(monkeypatch)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    results = tmp_path / "r"
    argv = ["local-cluster", "--workers=2", "--grace=5", "--", f"--results_dir={results}"]
    code = cli.main([*argv, "--model=mnist_mlp", "--tiny", "--use_synthetic_data"])
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "could not start task worker:1: Resource temporarily unavailable (EAGAIN)" in err
    assert "stopped the other 1 task(s)" in err and "[run record: " in err
    (path,) = record_files(results)
    record = json.loads(path.read_text())
    assert record["status"] == "failed" and "(EAGAIN)" in record["error"]
    assert record["cluster"]["tasks"][1]["pid"] is None  # the task that never started


def test_a_refused_fork_in_a_sweep_fails_that_configuration_in_one_line(
    tmp_path, monkeypatch, capsys
):
    from tpubench_launch import cli

    def popen(*args, **kwargs):
        raise BlockingIOError(errno.EAGAIN, os.strerror(errno.EAGAIN))

    path = _sweep(tmp_path, "    - {label: one}\n")
    monkeypatch.setattr("tpubench.children.process.subprocess.Popen", popen)
    code = cli.main(["sweep", path, "--executor=local"])
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "1 of 1 configuration(s) failed (one); first: could not start `tpubench train`: " in err
    assert "(EAGAIN); the host has no room for another process" in err
