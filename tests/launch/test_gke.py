"""GKE manifests: `tpubench-launch gke --dry-run` output, parsed as Kubernetes YAML."""

import json
import subprocess
import sys

import yaml

LAUNCH = [sys.executable, "-m", "tpubench_launch.main", "gke"]


def _gke(*args):
    return subprocess.run([*LAUNCH, *args], capture_output=True, text=True, timeout=60)


def _docs(out):
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def test_multi_worker_gpu_jobs_carry_tf_config_and_services_resolve_them():
    out = _gke(
        "--name=rn50",
        "--image=us-docker.pkg.dev/p/r/tpubench:0.1",
        "--workers=2",
        "--engine=job",
        "--gpus=4",
        "--gpu-type=nvidia-tesla-v100",
        "--dry-run",
        "--",
        "--model=resnet50",
        "--results_dir=gs://bkt/runs",
    )
    docs = _docs(out)
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [
        ("Service", "rn50-worker-0"),
        ("Job", "rn50-worker-0"),
        ("Service", "rn50-worker-1"),
        ("Job", "rn50-worker-1"),
    ]
    services, jobs = docs[0::2], docs[1::2]
    for i, (svc, job) in enumerate(zip(services, jobs, strict=True)):
        assert svc["spec"]["clusterIP"] == "None"  # headless: the name is the pod's address
        pod_labels = job["spec"]["template"]["metadata"]["labels"]
        assert all(pod_labels[k] == v for k, v in svc["spec"]["selector"].items())
        assert svc["spec"]["ports"] == [{"name": "grpc", "port": 2222}]
        pod = job["spec"]["template"]["spec"]
        (c,) = pod["containers"]
        assert c["command"] == ["python3", "-I", "-m", "tpubench", "train"]
        assert c["args"] == [
            "--model=resnet50",
            "--results_dir=gs://bkt/runs",
            "--strategy=multi_worker",
            "--run_label=rn50",
            "--model_dir=gs://bkt/runs/rn50-model",
        ]
        tf_config = json.loads(next(e["value"] for e in c["env"] if e["name"] == "TF_CONFIG"))
        assert tf_config == {
            "cluster": {"worker": ["rn50-worker-0:2222", "rn50-worker-1:2222"]},
            "task": {"type": "worker", "index": i},
        }
        # Requests = limits (Guaranteed QoS): the GPUs and what one n1-standard-8 node holds.
        want = {"cpu": 7, "memory": "25Gi", "nvidia.com/gpu": 4}
        assert c["resources"] == {"requests": want, "limits": want}
        assert pod["nodeSelector"] == {"cloud.google.com/gke-accelerator": "nvidia-tesla-v100"}
        assert pod["restartPolicy"] == "Never" and job["spec"]["backoffLimit"] == 0


def test_parameter_server_roles():
    docs = _docs(
        _gke(
            "--name=ps",
            "--image=img",
            "--workers=2",
            "--ps=1",
            "--engine=job",
            "--dry-run",
            "--",
            "--results_dir=gs://b/r",
        )
    )
    jobs = [d for d in docs if d["kind"] == "Job"]
    assert [j["metadata"]["name"] for j in jobs] == [
        "ps-chief-0",
        "ps-worker-0",
        "ps-worker-1",
        "ps-ps-0",
    ]
    env = jobs[3]["spec"]["template"]["spec"]["containers"][0]["env"]
    tf_config = json.loads(env[0]["value"])
    assert tf_config["cluster"] == {
        "chief": ["ps-chief-0:2222"],
        "worker": ["ps-worker-0:2222", "ps-worker-1:2222"],
        "ps": ["ps-ps-0:2222"],
    }
    assert tf_config["task"] == {"type": "ps", "index": 0}


def test_tpu_slice_job_selects_the_node_pool():
    out = _gke(
        "--name=tpu",
        "--image=img",
        "--tpu=gcp:tpu-v5e-8",
        "--cluster=c1",
        "--zone=us-west4-a",
        "--dry-run",
        "--",
        "--results_dir=gs://b/r",
    )
    (job,) = _docs(out)
    pod = job["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
        "cloud.google.com/gke-tpu-topology": "2x4",
    }
    # A ct5lp-hightpu-8t host (224 vCPUs, 384 GiB) less GKE's reservations and its daemons.
    want = {"cpu": 222, "memory": "368Gi", "google.com/tpu": 8}
    assert pod["containers"][0]["resources"] == {"requests": want, "limits": want}
    assert "--tpu=local" in pod["containers"][0]["args"]
    assert out.stdout.splitlines()[0] == (
        "# TPU slice node pool: gcloud container node-pools create tpu-tpu --cluster=c1 "
        "--zone=us-west4-a --machine-type=ct5lp-hightpu-8t --tpu-topology=2x4 --num-nodes=1"
    )
    (job,) = _docs(
        _gke(
            "--name=v4",
            "--image=img",
            "--tpu=gcp:tpu-v4-8",
            "--dry-run",
            "--",
            "--results_dir=gs://b/r",
        )
    )
    selector = job["spec"]["template"]["spec"]["nodeSelector"]
    assert selector["cloud.google.com/gke-tpu-topology"] == "2x2x1"
    assert selector["cloud.google.com/gke-tpu-accelerator"] == "tpu-v4-podslice"


def test_gke_errors_are_one_line():
    out = _gke("--name=x", "--image=img", "--dry-run", "--", "--results_dir=runs")
    assert out.returncode == 2 and "pass --results_dir=gs://BUCKET/PATH" in out.stderr
    out = _gke(
        "--name=x",
        "--image=img",
        "--tpu=gcp:tpu-v5e-16",
        "--dry-run",
        "--",
        "--results_dir=gs://b/r",
    )
    assert (
        out.returncode == 2 and "spans 4 hosts" in out.stderr and "--executor=tpu-vm" in out.stderr
    )
    out = _gke("--name=Bad_Name", "--image=img", "--dry-run", "--", "--results_dir=gs://b/r")
    assert out.returncode == 2 and "--name='Bad_Name'" in out.stderr
    for o in (out,):
        assert o.stderr.count("\n") == 1
