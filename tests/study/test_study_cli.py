"""`tpubench study` through the real CLI: list, dry runs, bad files, smoke runs of all five."""

from __future__ import annotations

import json
import os
import pathlib
import resource
import subprocess
import sys
import time

import pytest
from conftest import one_line_error, run_cli

from tpubench.core import safe_text
from tpubench.hardware import probe

STUDIES = ("cnn_scaling", "cpu_vs_gpu", "gpu_host_sizing", "strategies", "tpu_vs_gpu")


def test_list_names_the_five_studies():
    proc, _ = run_cli("study", "list")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["study", "cells", "here", "title"]
    assert [line.split()[0] for line in lines[1:6]] == list(STUDIES)
    assert "runnable on this host (2 CPU core(s)" in proc.stdout or "CPU core(s)" in proc.stdout


@pytest.mark.parametrize("name", STUDIES)
def test_dry_run_shows_cells_commands_and_cost_and_runs_nothing(name, tmp_path):
    results = tmp_path / "r"
    proc, _ = run_cli("study", "run", name, "--dry-run", f"--results_dir={results}")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith(f"study {name}: ")
    assert "not runnable here: train · 1 GPU" in out or "not runnable here: train · 1 vCPU" in out
    assert "cost preview" in out and "dry run: these commands would run" in out
    commands = [x for x in out.splitlines() if "tpubench train" in x or "tpubench infer" in x]
    assert commands, out
    assert all(f"--run_label={name}-" in c for c in commands)
    assert not list(results.rglob("*.json"))  # nothing ran


def _study(tmp_path, text: str) -> pathlib.Path:
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    return path


GOOD = """
title: mine
form: {kind: knee}
parts:
  - name: p
    models: [mnist_mlp]
    setups:
      - {label: one, vcpus: 1}
      - {label: two, vcpus: 2}
      - {label: four, vcpus: 4}
    scale:
      smoke: {tiny: true, train_steps: 2}
findings:
  - text: about 2 vCPUs
    check: {kind: knee, part: p, band: 2 vCPUs}
"""


@pytest.mark.parametrize(
    "old,new,expected",
    [
        ("title: mine", "titel: mine", "unknown key in {path}: 'titel'"),
        ("{kind: knee}", "{kind: bars}", "unknown form.kind in {path}: 'bars'"),
        ("{label: one, vcpus: 1}", "{label: one, device: fpga}", "unknown device in"),
        ("{label: one, vcpus: 1}", "{label: one, vcpus: 0}", "vcpus=0 must be a whole number >= 1"),
        ("train_steps: 2", "train_stepz: 2", "unknown `tpubench train` flag in"),
        ("train_steps: 2", "results_dir: x", "results_dir is set by the study for each cell"),
        ("kind: knee, part: p", "kind: kneee, part: p", "unknown check kind in"),
        ("part: p, band", "part: q, band", "unknown part in"),
        (
            "band: 2 vCPUs",
            "band: 2 GHz",
            "findings[0].check.band='2 GHz' is not a band in vCPUs: give e.g. 4 vCPUs or 2-4",
        ),
        (
            "band: 2 vCPUs",
            "band: 1-2 vCPUs",
            "findings[0].check: band '1-2 vCPUs' accepts 2 of the 3 vCPU sizes this finding could "
            "see (1, 2, 4); a band must accept fewer than half",
        ),
        (
            "{label: two, vcpus: 2}",
            "{label: two, vcpus: 2, memory: 1GiB}",
            "'two' stands in with a memory cap (--memory_limit, RLIMIT_DATA) but 'one' does not; "
            "judge a stand-in against another memory cap",
        ),
        ("models: [mnist_mlp]", "models: []", "parts[0] (p).models must be a non-empty list"),
        ("title: mine", "title: [mine", "is not valid YAML at line"),
        ("title: mine", "title: mine\nrepeats: 1", "repeats=1 must be a whole number >= 2"),
        (
            "{label: one, vcpus: 1}",
            "{label: one, variables: cpu}",
            "variables=cpu is where parameter servers keep them; it needs strategy: "
            "central_storage or parameter_server",
        ),
    ],
)
def test_a_bad_study_file_is_one_line_naming_the_key(tmp_path, old, new, expected):
    path = _study(tmp_path, GOOD.replace(old, new))
    proc, _ = run_cli("study", "run", str(path), "--dry-run", f"--results_dir={tmp_path}/r")
    line = one_line_error(proc)
    assert proc.returncode == 2
    assert expected.format(path=path) in line, line


