"""A rendered JobSet's (and TFJob's) pods, run as local processes with exactly the environment
their controllers would give them: the cluster forms and trains to one record.

pods.py works out each pod's hostname and env from the manifest as the JobSet
and Job controllers (or the Training Operator) would; here every TF_CONFIG is
first checked to name exactly the pods that exist, then the pods run with
their addresses mapped to localhost ports and the bucket to a directory.
"""

import json
import subprocess
import sys

import pods
import pytest
import yaml
from conftest import record_files
from manifest_checks import check

BUCKET = "gs://bkt/runs"
TRAIN = ["--train_steps=12", "--steps_per_loop=4", "--batch_size=32"]


def _render(engine, name, *shape):
    out = subprocess.run(
        [sys.executable, "-m", "tpubench_launch.main", "gke", f"--name={name}", "--image=img",
         f"--engine={engine}", *shape, "--dry-run", "--", f"--results_dir={BUCKET}", *TRAIN],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    (doc,) = [d for d in yaml.safe_load_all(out.stdout) if d]
    check(doc)
    return doc


def _check_wiring(all_pods):
    """Every TF_CONFIG lists exactly the pods there are, and names its own pod."""
    by_role = {}
    for p in all_pods:
        by_role.setdefault(p.role, []).append(f"{p.host}:2222")
    for p in all_pods:
        cfg = json.loads(p.env["TF_CONFIG"])
        assert cfg["cluster"] == by_role
        assert cfg["task"] == {"type": p.role, "index": p.index}
        assert cfg["cluster"][p.role][p.index] == f"{p.host}:2222"


def _train(all_pods, tmp_path, name, trainers):
    results = tmp_path / "runs"
    local = pods.localize(all_pods, 2222, BUCKET, str(results))
    codes = pods.run(local, trainers, str(tmp_path / "logs"), timeout=240)
    logs = {f.name: f.read_text()[-3000:] for f in (tmp_path / "logs").iterdir()}
    assert all(codes[i] == 0 for i in trainers), (codes, logs)
    (path,) = record_files(results)  # one record, from the chief
    rec = json.loads(path.read_text())
    assert rec["status"] == "ok" and rec["run_label"] == name
    assert rec["results"]["final_step"] == 12
    assert (results / f"{name}-model").is_dir()  # the one shared model_dir
    return rec


def test_jobset_two_workers_train_to_a_record(tmp_path):
    doc = _render("jobset", "mw", "--workers=2")
    all_pods = pods.jobset_pods(doc)
    assert [p.host for p in all_pods] == ["mw-worker-0-0.mw", "mw-worker-0-1.mw"]
    _check_wiring(all_pods)
    rec = _train(all_pods, tmp_path, "mw", trainers=[0, 1])
    assert rec["placement"]["strategy"] == "multi_worker"
    assert rec["placement"]["num_replicas"] == 2


@pytest.mark.slow
def test_jobset_parameter_server_trains_to_a_record(tmp_path):
    doc = _render("jobset", "ps", "--workers=2", "--ps=1")
    all_pods = pods.jobset_pods(doc)
    assert [p.host for p in all_pods] == [
        "ps-chief-0-0.ps", "ps-worker-0-0.ps", "ps-worker-0-1.ps", "ps-ps-0-0.ps"
    ]  # fmt: skip
    _check_wiring(all_pods)
    rec = _train(all_pods, tmp_path, "ps", trainers=[0])
    assert rec["placement"]["strategy"] == "parameter_server"
    assert rec["placement"]["num_workers"] == 2


def test_tfjob_two_workers_train_with_the_operators_tf_config(tmp_path):
    doc = _render("tfjob", "tj", "--workers=2")
    all_pods = pods.tfjob_pods(doc)
    assert [p.host for p in all_pods] == ["tj-worker-0.default.svc", "tj-worker-1.default.svc"]
    _check_wiring(all_pods)
    assert json.loads(all_pods[0].env["TF_CONFIG"])["environment"] == "cloud"
    rec = _train(all_pods, tmp_path, "tj", trainers=[0, 1])
    assert rec["placement"]["num_replicas"] == 2


@pytest.mark.slow
def test_tfjob_parameter_server_trains(tmp_path):
    doc = _render("tfjob", "tp", "--workers=2", "--ps=1")
    all_pods = pods.tfjob_pods(doc)
    assert [p.role for p in all_pods] == ["chief", "worker", "worker", "ps"]
    _check_wiring(all_pods)
    rec = _train(all_pods, tmp_path, "tp", trainers=[0])
    assert rec["placement"]["strategy"] == "parameter_server"
