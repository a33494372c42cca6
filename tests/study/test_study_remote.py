"""`tpubench study run --executor=gce|tpu-vm|gke --cloud=FILE`: through tpubench-launch.

No cloud is reachable here.  tests/launch/bin/gcloud and tests/launch/bin/kubectl
are TEST DOUBLES put first on PATH: the study writes its sweep file and runs
the real launcher, which calls them.  In the gce run below the gcloud double
runs each `ssh --command` with bash in a stand-in VM home whose
`tpubench-venv/bin/python` runs this checkout's real tpubench (gs://bkt/...
mapped to a local directory that the double's `storage rsync` copies from),
so a real cell trains on the "VM" and its record comes home the way it would.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import re
import shlex
import shutil
import sys

import pytest
import yaml
from conftest import one_line_error, run_cli, sigint_when

BIN = pathlib.Path(__file__).resolve().parents[1] / "launch" / "bin"
WHERE = "--zone=us-central1-a --project=proj-42"
CLOUD = """
project: proj-42
zone: us-central1-a
bucket: gs://bkt/tb
image: img:1
machines:
  Cloud TPU: gcp:tpu-v5e-8
  1 GPU: gcp:n1-standard-8+1xgcp:v100
"""
MINE = """
title: mine
form: {kind: relative, part: p, baseline: one}
parts:
  - name: p
    models: [mnist_mlp]
    setups:
      - {label: one, vcpus: 1, machine: "gcp:n1-standard-1"}
      - {label: gpu, device: gpu}
      - {label: ps, vcpus: 1, strategy: parameter_server, machine: "gcp:n1-standard-1"}
    flags: {steps_per_loop: 1}
    scale:
      smoke: {seconds: 20, tiny: true, train_steps: 2, batch_size: 8}
"""
# Runs on the stand-in VM in place of the virtualenv's python: this checkout's
# tpubench, with the bucket's gs:// paths mapped to the directory the gcloud
# double's rsync copies from.
VM_PYTHON = """#!{python}
import os, sys
buckets, cache = {buckets!r}, {cache!r}
args = [a.replace("gs://", buckets + "/") for a in sys.argv[1:]]
env = dict(os.environ, TPUBENCH_CACHE=cache, CUDA_VISIBLE_DEVICES="", PATH="/usr/bin:/bin")
os.execve({python!r}, [{python!r}, *args], env)
"""
RECORDER = """#!{python}
import json, os, sys
with open(os.path.expanduser("~/argv.jsonl"), "a") as f:
    f.write(json.dumps([os.path.basename(sys.argv[0])] + sys.argv[1:]) + "\\n")
