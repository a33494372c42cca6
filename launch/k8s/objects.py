"""What every GKE engine builds with: names, labels, Kueue, the tpubench container, YAML out.

The engines (engines/job.py, jobset.py, trainjob.py, tfjob.py) each build their own
objects from these pieces, so a pod looks the same whichever engine runs it;
its cores and memory come from sizing.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess

from tpubench.children import command
from tpubench.core import machine_facts, safe_yaml
from tpubench_launch import commands, errors
from tpubench_launch.k8s import sizing

PORT = 2222
# The image's python3, its own installation only (-I: not its WORKDIR, nor PYTHONPATH).
COMMAND = command.installed_python("python3", "-m", "tpubench", "train")
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
# Kubernetes object names here are DNS-1035 labels (JobSet and TFJob names
# must be; Job names end up in pod hostnames): at most 63 characters.
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_QUEUE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$")
# GKE's `cloud.google.com/gke-accelerator` node label values for NVIDIA GPUs.
GKE_GPUS = machine_facts.gke_gpu_labels()


def check_name(name: str) -> None:
    """--name prefixes every object, so it leaves room for the suffixes."""
    if not _NAME.match(name):
        raise errors.UsageError(
            f"--name={name!r}: use 1-40 lowercase letters, digits and dashes, starting with a "
            "letter (it prefixes Kubernetes object names)"
        )


def check_generated(names: list[str], what: str) -> None:
    """Every generated name must be a DNS-1035 label (<= 63 characters)."""
    for n in names:
        if len(n) > 63 or not _DNS1035.match(n):
            raise errors.UsageError(
                f"{what} {n!r} would be {len(n)} characters; Kubernetes accepts DNS labels of "
                "at most 63 (use a shorter --name)"
            )


def check_queue(queue: str | None) -> None:
    """A Kueue LocalQueue name: a label value that is also an object name."""
    if queue is not None and (len(queue) > 63 or not _QUEUE.match(queue)):
        raise errors.UsageError(
            f"--queue={queue!r}: a Kueue LocalQueue name is 1-63 lowercase letters, digits, "
            "'-' and '.', starting and ending with a letter or digit"
        )


def check_gpu_type(gpu_type: str | None) -> None:
    if gpu_type is not None and gpu_type not in GKE_GPUS:
        raise errors.unknown("--gpu-type (GKE accelerator label)", gpu_type, GKE_GPUS)


def check_results(args: list[str]) -> str:
    """The pass-through --results_dir, which must be gs:// (pods are gone after the run)."""
    results = commands.flag_value(args, "results_dir")
    if not results or not results.startswith("gs://"):
        raise errors.UsageError(
            f"--results_dir={results or '(default runs)'}: pods are deleted after the run; pass "
            "--results_dir=gs://BUCKET/PATH after --"
        )
    return results


def labels(name: str, task: str | None = None, queue: str | None = None) -> dict:
    out = {"app.kubernetes.io/name": "tpubench", "tpubench/run": name}
    if task:
        out["tpubench/task"] = task
    if queue:
        out[QUEUE_LABEL] = queue
    return out


def container(
    image,
    args,
    env=None,
    resources=None,
    name="tpubench",
    port_name="grpc",
    port=True,
    subcommand="train",
    size: sizing.PodSize | None = None,
):
    """The tpubench container: `python3 -I -m tpubench SUBCOMMAND ARGS` (train by default).

    ENV is a list of Kubernetes EnvVar objects, in order: Kubernetes expands
    `$(VAR)` only from variables defined earlier in the list.  RESOURCES are
    the devices (GPUs, TPU chips); SIZE the cores and memory (default: what
    one DEFAULT_MACHINE node holds).  Requests equal limits for all of them,
    so the pod is Guaranteed (last to be evicted, its cores pinned by a
    static CPU manager) and a Kueue quota counts what it really takes.
    """
    command = [*COMMAND[:-1], subcommand]
    c = {"name": name, "image": image, "command": command, "args": list(args)}
    if env:
        c["env"] = list(env)
    if port:
        c["ports"] = [{"containerPort": PORT, "name": port_name}]
    amounts = (size or sizing.size_for(sizing.DEFAULT_MACHINE)).quantities() | dict(resources or {})
    c["resources"] = {"requests": amounts, "limits": dict(amounts)}
    return c


def pod_spec(containers: list[dict], node_selector: dict | None) -> dict:
    pod = {"restartPolicy": "Never", "containers": containers}
    if node_selector:
        pod["nodeSelector"] = dict(node_selector)
    return pod


def gpu_placement(gpus: int, gpu_type: str | None) -> tuple[dict | None, dict | None]:
    """(resource limits, node selector) for GPUS GPUs of GPU_TYPE per pod."""
    check_gpu_type(gpu_type)
    resources = {"nvidia.com/gpu": gpus} if gpus else None
    selector = {"cloud.google.com/gke-accelerator": gpu_type} if gpus and gpu_type else None
    return resources, selector


def render(docs: list[dict], comments: list[str] = ()) -> str:

    head = "".join(f"# {c}\n" for c in comments)
    return head + safe_yaml.dumps(docs, all_docs=True)


def apply(text: str) -> None:
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