# A folder named tpubench that is not the package (an old copy, someone's
# project): importing it fails.  Without -P, `python -m` would import it.
FAKE_PACKAGE = 'raise ImportError("this folder is not the tpubench package")\n'


def test_a_tpubench_folder_where_the_study_runs_is_not_imported(tmp_path):
    """Cells start `python -P`: the real tpubench checks the flags, not ./tpubench."""
    (tmp_path / "tpubench").mkdir()
    (tmp_path / "tpubench" / "__init__.py").write_text(FAKE_PACKAGE)
    path = _study(tmp_path, GOOD.replace("train_steps: 2", "train_stepz: 2"))
    cmd = [sys.executable, "-P", "-m", "tpubench", "study", "run", str(path), "--dry-run"]
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    proc = subprocess.run(
        [*cmd, f"--results_dir={tmp_path}/r"], cwd=tmp_path, capture_output=True, text=True, env=env
    )
    assert proc.returncode == 2, proc.stderr
    assert "unknown `tpubench train` flag in" in one_line_error(proc)


def test_unknown_study_name_and_action(tmp_path):
    proc, _ = run_cli("study", "run", "cpu_vs_gpo", "--dry-run")
    assert "unknown study 'cpu_vs_gpo'" in one_line_error(proc) and "cpu_vs_gpu" in proc.stderr
    proc, _ = run_cli("study", "rum", "cpu_vs_gpu")
    assert "unknown study action 'rum'" in one_line_error(proc)


def test_smoke_of_all_five_runs_every_runnable_cell_in_under_five_minutes(tmp_path):
    """The one proof that the whole path works on a CPU: five studies, under 5 minutes.

    The budget is CPU time of every process the studies start (the cells
    included): on a shared machine wall time measures the neighbours, while
    work that fits in 300 CPU-seconds takes at most about 300 s on two idle
    cores.  Wall time is checked too when the machine was idle at the start.
    """
    start, idle = time.monotonic(), os.getloadavg()[0] < 2
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for name in STUDIES:
        results = tmp_path / name
        proc, _ = run_cli("study", "run", name, "--scale=smoke", f"--results_dir={results}")
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
        header = proc.stdout.splitlines()[0]
        runnable = int(header.split(" can run ")[1].split(";")[0])
        labels = {}
        for path in results.glob("*.json"):
            record = json.loads(path.read_text())
            if record.get("status") == "ok":
                labels.setdefault(record["run_label"], []).append(path)
        assert len(labels) == runnable, (name, header, sorted(labels))
        if name == "strategies":  # the seed's ps_cpu: one synchronous process, not a cluster
            ran = {
                (r["placement"]["strategy"], r["placement"].get("parameter_device"))
                for r in (json.loads(p.read_text()) for ps in labels.values() for p in ps)
            }
            assert ran == {("mirrored", None), ("central_storage", "cpu")}, ran
        report = (results / "report" / f"{name}-smoke.md").read_text()
        assert "## Findings" in report and f"{runnable} measured" in report
        if name == "cpu_vs_gpu":  # pinned cores of this host's CPU, priced as an n1 machine
            cpu = safe_text.markdown_cell(probe.cpu()["model"])
            row = next(x for x in report.splitlines() if x.startswith("| train · 1 vCPU | 1 |"))
            assert f"| {cpu}: " in row and row.endswith("| gcp:n1-standard-1 (spot) |"), row
        assert list((results / "report").glob("*.png"))
        for line in report.split("## Findings")[1].split("## Cells")[0].strip().splitlines():
            # Tiny models say nothing about the published figures: no verdict at smoke.
            assert (
                line.endswith("**not judged (smoke scale)**") or "**not measured (needs" in line
            ), line
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    wall = time.monotonic() - start
    print(f"five smoke studies: {cpu:.0f} CPU-seconds, {wall:.0f} s wall")
    assert cpu < 300, f"{cpu:.0f} CPU-seconds"
    if idle:
        assert wall < 300, f"{wall:.0f} s on an idle machine"