"""


def _env(tmp_path, **extra) -> dict:
    env = {"PATH": f"{BIN}:{os.environ['PATH']}"}
    env["GCLOUD_DOUBLE_LOG"] = str(tmp_path / "gcloud.jsonl")
    env["KUBECTL_DOUBLE_LOG"] = str(tmp_path / "kubectl.jsonl")
    env.update(extra)
    return env


def _file(tmp_path, name: str, text: str) -> pathlib.Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _dry_commands(out: str) -> list[str]:
    body = out.split("dry run: these commands would run, in this order:\n")[1]
    return [x for x in body.splitlines() if not x.startswith("#")]


def _calls(tmp_path, tool: str) -> list[str]:
    path = tmp_path / f"{tool}.jsonl"
    if not path.exists():
        return []
    return [shlex.join(json.loads(x)) for x in path.read_text().splitlines()]


def test_gce_dry_run_runs_the_cpu_cells_on_their_machines(tmp_path):
    cloud = _file(tmp_path, "cloud.yaml", CLOUD)
    r = tmp_path / "r"
    proc, _ = run_cli(
        "study", "run", "cpu_vs_gpu", "--scale=smoke", "--executor=gce", f"--cloud={cloud}",
        "--dry-run", f"--results_dir={r}", env=_env(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == (
        f"study cpu_vs_gpu: 13 cell(s) at --scale=smoke; --executor=gce with the machines of "
        f"{cloud} can run 13; 0 already recorded in {r}; 13 to run"
    )
    assert lines[1] == f"$ tpubench-launch sweep {r}/launch/gce.yaml --executor=gce --dry-run"
    sweep = yaml.safe_load((r / "launch/gce.yaml").read_text())
    assert sweep["results_dir"] == str(r) and "image" not in sweep["cloud"]
    runs = {x["machine"]: x for x in sweep["runs"]}
    eight = runs["gcp:n1-highcpu-8"]
    assert eight["flags"] == {
        "model": "mnist_mlp",
        "accelerator": "cpu",
        "num_intra_threads": 8,
        "num_inter_threads": 8,
        "pricing": "spot",  # the study's own basis: preemptible CPUs
        "use_synthetic_data": True,
        "steps_per_loop": 2,
        "tiny": True,
        "train_steps": 4,
    }
    label = eight["label"]
    vm = next(c.split()[4] for c in _dry_commands(proc.stdout) if "machine-type=n1-highcpu-8 " in c)
    script = (
        "set -o pipefail; cd ~; tpubench-venv/bin/python -I -m tpubench train --model=mnist_mlp "
        "--machine=gcp:n1-highcpu-8 --accelerator=cpu --num_intra_threads=8 "
        "--num_inter_threads=8 --pricing=spot --use_synthetic_data --steps_per_loop=2 --tiny "
        "--train_steps=4 "
        f"--results_dir=gs://bkt/tb/records --model_dir=gs://bkt/tb/model_dirs/{label} "
        f"--run_label={label} 2>&1 | tee ~/tpubench-{label}.log"
    )
    assert f"gcloud compute ssh {vm} {WHERE} --quiet {shlex.quote('--command=' + script)}" in (
        _dry_commands(proc.stdout)
    )
    assert "taskset" not in proc.stdout  # the VM has the vCPUs
    # The preview's description is its last column and folds under itself.
    at = next(i for i, x in enumerate(lines) if "estimate" in x and "v100" in lines[i + 1])
    gpu_row = " ".join(lines[at : at + 2]).split()
    assert gpu_row[1] == "$2.86" and gpu_row[4] == "estimate"
    assert gpu_row[5:] == ["mnist_mlp", "gcp:n1-standard-8+1xgcp:v100"]
    assert _calls(tmp_path, "gcloud") == []


def test_tpu_vm_and_gke_dry_runs_pick_their_cells(tmp_path):
    cloud = _file(tmp_path, "cloud.yaml", CLOUD)
    r = tmp_path / "r"
    for executor, blocked, runs in [
        (
            "tpu-vm",
            [
                "1 GPU (1 cell(s)): --executor=tpu-vm runs on tpu, not gpu (gcp:n1-standard-8+1x"
                "gcp:v100); --executor=gce, --executor=gke or --executor=skypilot does"
            ],
            1,
        ),
        ("gke", [], 2),
    ]:
        # cloud.image chooses the code every GKE pod runs: trusted here (a --cloud file
        # naming it is refused without --trust_code: tests/launch/test_trusted_files.py).
        trust = ["--trust_code"] if executor == "gke" else []
        proc, _ = run_cli(
            "study", "run", "tpu_vs_gpu", "--scale=smoke", f"--executor={executor}",
            f"--cloud={cloud}", "--dry-run", f"--results_dir={r}", *trust, env=_env(tmp_path),
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.splitlines()
        assert f"can run {runs}; 0 already recorded" in lines[0]
        assert lines[1 : 2 + len(blocked)] == [
            *(f"  not runnable on {executor}: train · {b}" for b in blocked),
            f"  not runnable on {executor}: train · CPU (this host) (1 cell(s)): needs a machine "
            "for setup 'CPU (this host)' in the --cloud file's machines:",
        ]
        commands = _dry_commands(proc.stdout)
        if executor == "tpu-vm":
            create = commands[0].split()
            assert create[:5] == ["gcloud", "compute", "tpus", "tpu-vm", "create"]
            assert "--accelerator-type=v5litepod-8" in create
            assert commands[1].split()[4] == "scp"  # the wheel built here, installed by hash
            assert "--precision=bf16" in commands[3] and "--tpu=local" in commands[3]
        else:
            assert [c.split()[1] for c in commands if c.startswith("kubectl")] == [
                "apply", "delete", "apply", "delete",
            ]  # fmt: skip
            assert sum("--kind=job " in c for c in commands) == 1
            assert sum("--kind=jobset " in c for c in commands) == 1
    assert _calls(tmp_path, "gcloud") == [] and _calls(tmp_path, "kubectl") == []


def test_gpu_host_sizing_needs_gcs_data_remotely(tmp_path):
    cloud = _file(tmp_path, "cloud.yaml", CLOUD + "  1 vCPU: gcp:n1-standard-1+1xgcp:t4\n")
    proc, _ = run_cli(
        "study", "run", "gpu_host_sizing", "--scale=smoke", "--executor=gce", f"--cloud={cloud}",
        "--dry-run", f"--results_dir={tmp_path / 'r'}", env=_env(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (
        "  not runnable on gce: train · 1 vCPU (1 cell(s)): needs the photos on gs:// "
        "(--gcs_data=gs://BUCKET/PATH)" in proc.stdout
    )
    proc, _ = run_cli(
        "study", "run", "gpu_host_sizing", "--scale=smoke", "--executor=gce", f"--cloud={cloud}",
        "--gcs_data=gs://bkt/photos", "--dry-run", f"--results_dir={tmp_path / 'r'}",
        env=_env(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    infer = [c for c in _dry_commands(proc.stdout) if "tpubench infer" in c]
    assert infer and all("--data_dir=gs://bkt/photos" in c for c in infer)
    assert not any("--model_dir" in c for c in infer)  # infer's model_dir names weights


def _without_ps(study: str) -> str:
    return "".join(x for x in study.splitlines(keepends=True) if "label: ps," not in x)


def _vm_home(tmp_path, buckets) -> pathlib.Path:
    home = tmp_path / "vm-home"
    for rel in ("bin/python3", "tpubench-venv/bin/pip"):
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(RECORDER.format(python=sys.executable))
        path.chmod(0o755)
    python = home / "tpubench-venv/bin/python"
    cache = os.environ["TPUBENCH_CACHE"]
    python.write_text(VM_PYTHON.format(python=sys.executable, buckets=str(buckets), cache=cache))
    python.chmod(0o755)
    return home


def _stand_in_vm_env(tmp_path, buckets) -> dict:
    """The gcloud double with its buckets and a stand-in VM home that really runs tpubench."""
    return _env(
        tmp_path,
        GCLOUD_DOUBLE_BUCKETS=str(buckets),
        GCLOUD_DOUBLE_SHELL_HOME=str(_vm_home(tmp_path, buckets)),
    )


def test_gce_study_run_trains_on_the_stand_in_vm_and_resumes(tmp_path):
    """Two real cells (one a parameter-server cluster on its VM): the launcher's commands, real
    tpubench runs, the records back, the report."""
    study = _file(tmp_path, "mine.yaml", MINE)
    cloud = _file(tmp_path, "cloud.yaml", CLOUD)
    buckets, r = tmp_path / "buckets", tmp_path / "r"
    env = _stand_in_vm_env(tmp_path, buckets)
    args = ("study", "run", study, "--scale=smoke", "--executor=gce", f"--cloud={cloud}")
    proc, _ = run_cli(*args, f"--results_dir={r}", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "  not runnable on gce: p · gpu (1 cell(s)): needs a machine for setup 'gpu'" in (
        proc.stdout
    )
    runs = yaml.safe_load((r / "launch/gce.yaml").read_text())["runs"]
    label, ps_label = runs[0]["label"], runs[1]["label"]
    # The parameter-server cell runs as a local cluster on its one VM, as it would here.
    assert {k: runs[1][k] for k in ("strategy", "one_machine", "workers", "ps")} == {
        "strategy": "parameter_server",
        "one_machine": True,
        "workers": 1,
        "ps": 1,
    }
    copied = {c["run_label"]: c for c in map(json.loads, (x.read_text() for x in r.glob("*.json")))}
    assert {k: c["status"] for k, c in copied.items()} == {label: "ok", ps_label: "ok"}
    assert copied[ps_label]["placement"]["strategy"] == "parameter_server"
    assert copied[ps_label]["cluster"]["strategy"] == "parameter_server"
    assert any("local-cluster --workers=1 --ps=1 --" in c for c in _calls(tmp_path, "gcloud"))
    flags = copied[label]["flags"]  # the cell's flags reached the "VM" as given
    assert (flags["machine"], flags["num_intra_threads"], flags["train_steps"]) == (
        ["gcp:n1-standard-1"],
        1,
        2,
    )
    assert copied[label]["cost"]["machines"][0]["usd_per_hour"] == 0.0475
    calls = _calls(tmp_path, "gcloud")
    assert calls[-1].startswith("compute instances delete tpubench-study-mine-")
    report = (r / "report/mine-smoke.md").read_text()
    assert "not runnable on gce: p · gpu (1 cell(s)): needs a machine for setup 'gpu'" in report
    assert re.search(r"report:\s+\S+/report/mine-smoke\.md", proc.stdout)  # folded at 100 columns

    # Again: the cell is recorded, so the launcher runs nothing and creates no VM.
    before = len(calls)
    proc, _ = run_cli(*args, f"--results_dir={r}", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 already recorded" in proc.stdout and "0 to run" in proc.stdout
    assert [c for c in _calls(tmp_path, "gcloud")[before:] if "instances create" in c] == []


@pytest.mark.parametrize(
    "args,expected",
    [
        (["--executor=gce"], "--executor=gce needs --cloud=FILE.yaml"),
        (
            ["--cloud={cloud}"],
            "--cloud={cloud} is for a renting executor (--executor=aws_batch, --executor=gce, "
            "--executor=gke, --executor=skypilot or --executor=tpu-vm); local cells run here",
        ),
        (["--executor=gcee"], "unknown --executor 'gcee' (did you mean gce"),
        (["--executor=gke", "--cloud={tmp}/none.yaml"], "cannot read --cloud file"),
        (["--executor=gce", "--cloud={bad}"], "--cloud={bad}: unknown cloud setting 'projct'"),
        (["--executor=gke", "--cloud={noimage}"], "--executor=gke needs image"),
        (["--executor=gce", "--cloud={badmachine}"], "machine 'gcp:n1-standard-8+1xgcp:v101'"),
    ],
)
def test_cloud_errors_are_one_line(tmp_path, args, expected):
    files = {
        "cloud": _file(tmp_path, "cloud.yaml", CLOUD),
        "bad": _file(tmp_path, "bad.yaml", CLOUD.replace("project:", "projct:")),
        "noimage": _file(tmp_path, "noimage.yaml", CLOUD.replace("image: img:1\n", "")),
        "badmachine": _file(tmp_path, "m.yaml", CLOUD.replace("xgcp:v100", "xgcp:v101")),
        "tmp": tmp_path,
    }
    args = [a.format(**files) for a in args]
    proc, _ = run_cli(
        "study", "run", "tpu_vs_gpu", "--scale=smoke", *args, "--dry-run",
        f"--results_dir={tmp_path / 'r'}", env=_env(tmp_path),
    )  # fmt: skip
    line = one_line_error(proc)
    assert proc.returncode == 2
    assert expected.format(**files) in line, line
    assert _calls(tmp_path, "gcloud") == []


def test_ctrl_c_reaches_the_launcher_which_deletes_the_vm(tmp_path):
    import subprocess

    study = _file(tmp_path, "mine.yaml", MINE)
    cloud = _file(tmp_path, "cloud.yaml", CLOUD)
    env = dict(os.environ, **_env(tmp_path, GCLOUD_DOUBLE_SLEEP="tpubench train"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tpubench", "study", "run", str(study), "--scale=smoke",
         "--executor=gce", f"--cloud={cloud}", f"--results_dir={tmp_path / 'r'}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    stderr = sigint_when(
        proc, lambda: any("tpubench train" in c for c in _calls(tmp_path, "gcloud")), timeout=90
    )
    assert proc.returncode == 130, stderr
    assert "its VMs were deleted" in stderr
    assert stderr.splitlines()[-1].startswith("tpubench study: error: interrupted; tpubench-launch")
    assert _calls(tmp_path, "gcloud")[-1].startswith(
        "compute instances delete tpubench-study-mine-"
    )
    assert not (tmp_path / "r/report").exists()  # nothing was measured; the rerun resumes


def test_a_cloud_cell_repeats_like_a_local_one_and_resumes_its_missing_repeat(tmp_path):
    """--scale=full with repeats: 2: two runs of the cell on the stand-in VM, each its own
    sweep entry recording the cell id; with one record gone, a rerun runs only that one."""
    study = _file(
        tmp_path,
        "twice.yaml",
        _without_ps(MINE)
        .replace("form:", "repeats: 2\nform:")
        .replace("      smoke:", "      full:"),
    )
    cloud = _file(tmp_path, "cloud.yaml", CLOUD)
    buckets, r = tmp_path / "buckets", tmp_path / "r"
    env = _stand_in_vm_env(tmp_path, buckets)
    args = ("study", "run", study, "--scale=full", "--executor=gce", f"--cloud={cloud}")
    proc, _ = run_cli(*args, "--dry-run", f"--results_dir={r}", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 to run (2 run(s): 2 per cell, for an interval)" in proc.stdout.splitlines()[0]
    runs = yaml.safe_load((r / "launch/gce.yaml").read_text())["runs"]
    cell = runs[0]["run_label"]
    assert [(x["label"], x["run_label"]) for x in runs] == [
        (f"{cell}.r1", cell),
        (f"{cell}.r2", cell),
    ]
    proc, _ = run_cli(*args, f"--results_dir={r}", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    copied = sorted(r.glob("*.json"))
    assert [json.loads(p.read_text())["run_label"] for p in copied] == [cell, cell]
    # The first repeat never happened: no record here or in the bucket, no model dir.
    first = next(
        p for p in copied if json.loads(p.read_text())["config"]["model_dir"].endswith(".r1")
    )
    for lost in (first, buckets / "bkt/tb/records" / first.name):
        lost.unlink()
    shutil.rmtree(buckets / "bkt/tb/model_dirs" / f"{cell}.r1")
    before = len([c for c in _calls(tmp_path, "gcloud") if "instances create" in c])
    proc, _ = run_cli(*args, f"--results_dir={r}", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 to run (1 run(s): 2 per cell, for an interval)" in proc.stdout
    assert "2 configuration(s), 1 already recorded" in proc.stdout
    creates = [c for c in _calls(tmp_path, "gcloud") if "instances create" in c]
    assert len(creates) == before + 1
    assert len(list(r.glob("*.json"))) == 2


ASYNC_PS = """
title: async
form: {kind: relative, part: p, baseline: two}
parts:
  - name: p
    models: [mnist_mlp]
    setups:
      - {label: two, device: gpu, devices: 2, batch_per_device: 8}
      - label: async
        {common}
        variables: cpu
      - label: async_gpu
        {common}
        variables: gpu
    scale:
      smoke: {seconds: 20, tiny: true, train_steps: 2}
