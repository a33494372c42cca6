"""JobSet manifests (jobset.x-k8s.io/v1alpha2): one JobSet per run, the default on GKE.

One replicatedJob per role (chief, worker, ps), each a single Indexed Job
with one pod per task.  JobSet's own headless service names every pod
`NAME-ROLE-0-I.NAME`, so each pod's TF_CONFIG is the same cluster list plus
its task index, which Kubernetes fills in from the Job completion index:
`$(JOB_COMPLETION_INDEX)` expands only from a variable defined earlier in
the list, so the pod defines it first (the same downward-API field the Job
controller would otherwise append last).  Single-host TPU slices are one
replicatedJob with one pod, placed exclusively on one node pool.
"""

from __future__ import annotations

import json

from tpubench_launch import gke, k8s, topology

API_VERSION = "jobset.x-k8s.io/v1alpha2"
EXCLUSIVE_TOPOLOGY = "alpha.jobset.sigs.k8s.io/exclusive-topology"
COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
INDEX_VAR = "JOB_COMPLETION_INDEX"
DEFAULT_TTL = 86400  # seconds a finished JobSet's pods (and their logs) are kept


def pod_hostname(name: str, role: str, pod_index: int, job_index: int = 0) -> str:
    """The hostname JobSet gives a pod: <jobset>-<replicatedJob>-<jobIndex>-<podIndex>."""
    return f"{name}-{role}-{job_index}-{pod_index}"


def _index_env() -> dict:
    path = f"metadata.annotations['{COMPLETION_INDEX_ANNOTATION}']"
    return {"name": INDEX_VAR, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def tf_config_template(tasks: list[topology.Task], role: str) -> str:
    """TF_CONFIG for every pod of ROLE, its index left to Kubernetes' $(VAR) expansion."""
    marker = -7  # an index no task has; replaced by the variable reference
    text = json.dumps(
        {"cluster": topology.cluster_spec(tasks), "task": {"type": role, "index": marker}},
        separators=(",", ":"),
    )
    return text.replace(f'"index":{marker}', f'"index":$({INDEX_VAR})')


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
        "template": {"metadata": {"labels": k8s.labels(name, role)}, "spec": spec},
    }


def _jobset(name, replicated, target, queue, ttl, max_restarts, annotations=None, network=True):
    metadata = {"name": name, "labels": k8s.labels(name, queue=queue)}
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
    k8s.check_generated(
        [pod_hostname(name, r, n - 1) + "-abcde" for r, n in roles.items() if n], "pod name"
    )


def cluster_manifests(
    name,
    image,
    workers,
    ps,
    gpus,
    gpu_type,
    args,
    queue=None,
    ttl=DEFAULT_TTL,
    max_restarts=0,
    size=None,
) -> list[dict]:
    """One JobSet for a multi-worker or parameter-server run (or a single GPU/CPU task).

    Every pod is SIZE (requests = limits; default k8s.DEFAULT_MACHINE's).
    """
    k8s.check_name(name)
    k8s.check_queue(queue)
    results = k8s.check_results(args)
    resources, selector = k8s.gpu_placement(gpus, gpu_type)
    if workers == 1 and ps == 0:
        c = k8s.container(
            image, list(args) + [f"--run_label={name}"], None, resources, port=False, size=size
        )
        pod = {"metadata": {"labels": k8s.labels(name, "worker")}}
        pod["spec"] = k8s.pod_spec([c], selector)
        rjob = _replicated_job(name, "worker", 1, pod)
        return [_jobset(name, [rjob], "worker", queue, ttl, max_restarts, network=False)]
    counts = {"chief": 1 if ps else 0, "worker": workers, "ps": ps}
    _check_pod_names(name, counts)
    tasks = [
        topology.Task(role, i, f"{pod_hostname(name, role, i)}.{name}:{k8s.PORT}")
        for role, n in counts.items()
        for i in range(n)
    ]
    args = topology.train_args(tasks, list(args), name, results.rstrip("/") + f"/{name}-model")
    replicated = []
    for role, n in counts.items():
        if not n:
            continue
        env = [_index_env(), {"name": "TF_CONFIG", "value": tf_config_template(tasks, role)}]
        # Parameter servers hold variables on CPU: no GPUs for them.
        gpu = role != "ps"
        c = k8s.container(image, args, env, resources if gpu else None, size=size)
        pod = {"metadata": {"labels": k8s.labels(name, role)}}
        pod["spec"] = k8s.pod_spec([c], selector if gpu else None)
        extra = None
        if role == "worker" and not ps:
            # Worker 0 is the chief: its success ends the Job (and so the JobSet).
            extra = {"successPolicy": {"rules": [{"succeededIndexes": "0"}]}}
        replicated.append(_replicated_job(name, role, n, pod, extra))
    target = "chief" if ps else "worker"
    return [_jobset(name, replicated, target, queue, ttl, max_restarts)]


def tpu_manifests(
    name,
    image,
    machine,
    topology_label,
    args,
    queue=None,
    ttl=DEFAULT_TTL,
    max_restarts=0,
    run_label=None,
    subcommand="train",
    size=None,
) -> list[dict]:
    """One JobSet with one pod on a single-host TPU slice node pool, which it has alone.

    The pod runs `tpubench SUBCOMMAND`, its record labelled RUN_LABEL (default:
    NAME), and is SIZE (default: what one host of the slice holds).
    """
    k8s.check_name(name)
    k8s.check_queue(queue)
    k8s.check_results(args)
    s, selector = gke.tpu_slice(machine, topology_label)
    args = list(args) + ["--tpu=local", f"--run_label={run_label or name}"]
    chips = {"google.com/tpu": s.chips}
    size = size or k8s.size_for(gke.tpu_host_type(s))
    c = k8s.container(image, args, None, chips, port=False, subcommand=subcommand, size=size)
    pod = {"metadata": {"labels": k8s.labels(name, "slice")}}
    pod["spec"] = k8s.pod_spec([c], selector)
    rjob = _replicated_job(name, "slice", 1, pod)
    exclusive = {EXCLUSIVE_TOPOLOGY: "cloud.google.com/gke-nodepool"}
    return [_jobset(name, [rjob], "slice", queue, ttl, max_restarts, exclusive, network=False)]
