"""Smoke layer (tests/smoke.py): study, data and every tpubench-launch verb, executor and engine.

The clouds and clusters are out of reach: the gce, tpu-vm and gke executors
run their real code against the gcloud and kubectl TEST DOUBLES in
tests/launch/bin (which record each call and touch no cloud), and SkyPilot
is previewed with --dry-run (its commands are checked in tests/launch).
"""

from __future__ import annotations

import json
import os
import shlex

import pytest
import yaml
from smoke import LAUNCH_DOUBLES, covers, ok, records, run

STUDY = """
title: One vCPU or two on mnist_mlp
form: {kind: relative, baseline: 1 vCPU}
parts:
  - name: train
    models: [mnist_mlp]
    data: [synthetic]
    setups:
      - {label: 1 vCPU, vcpus: 1}
      - {label: 2 vCPU, vcpus: 2}
    scale:
      smoke: {tiny: true, train_steps: 4, seconds: 15}
findings:
  - text: 2 vCPUs beat 1
    check: {kind: ratio, part: train, a: 2 vCPU, b: 1 vCPU, band: at least 1.1x}
"""


@covers("tpubench study", "tpubench study list")
def test_study_list(tmp_path):
    out = ok(run("tpubench", "study", "list", cwd=tmp_path))
    for name in ("cnn_scaling", "cpu_vs_gpu", "gpu_host_sizing", "strategies", "tpu_vs_gpu"):
        assert any(line.startswith(name) for line in out.splitlines()), name
    assert "study files: " in out


@covers("tpubench study run", "tpubench study report")
def test_study_run_then_report_a_users_study(tmp_path):
    (tmp_path / "mine.yaml").write_text(STUDY)
    out = ok(
        run(
            "tpubench",
            "study",
            "run",
            "mine.yaml",
            "--scale=smoke",
            "--results_dir=st",
            cwd=tmp_path,
        )
    )
    assert "mine: One vCPU or two on mnist_mlp" in out  # the report, drawn as tables
    assert "# mine" not in out and "Reruns: ." not in out  # not raw Markdown; no empty source
    assert "2 cell(s) at --scale=smoke: 2 measured" in out
    shown = " ".join(out.split())  # the report drawn as tables, folded at 100 columns
    assert "2 vCPUs beat 1 (band: at least 1.1x) — 2 vCPU " in shown
    assert "not judged (smoke scale)" in shown  # a smoke run is no evidence for a finding
    cells = records(tmp_path / "st")
    assert len(cells) == 2 and all(r["status"] == "ok" for r in cells)
    assert sorted(r["hardware"]["cpu"]["affinity_cores"] for r in cells) == [1, 2]
    report = tmp_path / "st" / "report" / "mine-smoke.md"
    assert "| 1 vCPU |" in report.read_text() and "| 2 vCPU |" in report.read_text()
    # `report` rebuilds the same report from the records, running nothing.
    again = ok(
        run(
            "tpubench",
            "study",
            "report",
            "mine.yaml",
            "--scale=smoke",
            "--results_dir=st",
            cwd=tmp_path,
        )
    )
    assert "2 cell(s) at --scale=smoke: 2 measured" in again
    assert len(records(tmp_path / "st")) == 2


@covers("tpubench data", "tpubench data list", "tpubench data prepare")
@covers("tpubench data check", "tpubench data bench")
def test_data_list_prepare_check_bench(tmp_path):
    out = ok(run("tpubench", "data", "list", cwd=tmp_path))
    assert any(line.startswith("digits") for line in out.splitlines())
    out = ok(
        run(
            "tpubench",
            "data",
            "prepare",
            "--dataset=digits",
            "--output=dg",
            "--num_shards=2",
            cwd=tmp_path,
        )
    )
    assert "1,437 examples" in out and "fingerprint sha256:" in out
    manifest = json.loads((tmp_path / "dg" / "manifest.json").read_text())
    assert manifest["splits"]["train"]["examples"] == 1437
    out = ok(run("tpubench", "data", "check", "--data_dir=dg", cwd=tmp_path))
    assert "all shards read cleanly" in out
    out = ok(
        run(
            "tpubench",
            "data",
            "bench",
            "--data_dir=dg",
            "--model=mnist_mlp",
            "--batches=10",
            cwd=tmp_path,
        )
    )
    assert "input pipeline of 'mnist_mlp' over dg" in out and "examples/s" in out