""".replace(
    "{common}",
    "\n        ".join(
        ("device: gpu", "devices: 2", "batch_per_device: 8", "strategy: parameter_server")
    ),
)


@pytest.mark.parametrize("executor", ["gce", "skypilot"])
def test_a_gpu_parameter_server_cell_rents_one_machine_with_its_gpus(tmp_path, executor):
    """As the seeds ran it: the workers' GPUs and the parameter server on one machine."""
    study = _file(tmp_path, "async.yaml", ASYNC_PS)
    two = "gcp:n1-standard-16+2xgcp:v100"
    cloud = _file(
        tmp_path,
        "cloud.yaml",
        CLOUD + f"  two: {two}\n  async: {two}\n  async_gpu: {two}\n",
    )
    r = tmp_path / "r"
    proc, _ = run_cli(
        "study", "run", study, "--scale=smoke", f"--executor={executor}", f"--cloud={cloud}",
        "--dry-run", f"--results_dir={r}", env=_env(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if executor == "skypilot":  # no cluster on one machine there: says which executor runs one
        assert (
            "not runnable on skypilot: p · async, async_gpu (2 cell(s)): --executor=skypilot runs "
            "no clusters on one machine (one_machine: true), not parameter_server; --executor=gce "
            "does"
        ) in proc.stdout
        return
    assert (
        "not runnable on gce: p · async_gpu (1 cell(s)): needs 3 GPU(s) (one for the "
        f"parameter server); {two} has 2"
    ) in proc.stdout
    runs = yaml.safe_load((r / "launch/gce.yaml").read_text())["runs"]
    assert len(runs) == 2
    ps = runs[1]
    assert {k: ps.get(k) for k in ("machine", "strategy", "one_machine", "workers", "ps")} == {
        "machine": two,
        "strategy": "parameter_server",
        "one_machine": True,
        "workers": 2,
        "ps": 1,
    }
    assert (ps["gpus_per_worker"], ps["ps_device"], ps["flags"]["num_gpus"]) == (1, "cpu", 1)
    assert "strategy" not in ps["flags"]  # the launcher's local cluster sets it
    assert (
        "local-cluster --workers=2 --ps=1 --gpus-per-worker=1 --ps-device=cpu -- "
        "--model=mnist_mlp --machine=gcp:n1-standard-16+2xgcp:v100"
    ) in proc.stdout


def test_a_study_run_asks_the_launcher_once_before_it_launches(tmp_path, monkeypatch):
    """`study run --executor=gce --cloud=FILE`: one `tpubench-launch executors --json
    --check-cloud=FILE` answers what the executors host and what FILE may hold (issue 41)."""
    import io
    import subprocess

    from tpubench.study import api
    from tpubench.study.run import executors, remote

    cloud = str(_file(tmp_path, "cloud.yaml", CLOUD))
    asked, launched, real = [], [], subprocess.run

    def counting(argv, *args, **kwargs):
        if any("tpubench_launch" in str(a) for a in argv):
            asked.append([str(a) for a in argv])
        return real(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", counting)
    monkeypatch.setattr(remote, "launch", lambda path, *a, **k: launched.append(path) or 0)
    executors._ask.cache_clear()
    options = api.Options(scale="smoke", dry_run=True, executor="gce", cloud=cloud)
    options = dataclasses.replace(options, results_dir=str(tmp_path / "r"))
    api.check("run", ["cpu_vs_gpu"], options)
    study = api.load("cpu_vs_gpu", options, run=True)
    assert api.run(study, options, io.StringIO()) == 0
    assert len(launched) == 1
    (only,) = asked
    assert only[-4:] == [
        "executors", "--json", f"--check-cloud={cloud}", f"--prefix=--cloud={cloud}: "
    ]  # fmt: skip


V2 = CLOUD.replace("Cloud TPU: gcp:tpu-v5e-8", "Cloud TPU: gcp:tpu-v2-8")


@pytest.mark.parametrize(
    "executor,cloud_text,blocked",
    [
        (
            "gke",
            V2,
            "Cloud TPU (1 cell(s)): --executor=gke runs TPU v4, v5e, v5p, v6e slices, not "
            "gcp:tpu-v2-8; --executor=skypilot or --executor=tpu-vm does",
        ),
        # Without a machine for the TPU setup the study's own, the seed's v2-8, is rented.
        (
            "gke",
            V2.replace("  Cloud TPU: gcp:tpu-v2-8\n", ""),
            "Cloud TPU (1 cell(s)): --executor=gke runs TPU",
        ),
        (
            "skypilot",
            CLOUD.replace("gcp:tpu-v5e-8", "gcp:tpu-v4-32"),
            "Cloud TPU (1 cell(s)): --executor=skypilot runs single-host TPU slices, not "
            "gcp:tpu-v4-32 (4 hosts); --executor=tpu-vm does",
        ),
        ("tpu-vm", V2, None),
    ],
)
def test_the_plan_offers_only_the_tpu_slices_the_executor_declares(
    tmp_path, executor, cloud_text, blocked
):
    """A v2-8 on gke (no v2 node pools) or a pod on skypilot: listed with what it needs, so
    the launcher is never handed a sweep it would refuse whole (its dry run checks every
    configuration's plan: exit 0 here)."""
    cloud = _file(tmp_path, "cloud.yaml", cloud_text)
    r = tmp_path / "r"
    trust = ["--trust_code"] if executor == "gke" else []
    proc, _ = run_cli(
        "study", "run", "tpu_vs_gpu", "--scale=smoke", f"--executor={executor}",
        f"--cloud={cloud}", "--dry-run", f"--results_dir={r}", *trust, env=_env(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runs = yaml.safe_load((r / f"launch/{executor}.yaml").read_text())["runs"]
    tpu = [x for x in runs if x["machine"].startswith("gcp:tpu-")]
    if blocked is None:
        assert [x["machine"] for x in tpu] == ["gcp:tpu-v2-8"]
        assert any("--accelerator-type=v2-8 " in c for c in _dry_commands(proc.stdout))
        assert f"not runnable on {executor}: train · Cloud TPU" not in proc.stdout
        return
    assert tpu == []
    assert f"  not runnable on {executor}: train · {blocked}" in proc.stdout
