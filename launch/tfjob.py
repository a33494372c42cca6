"""Kubeflow TFJob manifests (kubeflow.org/v1, Training Operator 1.x).

`tfReplicaSpecs` has a Worker set (worker 0 is the chief) or, with
parameter servers, Chief, Worker and PS.  The operator writes each pod's
TF_CONFIG itself, and only into the container named `tensorflow`; its
addresses come from the operator's per-pod Services
(`NAME-ROLE-I.NAMESPACE.svc:PORT`, the port the container names
`tfjob-port`) and it adds `"environment": "cloud"`, which tpubench reads as
it comes.  TPUs are not a TFJob concept here: use the jobset engine.
"""

from __future__ import annotations

from tpubench_launch import errors, k8s, topology

API_VERSION = "kubeflow.org/v1"
CONTAINER = "tensorflow"  # the operator sets TF_CONFIG in this container only
PORT_NAME = "tfjob-port"
ROLES = {"chief": "Chief", "worker": "Worker", "ps": "PS"}  # tpubench role -> replica type
DEFAULT_TTL = 86400


def refuse_tpu(machine: str) -> errors.UsageError:
    return errors.UsageError(
        f"--engine=tfjob --tpu={machine}: the Training Operator gives TensorFlow a TF_CONFIG, "
        "not a TPU slice; use --engine=jobset (or job) for TPUs"
    )


def manifests(
    name, image, workers, ps, gpus, gpu_type, args, queue=None, ttl=DEFAULT_TTL, size=None
) -> list[dict]:
    """One TFJob for a multi-worker or parameter-server run; every pod SIZE (requests = limits)."""
    k8s.check_name(name)
    k8s.check_queue(queue)
    results = k8s.check_results(args)
    resources, selector = k8s.gpu_placement(gpus, gpu_type)
    counts = {"chief": 1 if ps else 0, "worker": workers, "ps": ps}
    k8s.check_generated(
        [f"{name}-{r}-{n - 1}" for r, n in counts.items() if n], "TFJob pod/service name"
    )
    # Only the roles matter to train_args (the strategy); the operator owns the addresses.
    tasks = [topology.Task(r, i, "") for r, n in counts.items() for i in range(n)]
    if len(tasks) > 1:
        args = topology.train_args(tasks, list(args), name, results.rstrip("/") + f"/{name}-model")
    else:
        args = list(args) + [f"--run_label={name}"]
    specs = {}
    for role, n in counts.items():
        if not n:
            continue
        gpu = role != "ps"  # parameter servers hold variables on CPU
        c = k8s.container(
            image,
            args,
            None,
            resources if gpu else None,
            name=CONTAINER,
            port_name=PORT_NAME,
            size=size,
        )
        template = {"metadata": {"labels": k8s.labels(name, role)}}
        template["spec"] = k8s.pod_spec([c], selector if gpu else None)
        specs[ROLES[role]] = {"replicas": n, "restartPolicy": "Never", "template": template}
    run_policy = {"cleanPodPolicy": "Running", "backoffLimit": 0, "ttlSecondsAfterFinished": ttl}
    return [
        {
            "apiVersion": API_VERSION,
            "kind": "TFJob",
            "metadata": {"name": name, "labels": k8s.labels(name, queue=queue)},
            "spec": {"runPolicy": run_policy, "tfReplicaSpecs": specs},
        }
    ]
