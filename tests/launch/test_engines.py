"""`tpubench-launch gke --engine=jobset|tfjob|trainjob|job`: every rendered manifest passes the
strict offline checks (real CRD schemas, kubernetes-validate); bad combinations are one line."""

import json
import subprocess
import sys

import pytest
import yaml
from manifest_checks import check

LAUNCH = [sys.executable, "-m", "tpubench_launch.main", "gke"]
RESULTS = "--results_dir=gs://bkt/runs"
SHAPES = {
    "gpu-multi-worker": ["--workers=2", "--gpus=4", "--gpu-type=nvidia-tesla-v100"],
    "parameter-server": ["--workers=2", "--ps=1", "--gpus=1", "--gpu-type=nvidia-l4"],
    "cpu-multi-worker": ["--workers=3"],
    "single-host-tpu": ["--tpu=gcp:tpu-v5e-8"],
}


def _gke(*args):
    return subprocess.run([*LAUNCH, *args], capture_output=True, text=True, timeout=60)


def render(engine, shape, *extra, name="rn50"):
    out = _gke(
        f"--name={name}",
        "--image=us-docker.pkg.dev/p/r/tpubench:0.1",
        f"--engine={engine}",
        *SHAPES[shape],
        *extra,
        "--dry-run",
        "--",
        "--model=resnet50",
        RESULTS,
    )
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


ALL = (
    [(e, s) for e in ("jobset", "job") for s in SHAPES]
    + [("tfjob", s) for s in SHAPES if s != "single-host-tpu"]
    + [("trainjob", s) for s in ("gpu-multi-worker", "cpu-multi-worker")]
)
# One Kueue workload per run: plain Jobs only when the run is one task.
GANG = [(e, s) for e, s in ALL if e != "job" or s == "single-host-tpu"]


def _containers(doc):
    """Every container spec of a rendered JobSet, TrainingRuntime, TFJob or Job."""
    if doc["kind"] in ("JobSet", "TrainingRuntime"):
        spec = doc["spec"]["template"]["spec"] if doc["kind"] == "TrainingRuntime" else doc["spec"]
        pods = [r["template"]["spec"]["template"] for r in spec["replicatedJobs"]]
    elif doc["kind"] == "TFJob":
        pods = [r["template"] for r in doc["spec"]["tfReplicaSpecs"].values()]
    elif doc["kind"] == "Job":
        pods = [doc["spec"]["template"]]
    else:
        return []
    return [c for p in pods for c in p["spec"]["containers"]]


