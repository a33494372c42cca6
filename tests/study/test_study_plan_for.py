"""`study run --dry-run --plan_for=MACHINE`: a study planned for a catalog machine (its
GPUs, TPU and vCPUs from its name) instead of this host.  Planning only: nothing trains.

test_study_rehearsal.py plans the shipped studies on hand-built hosts; here the hosts
come from the catalog names a user types.
"""

from __future__ import annotations

import pytest
from conftest import one_line_error, run_cli

from tpubench.study.report import findings, forms
from tpubench.study.run import cells, plan, remote
from tpubench.study.spec import spec

GCS = "gs://bkt/photos"  # the photos' gs:// copy, so the local-vs-gs:// cells can plan
GPU8, TPU, CPU64 = "gcp:a3-highgpu-8g", "gcp:tpu-v5e-8", "gcp:n1-standard-64"
HOSTS = {m: remote.remote_host(m, GCS, "test") for m in (GPU8, TPU, CPU64)}


def _home(cell) -> str:
    """The simulated host that has what CELL asks for."""
    device = cell.setup.device
    if device == "tpu":
        return TPU
    if device == "gpu" or (device == "auto" and cell.setup.devices > 1):
        return GPU8
    return CPU64  # cpu, and auto (which is the CPU on a machine without a GPU)


def test_the_simulated_hosts_are_the_machines_they_name():
    assert HOSTS[GPU8].describe() == "208 CPU core(s), 8 GPU(s) (h100), no TPU"
    assert HOSTS[TPU].tpu and HOSTS[TPU].gpus == 0
    assert HOSTS[CPU64].describe() == "64 CPU core(s), no GPU, no TPU"


@pytest.mark.parametrize("name", spec.shipped())
def test_every_cell_of_a_shipped_study_plans_on_the_machine_with_what_it_asks(name, tmp_path):
    study = spec.load(name, forms.FORMS, findings.CHECKS)
    plans = {m: plan.make(study, "full", h, str(tmp_path)) for m, h in HOSTS.items()}
    every = cells.expand(study, "full")
    assert every and all(len(p.cells) == len(every) for p in plans.values())
    unrunnable = {
        f"{c.part.name} · {c.setup.label} on {_home(c)}: {plans[_home(c)].blocked[c.id]}"
        for c in every
        if c.id in plans[_home(c)].blocked
    }
    assert unrunnable == set()
    # Every runnable cell is one the plan would run, with the study's repeats.
    for p in plans.values():
        assert sum(p.runs.values()) == len(p.todo) * study.runs_per_cell("full")


def test_plan_for_a_tpu_slice_prints_its_plan(tmp_path):
    r = tmp_path / "r"
    proc, _ = run_cli(
        "study", "run", "tpu_vs_gpu", "--dry-run", f"--plan_for={TPU}", f"--results_dir={r}"
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:2] == [
        f"study tpu_vs_gpu: 9 cell(s) at --scale=full; {TPU} (1 CPU core(s), no GPU, a TPU) "
        f"can run 6; 0 already recorded in {r}; 6 to run (18 run(s): 3 per cell, for an interval)",
        f"  not runnable on {TPU}: train · 1 GPU (3 cell(s)): needs 1 GPU(s); {TPU} has 0",
    ]
    # A setup that names no machine is priced as the planned one.
    assert any(x.split()[-2:] == [TPU, "(on_demand)"] and "CPU (this host)" in x for x in lines)
    commands = [x for x in lines if x.startswith("tpubench train")]
    assert len(commands) == 6 and sum("--tpu=local" in x for x in commands) == 3
    assert not r.exists()  # a plan writes nothing


@pytest.mark.parametrize(
    "args,expected",
    [
        ([f"--plan_for={GPU8}"], f"--plan_for={GPU8} plans a machine that is not this one"),
        (
            [f"--plan_for={GPU8}", "--dry-run", "--executor=gce", "--cloud=c.yaml"],
            "it goes with `tpubench study run NAME --dry-run` (local executor) only",
        ),
        (
            ["--plan_for=gcp:n2-standard-64", "--dry-run"],
            "--plan_for: machine 'gcp:n2-standard-64': unknown price key",
        ),
    ],
)
def test_plan_for_errors_are_one_line(tmp_path, args, expected):
    proc, _ = run_cli("study", "run", "tpu_vs_gpu", *args, f"--results_dir={tmp_path / 'r'}")
    line = one_line_error(proc)
    assert proc.returncode == 2 and expected in line, line