# ------------------------------------------------------------------ launcher
def _doubles(tmp_path) -> dict:
    return {
        "PATH": f"{LAUNCH_DOUBLES}:{os.environ['PATH']}",
        "GCLOUD_DOUBLE_LOG": str(tmp_path / "gcloud.jsonl"),
        "KUBECTL_DOUBLE_LOG": str(tmp_path / "kubectl.jsonl"),
    }


def _calls(tmp_path, tool) -> list[str]:
    path = tmp_path / f"{tool}.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [shlex.join([tool, *json.loads(x)]) for x in lines]


@covers("tpubench-launch local-cluster")
def test_local_cluster_trains_on_two_workers(tmp_path):
    out = ok(
        run(
            "tpubench-launch",
            "local-cluster",
            "--workers=2",
            "--",
            "--model=mnist_mlp",
            "--tiny",
            "--train_steps=4",
            "--batch_size=16",
            "--results_dir=runs",
            cwd=tmp_path,
            timeout=240,
        )
    )
    (rec,) = records(tmp_path / "runs")  # the chief's record
    assert rec["status"] == "ok" and rec["placement"]["num_workers"] == 2
    assert rec["placement"]["strategy"] == "multi_worker"
    assert "record: " in out or "runs/" in out


SWEEP = """
name: sm
grid:
  machines: [MACHINE]
flags: {model: mnist_mlp, tiny: true, train_steps: 4, batch_size: 16}
estimate: {seconds: 30}
"""
CLOUD = {
    "local": "",
    "gce": "cloud: {project: proj-42, zone: us-central1-a, bucket: gs://bkt/tb}",
    "tpu-vm": "cloud: {project: proj-42, zone: us-central2-b, bucket: gs://bkt/tb}",
    "gke": 'cloud: {bucket: gs://bkt/tb, image: "img:1"}',
    "skypilot": "cloud: {bucket: gs://bkt/tb}",
    "aws_batch": "cloud: {bucket: s3://bkt/tb, job_queue: q1, job_definition: tb}",
}


def _sweep(tmp_path, executor: str) -> str:
    machine = "gcp:tpu-v5e-8" if executor == "tpu-vm" else "gcp:n1-standard-8"
    machine = "aws:c5.xlarge" if executor == "aws_batch" else machine
    (tmp_path / "s.yaml").write_text(SWEEP.replace("MACHINE", machine) + CLOUD[executor])
    return "s.yaml"


@covers("tpubench-launch executors")
def test_executors_lists_every_executor_and_what_it_hosts(tmp_path):
    listed = json.loads(ok(run("tpubench-launch", "executors", "--json", cwd=tmp_path)))
    assert {"local", "gce", "tpu-vm", "gke", "skypilot"} <= {e["name"] for e in listed}
    lines = ok(run("tpubench-launch", "executors", cwd=tmp_path)).splitlines()
    assert any(x.startswith("gce: cpu, gpu; clusters: multi_worker") for x in lines), lines


@covers("tpubench-launch sweep", "tpubench-launch sweep --executor=local")
def test_sweep_local_dry_run_then_run(tmp_path):
    _sweep(tmp_path, "local")
    dry = ok(run("tpubench-launch", "sweep", "s.yaml", "--dry-run", cwd=tmp_path))
    assert "dry run" in dry and "gcp:n1-standard-8" in dry
    assert not (tmp_path / "runs").exists()  # a dry run writes nothing
    ok(run("tpubench-launch", "sweep", "s.yaml", cwd=tmp_path, timeout=240))
    (rec,) = records(tmp_path / "runs" / "sweeps" / "sm")
    assert rec["status"] == "ok" and rec["config"]["train_steps"] == 4


