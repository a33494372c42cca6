"""`--engine=job`: plain Kubernetes Jobs (and headless Services for a cluster's tasks).

Multi-worker (GPU or CPU) training: one Job per task, each with its
TF_CONFIG, and one headless Service per task so that `NAME-worker-1:2222`
resolves to that task's pod.  Parameter-server clusters add a chief and ps
tasks the same way.  A TPU slice: one Job whose pod lands on the slice's node
pool (k8s/tpu.py) and asks for the host's chips as `google.com/tpu`.
"""

from __future__ import annotations

from tpubench_launch import engines, errors, topology
from tpubench_launch.k8s import objects, sizing, tpu


@engines.REGISTRY.register
class Job(engines.Engine):
    name = "job"
    resource = "jobs"

    def manifests(self, r: engines.Request) -> list[dict]:
        return tpu_manifests(r) if r.tpu else cluster_manifests(r)

    def pod_spec(self, doc: dict) -> dict:
        return doc["spec"]["template"]["spec"]


def _job(name, job_name, image, args, env, place, task, queue=None, sub="train", size=None):
    resources, selector = place
    env_list = [{"name": k, "value": v} for k, v in (env or {}).items()]
    c = objects.container(
        image, args, env_list, resources, port=bool(task), subcommand=sub, size=size
    )
    spec = {
        "backoffLimit": 0,
        "template": {
            "metadata": {"labels": objects.labels(name, task)},
            "spec": objects.pod_spec([c], selector),
        },
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": job_name, "labels": objects.labels(name, task, queue)},
        "spec": spec,
    }


def _service(name, task):
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"{name}-{task}", "labels": objects.labels(name, task)},
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,  # TF connects before readiness
            "selector": {"tpubench/run": name, "tpubench/task": task},
            "ports": [{"name": "grpc", "port": objects.PORT}],
        },
    }


def cluster_manifests(r: engines.Request) -> list[dict]:
    """Jobs (+ headless Services) for a MultiWorkerMirrored or parameter-server run.

    One task (workers=1, ps=0) is one Job running `tpubench SUBCOMMAND`, its
    record labelled RUN_LABEL (default: NAME).  Each pod is SIZE (cores and
    memory, requests = limits; default sizing.DEFAULT_MACHINE's).

    Raises:
      UsageError: a Kueue queue with several tasks (see refuse_queue).
    """
    name, size = r.name, r.size
    objects.check_name(name)
    objects.check_queue(r.queue)
    results = objects.check_results(r.args)
    place = objects.gpu_placement(r.gpus, r.gpu_type)
    if r.workers == 1 and r.ps == 0:
        args = r.args + [f"--run_label={r.run_label or name}"]
        return [_job(name, name, r.image, args, None, place, None, r.queue, r.subcommand, size)]
    roles = topology.task_roles(r.workers, r.ps)
    if r.queue:
        raise refuse_queue(r.queue, len(roles))
    hosts = [f"{name}-{role}-{i}" for role, i in roles]
    tasks = topology.plan(r.workers, r.ps, hosts=hosts, port=objects.PORT)
    # One model_dir for every task (tpubench's default differs per process).
    args = topology.train_args(tasks, r.args, name, results.rstrip("/") + f"/{name}-model")
    docs = []
    for t, host in zip(tasks, hosts, strict=True):
        task = f"{t.role}-{t.index}"
        docs.append(_service(name, task))
        env = {"TF_CONFIG": topology.tf_config(tasks, t)}
        docs.append(_job(name, host, r.image, args, env, place, task, size=size))
    return docs


def refuse_queue(queue: str, tasks: int) -> errors.UsageError:
    """--engine=job --queue with several tasks: Kueue would admit each Job on its own."""
    return errors.UsageError(
        f"--engine=job --queue={queue} with {tasks} tasks: Kueue admits each Job as its own "
        "workload, so part of the cluster could start and wait forever for the rest; use "
        "--engine=jobset or --engine=tfjob (one workload, admitted whole)"
    )


def tpu_manifests(r: engines.Request) -> list[dict]:
    """A Job on a single-host TPU slice node pool (SIZE default: what its host holds)."""
    objects.check_name(r.name)
    objects.check_queue(r.queue)
    objects.check_results(r.args)
    s, selector = tpu.tpu_slice(r.tpu, r.tpu_topology)
    args = list(r.args) + ["--tpu=local", f"--run_label={r.run_label or r.name}"]
    place = ({"google.com/tpu": s.chips}, selector)
    size = r.size or sizing.size_for(tpu.tpu_host_type(s))
    return [_job(r.name, r.name, r.image, args, None, place, None, r.queue, r.subcommand, size)]
