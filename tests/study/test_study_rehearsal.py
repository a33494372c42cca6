"""Each shipped study planned on the hosts its seeds ran on (simulated): every seed cell that
a host has the hardware for is runnable there, the 8-GPU "PS on GPU" cell in 8 GPUs included."""

from __future__ import annotations

import os
import pathlib

import pytest
from conftest import run_cli

from tpubench.study import studies
from tpubench.study.run import cells
from tpubench.study.spec import spec

STUDY_FILES = sorted(pathlib.Path(studies.__file__).parent.glob("*.yaml"))
GCS = "gs://bucket/photos"
HOSTS = {
    "8 GPUs": cells.Host(tuple(range(208)), 8, "NVIDIA H100 80GB HBM3", False, GCS),
    "a TPU slice": cells.Host(tuple(range(224)), 0, "", True, GCS),
    "64 vCPUs": cells.Host(tuple(range(64)), 0, "", False, GCS),
}


def _host_for(cell) -> str:
    """The simulated host with what the cell's setup asks for."""
    s = cell.setup
    if s.device == "tpu":
        return "a TPU slice"
    if s.device == "gpu" or (s.device == "auto" and not s.vcpus):
        return "8 GPUs"
    return "64 vCPUs"


@pytest.mark.parametrize("path", STUDY_FILES, ids=[p.stem for p in STUDY_FILES])
def test_every_seed_cell_is_runnable_on_the_host_that_has_its_hardware(path):
    plan = cells.expand(spec.load(str(path)), "full")
    assert plan
    for cell in plan:
        s = cell.setup
        assert s.devices <= 8 and (s.vcpus or 0) <= 64, cell.describe()  # what the seeds had
        host = _host_for(cell)
        assert cell.needs(HOSTS[host]) is None, (
            f"{cell.describe()} on {host}: {cell.needs(HOSTS[host])}"
        )


def test_the_seeds_parameter_server_on_gpu_fits_in_the_gpus_it_trains_on():
    study = spec.load(str(next(p for p in STUDY_FILES if p.stem == "strategies")))
    ps_gpu = [c for c in cells.expand(study, "full") if c.setup.label == "8 GPU ps_gpu"]
    assert ps_gpu and all(c.needs(HOSTS["8 GPUs"]) is None for c in ps_gpu)
    assert all(not c.cluster() for c in ps_gpu)  # one process, as the seed ran it
    seven = cells.Host(tuple(range(208)), 7, "NVIDIA H100 80GB HBM3", False, GCS)
    assert ps_gpu[0].needs(seven) == "needs 8 GPU(s); this host has 7"


def test_a_dry_run_on_an_8_gpu_host_plans_every_strategies_cell(tmp_path):
    """The CLI on a host whose nvidia-smi lists 8 H100s (a stand-in on PATH)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(
        '#!/bin/sh\ncase "$*" in *driver_version*) echo 550.54.15;;\n'
        "*) for i in 0 1 2 3 4 5 6 7; do echo 'NVIDIA H100 80GB HBM3, 9.0'; done;; esac\n"
    )
    smi.chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "CUDA_VISIBLE_DEVICES": None}
    proc, _ = run_cli(
        "study", "run", "strategies", "--dry-run", f"--results_dir={tmp_path / 'r'}", env=env
    )
    assert proc.returncode == 0, proc.stderr
    head = proc.stdout.splitlines()[0]
    assert "8 GPU(s) (NVIDIA H100 80GB HBM3)" in head
    total = head.split(" cell(s)")[0].rsplit(" ", 1)[1]
    assert f"can run {total};" in head and "not runnable" not in proc.stdout
    assert "8 GPU ps_gpu" in proc.stdout and "--strategy=central_storage" in proc.stdout