@pytest.mark.parametrize(
    ("executor", "first", "last"),
    [
        ("gce", "gcloud compute instances create", "gcloud compute instances delete"),
        ("tpu-vm", "gcloud compute tpus tpu-vm create", "gcloud compute tpus tpu-vm delete"),
        ("gke", "kubectl apply -f", "kubectl delete -f"),
    ],
)
def test_sweep_cloud_executor_against_the_test_doubles(executor, first, last, tmp_path):
    _sweep(tmp_path, executor)
    out = ok(
        run(
            "tpubench-launch",
            "sweep",
            "s.yaml",
            f"--executor={executor}",
            *(["--trust-code"] if executor == "gke" else []),  # cloud.image: the pods' code
            cwd=tmp_path,
            env=_doubles(tmp_path),
        )
    )
    calls = _calls(tmp_path, "kubectl" if executor == "gke" else "gcloud")
    assert calls and calls[1 if executor != "gke" else 0].startswith(first), calls
    assert calls[-1].startswith(last), calls  # what it created is deleted
    assert "done" in out


for _e in ("gce", "tpu-vm", "gke"):
    covers(f"tpubench-launch sweep --executor={_e}")(
        test_sweep_cloud_executor_against_the_test_doubles
    )


@covers("tpubench-launch sweep --executor=aws_batch")
def test_sweep_aws_batch_against_the_aws_test_double(tmp_path):
    _sweep(tmp_path, "aws_batch")
    env = {
        "PATH": f"{LAUNCH_DOUBLES}:{os.environ['PATH']}",
        "AWS_DOUBLE_LOG": str(tmp_path / "aws.jsonl"),
        "AWS_DOUBLE_STATE": str(tmp_path / "batch"),
        "AWS_DOUBLE_BUCKETS": str(tmp_path / "buckets"),
        "AWS_DOUBLE_STATUS": "SUCCEEDED",  # the job is not run here (tests/launch runs one)
    }
    argv = ("tpubench-launch", "sweep", "s.yaml", "--executor=aws_batch", "--trust-code")
    out = ok(run(*argv, cwd=tmp_path, env=env))  # job_definition: the jobs' code
    calls = _calls(tmp_path, "aws")
    assert calls[1].startswith("aws batch submit-job --job-name=tpubench-sm-"), calls
    assert calls[-1] == "aws s3 sync --only-show-errors s3://bkt/tb/records runs/sweeps/sm"
    assert "done" in out


@covers("tpubench-launch sweep --executor=skypilot")
def test_sweep_skypilot_dry_run(tmp_path):
    _sweep(tmp_path, "skypilot")
    out = ok(
        run("tpubench-launch", "sweep", "s.yaml", "--executor=skypilot", "--dry-run", cwd=tmp_path)
    )
    assert any(x.startswith("sky jobs launch --yes") for x in out.splitlines())
    shown = out.split("# task file ")[1].split("\nsky jobs launch")[0].splitlines()[1:]
    task = yaml.safe_load("\n".join(x.removeprefix("# ") for x in shown))
    assert task["resources"]["instance_type"] == "n1-standard-8"
    assert "-m tpubench train --model=mnist_mlp" in task["run"]


@pytest.mark.parametrize(
    ("engine", "kinds"),
    [
        ("job", ["Service", "Job", "Service", "Job"]),
        ("jobset", ["JobSet"]),
        ("tfjob", ["TFJob"]),
        ("trainjob", ["TrainingRuntime", "TrainJob"]),
    ],
)
def test_gke_engine_dry_run(engine, kinds, tmp_path):
    out = ok(
        run(
            "tpubench-launch",
            "gke",
            "--name=sm",
            "--image=img:1",
            "--workers=2",
            f"--engine={engine}",
            "--dry-run",
            "--",
            "--model=mnist_mlp",
            "--results_dir=gs://bkt/runs",
            cwd=tmp_path,
        )
    )
    docs = [d for d in yaml.safe_load_all(out) if d]
    assert [d["kind"] for d in docs] == kinds
    assert "--model=mnist_mlp" in json.dumps(docs)


covers("tpubench-launch gke")(test_gke_engine_dry_run)
for _g in ("job", "jobset", "tfjob", "trainjob"):
    covers(f"tpubench-launch gke --engine={_g}")(test_gke_engine_dry_run)
