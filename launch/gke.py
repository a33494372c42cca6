"""Plain Kubernetes Jobs for GKE (`--engine=job`), and what TPU slices need on GKE.

Multi-worker (GPU or CPU) training: one Job per task, each with its
TF_CONFIG, and one headless Service per task so that `NAME-worker-1:2222`
resolves to that task's pod.  Parameter-server clusters add a chief and ps
tasks the same way.  TPU slices: one Job whose pod lands on a TPU slice node
pool through the gke-tpu-accelerator / gke-tpu-topology node selectors and
asks for the host's chips as `google.com/tpu`.  JobSet and TFJob runs are
built by jobset.py and tfjob.py from the same pieces (k8s.py).
"""

from __future__ import annotations

from tpubench_launch import errors, k8s, topology, tpus

PORT = k8s.PORT
GKE_TPU_MACHINES = {"v4": "ct4p-hightpu-4t", "v5p": "ct5p-hightpu-4t"}
check_name = k8s.check_name
render = k8s.render


def _job(name, job_name, image, args, env, place, task, queue=None, sub="train", size=None):
    resources, selector = place
    env_list = [{"name": k, "value": v} for k, v in (env or {}).items()]
    c = k8s.container(image, args, env_list, resources, port=bool(task), subcommand=sub, size=size)
    spec = {
        "backoffLimit": 0,
        "template": {
            "metadata": {"labels": k8s.labels(name, task)},
            "spec": k8s.pod_spec([c], selector),
        },
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": job_name, "labels": k8s.labels(name, task, queue)},
        "spec": spec,
    }


def _service(name, task):
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"{name}-{task}", "labels": k8s.labels(name, task)},
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,  # TF connects before readiness
            "selector": {"tpubench/run": name, "tpubench/task": task},
            "ports": [{"name": "grpc", "port": PORT}],
        },
    }


def gpu_manifests(
    name,
    image,
    workers,
    ps,
    gpus,
    gpu_type,
    args,
    queue=None,
    run_label=None,
    subcommand="train",
    size=None,
) -> list[dict]:
    """Jobs (+ headless Services) for a MultiWorkerMirrored or parameter-server run.

    One task (workers=1, ps=0) is one Job running `tpubench SUBCOMMAND`, its
    record labelled RUN_LABEL (default: NAME).  Each pod is SIZE (cores and
    memory, requests = limits; default k8s.DEFAULT_MACHINE's).

    Raises:
      UsageError: a Kueue queue with several tasks (see refuse_queue).
    """
    check_name(name)
    k8s.check_queue(queue)
    results = k8s.check_results(args)
    place = k8s.gpu_placement(gpus, gpu_type)
    if workers == 1 and ps == 0:
        args = args + [f"--run_label={run_label or name}"]
        return [_job(name, name, image, args, None, place, None, queue, subcommand, size)]
    if queue:
        raise refuse_queue(queue, len(topology.task_roles(workers, ps)))
    roles = topology.task_roles(workers, ps)
    hosts = [f"{name}-{r}-{i}" for r, i in roles]
    tasks = topology.plan(workers, ps, hosts=hosts, port=PORT)
    # One model_dir for every task (tpubench's default differs per process).
    args = topology.train_args(tasks, args, name, results.rstrip("/") + f"/{name}-model")
    docs = []
    for t, host in zip(tasks, hosts, strict=True):
        task = f"{t.role}-{t.index}"
        docs.append(_service(name, task))
        env = {"TF_CONFIG": topology.tf_config(tasks, t)}
        docs.append(_job(name, host, image, args, env, place, task, size=size))
    return docs


def refuse_queue(queue: str, tasks: int) -> errors.UsageError:
    """--engine=job --queue with several tasks: Kueue would admit each Job on its own."""
    return errors.UsageError(
        f"--engine=job --queue={queue} with {tasks} tasks: Kueue admits each Job as its own "
        "workload, so part of the cluster could start and wait forever for the rest; use "
        "--engine=jobset or --engine=tfjob (one workload, admitted whole)"
    )


def tpu_slice(machine: str, topology: str | None) -> tuple[tpus.Slice, dict]:
    """A single-host TPU slice and the node selector of its GKE node pool.

    Raises:
      UsageError: not a GKE TPU generation, or a multi-host slice.
    """
    s = tpus.parse(machine)
    if s.generation not in tpus.GKE_ACCELERATORS:
        raise errors.unknown("TPU generation on GKE", s.generation, tpus.GKE_ACCELERATORS)
    if s.is_pod:
        raise errors.UsageError(
            f"{machine} spans {s.hosts} hosts: TensorFlow finds a multi-host slice's hosts "
            "through the Cloud TPU API (--tpu=NAME), which a GKE node pool does not answer; use "
            "`tpubench-launch sweep --executor=tpu-vm`"
        )
    selector = {
        "cloud.google.com/gke-tpu-accelerator": tpus.GKE_ACCELERATORS[s.generation],
        "cloud.google.com/gke-tpu-topology": topology or tpus.gke_topology(s),
    }
    return s, selector


def tpu_manifests(name, image, machine, topology, args, queue=None, size=None) -> list[dict]:
    """A Job on a single-host TPU slice node pool (SIZE default: what its host holds)."""
    check_name(name)
    k8s.check_queue(queue)
    k8s.check_results(args)
    s, selector = tpu_slice(machine, topology)
    args = list(args) + ["--tpu=local", f"--run_label={name}"]
    place = ({"google.com/tpu": s.chips}, selector)
    size = size or k8s.size_for(tpu_host_type(s))
    return [_job(name, name, image, args, None, place, None, queue, size=size)]


def tpu_host_type(s: tpus.Slice) -> str:
    """The GKE machine type of one host of slice S (its node pool's --machine-type)."""
    if s.generation in GKE_TPU_MACHINES:
        return GKE_TPU_MACHINES[s.generation]
    family = "ct5lp-hightpu" if s.generation == "v5e" else "ct6e-standard"
    return f"{family}-{s.chips_per_host}t"


def node_pool_command(name, machine, topology, cluster_name, zone, spot) -> list[str]:
    """The gcloud command that creates a TPU slice node pool for the run."""
    s = tpus.parse(machine)
    mtype = tpu_host_type(s)
    argv = [
        "gcloud",
        "container",
        "node-pools",
        "create",
        f"{name}-tpu",
        f"--cluster={cluster_name}",
        f"--zone={zone}",
        f"--machine-type={mtype}",
        f"--tpu-topology={topology or tpus.gke_topology(s)}",
        f"--num-nodes={s.hosts}",
    ]
    return argv + (["--spot"] if spot else [])


def apply(text: str, out=None) -> None:
    k8s.apply(text)
