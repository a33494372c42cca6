"""JobSet manifests (jobset.x-k8s.io/v1alpha2): one JobSet per run, the default on GKE.

One replicatedJob per role (chief, worker, ps), each a single Indexed Job
with one pod per task; each pod's hostname and TF_CONFIG come from its
completion index (k8s/indexed.py).  Single-host TPU slices are one
replicatedJob with one pod, placed exclusively on one node pool.
"""

from __future__ import annotations

from tpubench_launch import engines, topology
from tpubench_launch.k8s import indexed, objects, sizing, tpu

API_VERSION = "jobset.x-k8s.io/v1alpha2"
EXCLUSIVE_TOPOLOGY = "alpha.jobset.sigs.k8s.io/exclusive-topology"


@engines.REGISTRY.register
class JobSet(engines.Engine):
    name = "jobset"
    resource = "jobsets"

    def check(self, r: engines.Request) -> None:
        pass  # every request, --max-restarts included

    def manifests(self, r: engines.Request) -> list[dict]:
        return tpu_manifests(r) if r.tpu else cluster_manifests(r)

    def pod_spec(self, doc: dict) -> dict:
        return doc["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]


def _replicated_job(name, role, pods, pod_template, extra_job_spec=None) -> dict:
    spec = {
        "completionMode": "Indexed",
        "completions": pods,
        "parallelism": pods,
        "backoffLimit": 0,
        **(extra_job_spec or {}),
        "template": pod_template,
    }
    return {
        "name": role,
        "replicas": 1,
        "template": {"metadata": {"labels": objects.labels(name, role)}, "spec": spec},
    }


def _jobset(name, replicated, target, queue, ttl, max_restarts, annotations=None, network=True):
    metadata = {"name": name, "labels": objects.labels(name, queue=queue)}
    if annotations:
        metadata["annotations"] = annotations
    spec = {}
    if network:
        spec["network"] = {"enableDNSHostnames": True, "publishNotReadyAddresses": True}
    spec["replicatedJobs"] = replicated
    spec["successPolicy"] = {"operator": "All", "targetReplicatedJobs": [target]}
    spec["failurePolicy"] = {"maxRestarts": max_restarts}
    spec["ttlSecondsAfterFinished"] = ttl
    return {"apiVersion": API_VERSION, "kind": "JobSet", "metadata": metadata, "spec": spec}


def _check_pod_names(name: str, roles: dict[str, int]) -> None:
    # JobSet's webhook checks the longest pod name plus the 5-character random suffix.
    objects.check_generated(
        [indexed.pod_hostname(name, r, n - 1) + "-abcde" for r, n in roles.items() if n], "pod name"
    )


def cluster_manifests(r: engines.Request) -> list[dict]:
    """One JobSet for a multi-worker or parameter-server run (or a single GPU/CPU task).

    Every pod is SIZE (requests = limits; default sizing.DEFAULT_MACHINE's).
    """
    name, image, workers, ps, size = r.name, r.image, r.workers, r.ps, r.size
    queue, ttl, max_restarts = r.queue, r.ttl, r.max_restarts
    objects.check_name(name)
    objects.check_queue(queue)
    results = objects.check_results(r.args)
    resources, selector = objects.gpu_placement(r.gpus, r.gpu_type)
    if workers == 1 and ps == 0:
        args = list(r.args) + [f"--run_label={r.run_label or name}"]
        c = objects.container(
            image, args, None, resources, port=False, subcommand=r.subcommand, size=size
        )
        pod = {"metadata": {"labels": objects.labels(name, "worker")}}
        pod["spec"] = objects.pod_spec([c], selector)
        rjob = _replicated_job(name, "worker", 1, pod)
        return [_jobset(name, [rjob], "worker", queue, ttl, max_restarts, network=False)]
    counts = {"chief": 1 if ps else 0, "worker": workers, "ps": ps}
    _check_pod_names(name, counts)
    tasks = [
        topology.Task(role, i, f"{indexed.pod_hostname(name, role, i)}.{name}:{objects.PORT}")
        for role, n in counts.items()
        for i in range(n)
    ]
    args = topology.train_args(tasks, list(r.args), name, results.rstrip("/") + f"/{name}-model")
    replicated = []
    for role, n in counts.items():
        if not n:
            continue
        tf_config = indexed.tf_config_template(tasks, role)
        env = [indexed.index_env(), {"name": "TF_CONFIG", "value": tf_config}]
        # Parameter servers hold variables on CPU: no GPUs for them.
        gpu = role != "ps"
        c = objects.container(image, args, env, resources if gpu else None, size=size)
        pod = {"metadata": {"labels": objects.labels(name, role)}}
        pod["spec"] = objects.pod_spec([c], selector if gpu else None)
        extra = None
        if role == "worker" and not ps:
            # Worker 0 is the chief: its success ends the Job (and so the JobSet).
            extra = {"successPolicy": {"rules": [{"succeededIndexes": "0"}]}}
        replicated.append(_replicated_job(name, role, n, pod, extra))
    target = "chief" if ps else "worker"
    return [_jobset(name, replicated, target, queue, ttl, max_restarts)]


def tpu_manifests(r: engines.Request) -> list[dict]:
    """One JobSet with one pod on a single-host TPU slice node pool, which it has alone.

    The pod runs `tpubench SUBCOMMAND`, its record labelled RUN_LABEL (default:
    NAME), and is SIZE (default: what one host of the slice holds).
    """
    name, queue = r.name, r.queue
    objects.check_name(name)
    objects.check_queue(queue)
    objects.check_results(r.args)
    s, selector = tpu.tpu_slice(r.tpu, r.tpu_topology)
    args = list(r.args) + ["--tpu=local", f"--run_label={r.run_label or name}"]
    chips = {"google.com/tpu": s.chips}
    size = r.size or sizing.size_for(tpu.tpu_host_type(s))
    c = objects.container(
        r.image, args, None, chips, port=False, subcommand=r.subcommand, size=size
    )
    pod = {"metadata": {"labels": objects.labels(name, "slice")}}
    pod["spec"] = objects.pod_spec([c], selector)
    rjob = _replicated_job(name, "slice", 1, pod)
    exclusive = {EXCLUSIVE_TOPOLOGY: "cloud.google.com/gke-nodepool"}
    return [_jobset(name, [rjob], "slice", queue, r.ttl, r.max_restarts, exclusive, network=False)]
