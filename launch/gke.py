"""Kubernetes manifests for GKE: for users whose runs outgrow single VMs.

Multi-worker (GPU or CPU) training: one Job per task, each with its
TF_CONFIG, and one headless Service per task so that `NAME-worker-1:2222`
resolves to that task's pod.  Parameter-server clusters add a chief and ps
tasks the same way.  TPU slices: one Job whose pod lands on a TPU slice node
pool through the gke-tpu-accelerator / gke-tpu-topology node selectors and
asks for the host's chips as `google.com/tpu`.
"""

from __future__ import annotations

import re
import shutil
import subprocess

from tpubench_launch import cluster, commands, errors, tpus

PORT = 2222
_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$")
GKE_TPU_MACHINES = {"v4": "ct4p-hightpu-4t", "v5p": "ct5p-hightpu-4t"}


def check_name(name: str) -> None:
    if not _NAME.match(name):
        raise errors.UsageError(
            f"--name={name!r}: use 1-40 lowercase letters, digits and dashes, starting with a "
            "letter (it prefixes Kubernetes object names)"
        )


def _labels(name: str, task: str | None = None) -> dict:
    out = {"app.kubernetes.io/name": "tpubench", "tpubench/run": name}
    if task:
        out["tpubench/task"] = task
    return out


def _job(name, job_name, image, args, env, resources, node_selector, task, extra_spec=None):
    container = {
        "name": "tpubench",
        "image": image,
        "command": ["python3", "-m", "tpubench", "train"],
        "args": args,
    }
    if env:
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    if task:
        container["ports"] = [{"containerPort": PORT, "name": "grpc"}]
    if resources:
        container["resources"] = {"limits": resources}
    pod = {"restartPolicy": "Never", "containers": [container]}
    if node_selector:
        pod["nodeSelector"] = node_selector
    spec = {
        "backoffLimit": 0,
        "template": {"metadata": {"labels": _labels(name, task)}, "spec": pod},
    }
    spec.update(extra_spec or {})
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": job_name, "labels": _labels(name, task)},
        "spec": spec,
    }


def _service(name, task):
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"{name}-{task}", "labels": _labels(name, task)},
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,  # TF connects before readiness
            "selector": {"tpubench/run": name, "tpubench/task": task},
            "ports": [{"name": "grpc", "port": PORT}],
        },
    }


def _check_results(args: list[str]) -> None:
    results = commands.flag_value(args, "results_dir")
    if not results or not results.startswith("gs://"):
        raise errors.UsageError(
            f"--results_dir={results or '(default runs)'}: pods are deleted after the run; pass "
            "--results_dir=gs://BUCKET/PATH after --"
        )


def gpu_manifests(name, image, workers, ps, gpus, gpu_type, args) -> list[dict]:
    """Jobs (+ headless Services) for a MultiWorkerMirrored or parameter-server run."""
    check_name(name)
    _check_results(args)
    resources = {"nvidia.com/gpu": gpus} if gpus else None
    selector = {"cloud.google.com/gke-accelerator": gpu_type} if gpus and gpu_type else None
    if workers == 1 and ps == 0:
        return [
            _job(name, name, image, args + [f"--run_label={name}"], None, resources, selector, None)
        ]
    roles = cluster.task_roles(workers, ps)
    hosts = [f"{name}-{r}-{i}" for r, i in roles]
    tasks = cluster.plan(workers, ps, hosts=hosts, port=PORT)
    # One model_dir for every task (tpubench's default differs per process).
    model_dir = commands.flag_value(args, "results_dir").rstrip("/") + f"/{name}-model"
    args = cluster.train_args(tasks, args, name, model_dir)
    docs = []
    for t, host in zip(tasks, hosts, strict=True):
        task = f"{t.role}-{t.index}"
        docs.append(_service(name, task))
        env = {"TF_CONFIG": cluster.tf_config(tasks, t)}
        docs.append(_job(name, host, image, args, env, resources, selector, task))
    return docs


def tpu_manifests(name, image, machine, topology, args) -> list[dict]:
    """A Job on a single-host TPU slice node pool."""
    check_name(name)
    _check_results(args)
    s = tpus.parse(machine)
    if s.generation not in tpus.GKE_ACCELERATORS:
        raise errors.unknown("TPU generation on GKE", s.generation, tpus.GKE_ACCELERATORS)
    if s.is_pod:
        raise errors.UsageError(
            f"{machine} spans {s.hosts} hosts: TensorFlow trains multi-host TPU slices on TPU "
            "VMs, not GKE; use `tpubench-launch sweep --executor=tpu-vm`"
        )
    selector = {
        "cloud.google.com/gke-tpu-accelerator": tpus.GKE_ACCELERATORS[s.generation],
        "cloud.google.com/gke-tpu-topology": topology or tpus.gke_topology(s),
    }
    args = list(args) + ["--tpu=local", f"--run_label={name}"]
    resources = {"google.com/tpu": s.chips}
    return [_job(name, name, image, args, None, resources, selector, None)]


def node_pool_command(name, machine, topology, cluster_name, zone, spot) -> list[str]:
    """The gcloud command that creates a TPU slice node pool for the Job."""
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


def render(docs: list[dict], comments: list[str] = ()) -> str:
    import yaml

    head = "".join(f"# {c}\n" for c in comments)
    return head + yaml.safe_dump_all(docs, sort_keys=False, width=1000)


def apply(text: str, out) -> None:
    """`kubectl apply -f -` with the manifests on stdin.

    Raises:
      CloudError: kubectl missing or failing.
    """
    if shutil.which("kubectl") is None:
        raise errors.CloudError(
            "kubectl not found on PATH (gcloud components install kubectl), or add --dry-run "
            "to print the manifests"
        )
    proc = subprocess.run(["kubectl", "apply", "-f", "-"], input=text, text=True)
    if proc.returncode:
        raise errors.CloudError(f"kubectl apply failed with exit code {proc.returncode}")
