"""Kubeflow Trainer v2 manifests (trainer.kubeflow.org/v1alpha1): a TrainJob and its runtime.

Trainer v2's TrainJob replaces the framework-specific jobs (TFJob and the
rest, which Kubeflow maintains but no longer develops), and it ships runtimes
for PyTorch, JAX, MPI and XGBoost but none for TensorFlow.  So a run here is
two objects, applied together:

- a namespaced TrainingRuntime, `NAME-tensorflow`, whose template is a
  JobSet spec: one replicatedJob `node` (the step a TrainJob's `trainer`
  drives, so labelled `trainjob-ancestor-step: trainer`), an Indexed Job
  with one pod per worker and a container named `node`.  Trainer names the
  JobSet after the TrainJob, so each pod is `NAME-node-0-I.NAME`, and its
  TF_CONFIG is written here the way the jobset engine writes it: the same
  cluster list in every pod, the task index filled in by Kubernetes from the
  Job completion index.  Its `mlPolicy` gives only `numNodes`: none of the
  framework policies (torch, mpi, jax, ...) fits TensorFlow.
- the TrainJob, `NAME`, pointing at that runtime with `numNodes` workers,
  carrying the Kueue queue label (Kueue admits the TrainJob as one workload).

Workers only (MultiWorkerMirrored; worker 0 is the chief): a TrainJob drives
one role, so parameter servers and TPU slices go to the jobset engine.
"""

from __future__ import annotations

from tpubench_launch import engines, errors, topology
from tpubench_launch.k8s import indexed, objects

API_VERSION = "trainer.kubeflow.org/v1alpha1"
GROUP = "trainer.kubeflow.org"
NODE = "node"  # the replicatedJob and the container a TrainJob's trainer drives
ANCESTOR = {f"{GROUP}/trainjob-ancestor-step": "trainer"}


@engines.REGISTRY.register
class TrainJob(engines.Engine):
    name = "trainjob"
    resource = "trainjobs"

    def check(self, r: engines.Request) -> None:
        super().check(r)
        if r.tpu:
            raise errors.UsageError(
                f"--engine=trainjob --tpu={r.tpu}: this TensorFlow runtime runs CPU and GPU "
                "workers; use --engine=jobset (or job) for TPUs"
            )
        if r.ps:
            raise errors.UsageError(
                f"--engine=trainjob --ps={r.ps}: a TrainJob drives one role (its workers); use "
                "--engine=jobset or --engine=tfjob for parameter servers"
            )

    def manifests(self, r: engines.Request) -> list[dict]:
        return manifests(r)

    def pod_spec(self, doc: dict) -> dict:
        rjob = doc["spec"]["template"]["spec"]["replicatedJobs"][0]
        return rjob["template"]["spec"]["template"]["spec"]


def runtime_name(name: str) -> str:
    return f"{name}-tensorflow"


def manifests(r: engines.Request) -> list[dict]:
    """[the TrainingRuntime, the TrainJob] of a run of R.workers workers, each pod SIZE."""
    name, n = r.name, r.workers
    objects.check_name(name)
    objects.check_queue(r.queue)
    results = objects.check_results(r.args)
    resources, selector = objects.gpu_placement(r.gpus, r.gpu_type)
    objects.check_generated([indexed.pod_hostname(name, NODE, n - 1) + "-abcde"], "pod name")
    env = None
    if n > 1:
        tasks = [
            topology.Task(
                "worker", i, f"{indexed.pod_hostname(name, NODE, i)}.{name}:{objects.PORT}"
            )
            for i in range(n)
        ]
        model_dir = results.rstrip("/") + f"/{name}-model"
        args = topology.train_args(tasks, list(r.args), name, model_dir)
        tf_config = indexed.tf_config_template(tasks, "worker")
        env = [indexed.index_env(), {"name": "TF_CONFIG", "value": tf_config}]
    else:
        args = list(r.args) + [f"--run_label={r.run_label or name}"]
    c = objects.container(r.image, args, env, resources, name=NODE, port=n > 1, size=r.size)
    pod = {"metadata": {"labels": objects.labels(name, "worker")}}
    pod["spec"] = objects.pod_spec([c], selector)
    job = {
        "completionMode": "Indexed",
        "completions": n,
        "parallelism": n,
        "backoffLimit": 0,
        # Worker 0 is the chief: its success ends the Job (and so the run).
        "successPolicy": {"rules": [{"succeededIndexes": "0"}]},
        "template": pod,
    }
    rjob = {
        "name": NODE,
        "replicas": 1,
        "template": {"metadata": {"labels": {**ANCESTOR, **objects.labels(name)}}, "spec": job},
    }
    jobset_spec = {
        "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
        "replicatedJobs": [rjob],
        "ttlSecondsAfterFinished": r.ttl,
    }
    runtime = {
        "apiVersion": API_VERSION,
        "kind": "TrainingRuntime",
        "metadata": {
            "name": runtime_name(name),
            "labels": {**objects.labels(name), f"{GROUP}/framework": "tensorflow"},
        },
        "spec": {"mlPolicy": {"numNodes": n}, "template": {"spec": jobset_spec}},
    }
    train_job = {
        "apiVersion": API_VERSION,
        "kind": "TrainJob",
        "metadata": {"name": name, "labels": objects.labels(name, queue=r.queue)},
        "spec": {
            "runtimeRef": {
                "apiGroup": GROUP,
                "kind": "TrainingRuntime",
                "name": runtime_name(name),
            },
            "trainer": {"numNodes": n},
        },
    }
    return [runtime, train_job]
