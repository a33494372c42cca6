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

from tpubench_launch import cluster, errors, k8s, tpus

PORT = k8s.PORT
GKE_TPU_MACHINES = {"v4": "ct4p-hightpu-4t", "v5p": "ct5p-hightpu-4t"}
check_name = k8s.check_name
render = k8s.render


def _job(name, job_name, image, args, env, resources, selector, task, queue=None, sub="train"):
    env_list = [{"name": k, "value": v} for k, v in (env or {}).items()]
    c = k8s.container(image, args, env_list, resources, port=bool(task), subcommand=sub)
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
    name, image, workers, ps, gpus, gpu_type, args, queue=None, run_label=None, subcommand="train"
) -> list[dict]:
    """Jobs (+ headless Services) for a MultiWorkerMirrored or parameter-server run.

    One task (workers=1, ps=0) is one Job running `tpubench SUBCOMMAND`, its
    record labelled RUN_LABEL (default: NAME).
    """
    check_name(name)
    k8s.check_queue(queue)
    results = k8s.check_results(args)
    resources, selector = k8s.gpu_placement(gpus, gpu_type)
    if workers == 1 and ps == 0:
        args = args + [f"--run_label={run_label or name}"]
        one = (resources, selector, None, queue, subcommand)
        return [_job(name, name, image, args, None, *one)]
    roles = cluster.task_roles(workers, ps)
    hosts = [f"{name}-{r}-{i}" for r, i in roles]
    tasks = cluster.plan(workers, ps, hosts=hosts, port=PORT)
    # One model_dir for every task (tpubench's default differs per process).
    args = cluster.train_args(tasks, args, name, results.rstrip("/") + f"/{name}-model")
    docs = []
    for t, host in zip(tasks, hosts, strict=True):
        task = f"{t.role}-{t.index}"
        docs.append(_service(name, task))
        env = {"TF_CONFIG": cluster.tf_config(tasks, t)}
        docs.append(_job(name, host, image, args, env, resources, selector, task, queue))
    return docs


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


def tpu_manifests(name, image, machine, topology, args, queue=None) -> list[dict]:
    """A Job on a single-host TPU slice node pool."""
    check_name(name)
    k8s.check_queue(queue)
    k8s.check_results(args)
    s, selector = tpu_slice(machine, topology)
    args = list(args) + ["--tpu=local", f"--run_label={name}"]
    resources = {"google.com/tpu": s.chips}
    return [_job(name, name, image, args, None, resources, selector, None, queue)]


def node_pool_command(name, machine, topology, cluster_name, zone, spot) -> list[str]:
    """The gcloud command that creates a TPU slice node pool for the run."""
    s = tpus.parse(machine)
    if s.generation in GKE_TPU_MACHINES:
        mtype = GKE_TPU_MACHINES[s.generation]
    else:
        family = "ct5lp-hightpu" if s.generation == "v5e" else "ct6e-standard"
        mtype = f"{family}-{s.chips_per_host}t"
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