@pytest.mark.parametrize("engine,shape", GANG)
def test_manifests_pass_the_strict_offline_checks(engine, shape):
    docs = render(engine, shape, "--queue=team-a")
    for doc in docs:
        check(doc)
    for doc in docs:
        # Kueue reads the label on the workload object; a runtime is a template, no workload.
        if doc["kind"] not in ("Service", "TrainingRuntime"):
            assert doc["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"
        assert "suspend" not in json.dumps(doc)  # Kueue suspends and admits


@pytest.mark.parametrize("engine,shape", ALL)
def test_every_pod_requests_what_it_is_limited_to(engine, shape):
    """Guaranteed QoS: cores and memory (and devices) requested = limits, whole cores."""
    containers = [c for d in render(engine, shape) for c in _containers(d)]
    assert containers
    for c in containers:
        res = c["resources"]
        assert res["requests"] == res["limits"]
        assert isinstance(res["requests"]["cpu"], int) and res["requests"]["cpu"] >= 1
        assert res["requests"]["memory"].endswith("Gi")
        if shape == "single-host-tpu":
            assert res["limits"]["google.com/tpu"] == 8


def test_pod_size_follows_the_machine_type_or_the_flags():
    (js,) = render("jobset", "cpu-multi-worker", "--machine-type=n1-standard-16")
    (c,) = _containers(js)
    # 16 vCPUs, 60 GiB: GKE keeps 0.11 cores and 5.3 GiB, its own pods 0.5 and 1 more.
    assert c["resources"]["requests"] == {"cpu": 15, "memory": "53Gi"}
    (js,) = render("jobset", "cpu-multi-worker", "--cpus=3", "--memory=10")
    (c,) = _containers(js)
    assert c["resources"]["limits"] == {"cpu": 3, "memory": "10Gi"}


def test_one_kueue_workload_per_task_is_refused():
    out = _gke("--name=a", "--image=i", "--workers=2", "--engine=job", "--queue=q", "--dry-run",
               "--", RESULTS)  # fmt: skip
    assert out.returncode == 2
    (line,) = out.stderr.strip().splitlines()
    assert "--engine=job --queue=q with 2 tasks: Kueue admits each Job as its own workload" in line
    assert "use --engine=jobset or --engine=tfjob" in line


def test_the_checks_refuse_a_field_kubernetes_would_prune():
    (js,) = render("jobset", "cpu-multi-worker")
    pod = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["containers"][0]["envv"] = []
    with pytest.raises(AssertionError, match="envv"):
        check(js)
    (tj,) = render("tfjob", "parameter-server")
    tj["spec"]["runPolicy"]["cleanPodPolicyy"] = "All"
    with pytest.raises(AssertionError, match="cleanPodPolicyy"):
        check(tj)
    (tj,) = render("tfjob", "parameter-server")
    tj["spec"]["tfReplicaSpecs"]["Ps"] = tj["spec"]["tfReplicaSpecs"].pop("PS")
    with pytest.raises(AssertionError, match="replica types"):
        check(tj)


def test_jobset_wiring():
    (js,) = render("jobset", "parameter-server")
    spec = js["spec"]
    assert spec["successPolicy"] == {"operator": "All", "targetReplicatedJobs": ["chief"]}
    assert spec["failurePolicy"] == {"maxRestarts": 0}
    assert spec["ttlSecondsAfterFinished"] == 86400
    rjobs = {r["name"]: r for r in spec["replicatedJobs"]}
    assert list(rjobs) == ["chief", "worker", "ps"]
    for role, n in (("chief", 1), ("worker", 2), ("ps", 1)):
        job = rjobs[role]["template"]["spec"]
        assert (job["completionMode"], job["completions"], job["parallelism"]) == ("Indexed", n, n)
        assert job["backoffLimit"] == 0
        (c,) = job["template"]["spec"]["containers"]
        index, tf_config = c["env"]  # the index first: $(VAR) expands only from earlier ones
        assert index["name"] == "JOB_COMPLETION_INDEX"
        assert index["valueFrom"]["fieldRef"]["fieldPath"] == (
            "metadata.annotations['batch.kubernetes.io/job-completion-index']"
        )
        assert tf_config["name"] == "TF_CONFIG"
        assert f'"task":{{"type":"{role}","index":$(JOB_COMPLETION_INDEX)}}' in tf_config["value"]
        assert ("nvidia.com/gpu" in c["resources"]["limits"]) == (role != "ps")  # no GPU for ps
    cfg = json.loads(tf_config["value"].replace("$(JOB_COMPLETION_INDEX)", "0"))
    assert cfg["cluster"] == {
        "chief": ["rn50-chief-0-0.rn50:2222"],
        "worker": ["rn50-worker-0-0.rn50:2222", "rn50-worker-0-1.rn50:2222"],
        "ps": ["rn50-ps-0-0.rn50:2222"],
    }
    (mw,) = render("jobset", "gpu-multi-worker")
    (worker,) = mw["spec"]["replicatedJobs"]
    assert worker["template"]["spec"]["successPolicy"] == {"rules": [{"succeededIndexes": "0"}]}
    (tpu,) = render("jobset", "single-host-tpu")
    assert tpu["metadata"]["annotations"] == {
        "alpha.jobset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool"
    }
    pod = tpu["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["limits"]["google.com/tpu"] == 8
    assert "--tpu=local" in pod["containers"][0]["args"]


def test_tfjob_leaves_tf_config_to_the_operator():
    (tj,) = render("tfjob", "cpu-multi-worker")
    specs = tj["spec"]["tfReplicaSpecs"]
    assert list(specs) == ["Worker"] and specs["Worker"]["replicas"] == 3
    (c,) = specs["Worker"]["template"]["spec"]["containers"]
    assert c["name"] == "tensorflow" and "env" not in c
    assert c["ports"] == [{"containerPort": 2222, "name": "tfjob-port"}]
    assert "--strategy=multi_worker" in c["args"]
    (tj,) = render("tfjob", "parameter-server")
    assert list(tj["spec"]["tfReplicaSpecs"]) == ["Chief", "Worker", "PS"]
    assert tj["spec"]["runPolicy"] == {
        "cleanPodPolicy": "Running",
        "backoffLimit": 0,
        "ttlSecondsAfterFinished": 86400,
    }


def test_trainjob_brings_its_tensorflow_runtime():
    """Trainer v2 ships no TensorFlow runtime: the TrainJob comes with one, TF_CONFIG per pod."""
    runtime, job = render("trainjob", "gpu-multi-worker", "--queue=team-a")
    assert (runtime["kind"], job["kind"]) == ("TrainingRuntime", "TrainJob")
    assert job["spec"] == {
        "runtimeRef": {
            "apiGroup": "trainer.kubeflow.org",
            "kind": "TrainingRuntime",
            "name": "rn50-tensorflow",
        },
        "trainer": {"numNodes": 2},
    }
    assert runtime["metadata"]["name"] == "rn50-tensorflow"
    assert runtime["spec"]["mlPolicy"] == {"numNodes": 2}  # no torch/mpi/jax policy
    assert "kueue.x-k8s.io/queue-name" not in runtime["metadata"]["labels"]
    (node,) = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    job_spec = node["template"]["spec"]
    assert (job_spec["completionMode"], job_spec["completions"]) == ("Indexed", 2)
    (c,) = job_spec["template"]["spec"]["containers"]
    assert c["name"] == "node" and c["resources"]["limits"]["nvidia.com/gpu"] == 4
    index, tf_config = c["env"]
    assert index["name"] == "JOB_COMPLETION_INDEX"
    for i in (0, 1):
        cfg = json.loads(tf_config["value"].replace("$(JOB_COMPLETION_INDEX)", str(i)))
        assert cfg == {
            "cluster": {"worker": ["rn50-node-0-0.rn50:2222", "rn50-node-0-1.rn50:2222"]},
            "task": {"type": "worker", "index": i},
        }
    assert "--strategy=multi_worker" in c["args"]
    # the checks refuse a field the Trainer's CRD would prune
    job["spec"]["trainer"]["numNode"] = 2
    with pytest.raises(AssertionError, match="numNode"):
        check(job)


def test_engine_defaults():
    (js,) = render("jobset", "cpu-multi-worker")
    out = _gke("--name=a", "--image=i", "--workers=2", "--dry-run", "--", RESULTS)
    assert [d["kind"] for d in yaml.safe_load_all(out.stdout)] == ["JobSet"]
    out = _gke("--name=a", "--image=i", "--dry-run", "--", RESULTS)
    assert [d["kind"] for d in yaml.safe_load_all(out.stdout)] == ["Job"]


@pytest.mark.parametrize(
    "args,expect",
    [
        (["--engine=jobset", "--tpu=gcp:tpu-v5e-16"], "spans 4 hosts"),
        (["--engine=job", "--tpu=gcp:tpu-v4-32"], "Cloud TPU API"),
        (["--engine=tfjob", "--tpu=gcp:tpu-v5e-8"], "use --engine=jobset"),
        (["--workers=2", "--queue=Team_A"], "--queue='Team_A'"),
        (["--workers=2", "--queue=" + "q" * 64], "LocalQueue name"),
        (["--workers=2", "--gpus=1", "--gpu-type=nvidia-tesla-a10"], "did you mean"),
        (["--engine=tfjob", "--workers=2", "--max-restarts=2"], "needs --engine=jobset"),
        (["--engine=trainjob", "--tpu=gcp:tpu-v5e-8"], "use --engine=jobset (or job) for TPUs"),
        (["--engine=trainjob", "--workers=2", "--ps=1"], "a TrainJob drives one role"),
        (["--engine=kubeflow", "--workers=2"], "invalid choice: 'kubeflow'"),
        (["--workers=2", "--machine-type=z9-mega-8"], "'z9-mega-8': its vCPUs and memory"),
        (["--tpu=gcp:tpu-v5e-8", "--machine-type=n1-standard-8"], "sized from its slice's host"),
    ],
)
def test_bad_combinations_are_one_line_exit_2(args, expect):
    out = _gke("--name=x", "--image=img", *args, "--dry-run", "--", RESULTS)
    assert out.returncode == 2, out.stdout
    assert expect in out.stderr and out.stderr.count("\n") == 1, out.stderr
    assert "Traceback" not in out.stderr
