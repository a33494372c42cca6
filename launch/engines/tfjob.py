"""Kubeflow TFJob manifests (kubeflow.org/v1, Training Operator 1.x): legacy upstream.

Kubeflow maintains the Training Operator and its TFJob but no longer
develops them; Trainer v2's TrainJob replaces them (engines/trainjob.py).

`tfReplicaSpecs` has a Worker set (worker 0 is the chief) or, with
parameter servers, Chief, Worker and PS.  The operator writes each pod's
TF_CONFIG itself, and only into the container named `tensorflow`; its
addresses come from the operator's per-pod Services
(`NAME-ROLE-I.NAMESPACE.svc:PORT`, the port the container names
`tfjob-port`) and it adds `"environment": "cloud"`, which tpubench reads as
it comes.  TPUs are not a TFJob concept here: use the jobset engine.
"""

from __future__ import annotations

from tpubench_launch import engines, errors, topology
from tpubench_launch.k8s import objects

API_VERSION = "kubeflow.org/v1"
CONTAINER = "tensorflow"  # the operator sets TF_CONFIG in this container only
PORT_NAME = "tfjob-port"
ROLES = {"chief": "Chief", "worker": "Worker", "ps": "PS"}  # tpubench role -> replica type


def refuse_tpu(machine: str) -> errors.UsageError:
    return errors.UsageError(
        f"--engine=tfjob --tpu={machine}: the Training Operator gives TensorFlow a TF_CONFIG, "
        "not a TPU slice; use --engine=jobset (or job) for TPUs"
    )


@engines.REGISTRY.register
class TFJob(engines.Engine):
    name = "tfjob"
    resource = "tfjobs"

    def check(self, r: engines.Request) -> None:
        super().check(r)
        if r.tpu:
            raise refuse_tpu(r.tpu)

    def manifests(self, r: engines.Request) -> list[dict]:
        return manifests(r)

    def pod_spec(self, doc: dict) -> dict:
        return next(iter(doc["spec"]["tfReplicaSpecs"].values()))["template"]["spec"]


def manifests(r: engines.Request) -> list[dict]:
    """One TFJob for a multi-worker or parameter-server run; every pod SIZE (requests = limits)."""
    name, workers, ps, args, size = r.name, r.workers, r.ps, r.args, r.size
    objects.check_name(name)
    objects.check_queue(r.queue)
    results = objects.check_results(args)
    resources, selector = objects.gpu_placement(r.gpus, r.gpu_type)
    counts = {"chief": 1 if ps else 0, "worker": workers, "ps": ps}
    objects.check_generated(
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
        c = objects.container(
            r.image,
            args,
            None,
            resources if gpu else None,
            name=CONTAINER,
            port_name=PORT_NAME,
            size=size,
        )
        template = {"metadata": {"labels": objects.labels(name, role)}}
        template["spec"] = objects.pod_spec([c], selector if gpu else None)
        specs[ROLES[role]] = {"replicas": n, "restartPolicy": "Never", "template": template}
    run_policy = {"cleanPodPolicy": "Running", "backoffLimit": 0, "ttlSecondsAfterFinished": r.ttl}
    return [
        {
            "apiVersion": API_VERSION,
            "kind": "TFJob",
            "metadata": {"name": name, "labels": objects.labels(name, queue=r.queue)},
            "spec": {"runPolicy": run_policy, "tfReplicaSpecs": specs},
        }
    ]
