"""What every GKE engine shares: names, labels, Kueue, the tpubench container, YAML out.

The engines (gke.py: plain Jobs; jobset.py; tfjob.py) each build their own
objects from these pieces, so a pod looks the same whichever engine runs it.
"""

from __future__ import annotations

import dataclasses
import math
import re
import shutil
import subprocess

from tpubench_launch import commands, errors

PORT = 2222
COMMAND = ["python3", "-m", "tpubench", "train"]
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
# Kubernetes object names here are DNS-1035 labels (JobSet and TFJob names
# must be; Job names end up in pod hostnames): at most 63 characters.
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_QUEUE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$")
# GKE's `cloud.google.com/gke-accelerator` node label values for NVIDIA GPUs.
GKE_GPUS = (
    "nvidia-tesla-p4",
    "nvidia-tesla-p100",
    "nvidia-tesla-v100",
    "nvidia-tesla-t4",
    "nvidia-l4",
    "nvidia-tesla-a100",
    "nvidia-a100-80gb",
    "nvidia-h100-80gb",
    "nvidia-h100-mega-80gb",
    "nvidia-h200-141gb",
    "nvidia-b200",
    "nvidia-gb200",
    "nvidia-rtx-pro-6000",
)


# GiB of memory per vCPU of GCE machine families (GCE's machine-type pages).
GIB_PER_VCPU = {
    "n1-standard": 3.75,
    "n1-highmem": 6.5,
    "n1-highcpu": 0.9,
    "n2-standard": 4,
    "n2-highmem": 8,
    "n2-highcpu": 1,
    "n2d-standard": 4,
    "n2d-highmem": 8,
    "n2d-highcpu": 1,
    "e2-standard": 4,
    "e2-highmem": 8,
    "e2-highcpu": 1,
    "c2-standard": 4,
    "c2d-standard": 4,
    "c3-standard": 4,
    "g2-standard": 4,
}
# Accelerator-optimized families, named by GPU count (a2-highgpu-2g): (vCPUs, GiB) per GPU.
PER_GPU = {"a2-highgpu": (12, 85), "a2-ultragpu": (12, 170), "a3-highgpu": (26, 234)}
# GKE's TPU host machine types: (vCPUs, GiB).
TPU_HOSTS = {
    "ct5lp-hightpu-1t": (24, 48),
    "ct5lp-hightpu-4t": (112, 192),
    "ct5lp-hightpu-8t": (224, 384),
    "ct4p-hightpu-4t": (240, 407),
    "ct5p-hightpu-4t": (208, 448),
    "ct6e-standard-1t": (44, 176),
    "ct6e-standard-4t": (180, 720),
    "ct6e-standard-8t": (180, 1440),
}
DEFAULT_MACHINE = "n1-standard-8"  # what a CPU/GPU pod is sized for unless told
# Room left on a node for GKE's own pods (logging, kube-proxy, the GPU plugin).
DAEMON_CPU, DAEMON_GIB = 0.5, 1.0


@dataclasses.dataclass(frozen=True)
class PodSize:
    """What one pod requests, and is limited to (requests = limits: Guaranteed QoS)."""

    cpus: int  # whole cores, so the kubelet's static CPU manager pins them
    memory_gib: int
    source: str  # what it was sized from, for the manifest's comment

    def quantities(self) -> dict:
        return {"cpu": self.cpus, "memory": f"{self.memory_gib}Gi"}


def machine_shape(mtype: str) -> tuple[int, float]:
    """(vCPUs, GiB) of a GCE or GKE TPU machine type.

    Raises:
      UsageError: a family not listed here.
    """
    if mtype in TPU_HOSTS:
        return TPU_HOSTS[mtype]
    family, _, size = mtype.rpartition("-")
    if family in PER_GPU and size.endswith("g") and size[:-1].isdigit():
        vcpus, gib = PER_GPU[family]
        return vcpus * int(size[:-1]), gib * int(size[:-1])
    if family in GIB_PER_VCPU and size.isdigit():
        return int(size), GIB_PER_VCPU[family] * int(size)
    known = sorted(GIB_PER_VCPU) + sorted(f"{f}-Ng" for f in PER_GPU)
    raise errors.UsageError(
        f"machine type {mtype!r}: its vCPUs and memory are not known here; use one of "
        f"{', '.join(f'{k}-N' if k in GIB_PER_VCPU else k for k in known)} or give --cpus "
        "and --memory"
    )


def allocatable(vcpus: float, gib: float) -> tuple[float, float]:
    """(cores, GiB) a GKE node of this size offers pods: GKE's node-allocatable reservations.

    CPU: 6% of the first core, 1% of the next, 0.5% of the next 2, 0.25% above 4.
    Memory: 25% of the first 4 GiB, 20% of the next 4, 10% of the next 8, 6% of
    the next 112, 2% above 128, plus 100 MiB for the eviction threshold.
    """
    cpu_steps = ((1, 0.06), (1, 0.01), (2, 0.005), (math.inf, 0.0025))
    mem_steps = ((4, 0.25), (4, 0.20), (8, 0.10), (112, 0.06), (math.inf, 0.02))
    return vcpus - _tiers(vcpus, cpu_steps), gib - _tiers(gib, mem_steps) - 100 / 1024


def _tiers(amount: float, steps) -> float:
    reserved, left = 0.0, amount
    for width, share in steps:
        part = min(left, width)
        reserved += part * share
        left -= part
        if left <= 0:
            break
    return reserved


def size_for(mtype: str) -> PodSize:
    """The largest whole-core pod one MTYPE node holds beside GKE's own pods."""
    vcpus, gib = machine_shape(mtype)
    cpu, mem = allocatable(vcpus, gib)
    cpus = max(1, math.floor(cpu - DAEMON_CPU))
    return PodSize(cpus, max(1, math.floor(mem - DAEMON_GIB)), f"one {mtype} node")


def sized(mtype: str | None, cpus: int | None, memory_gib: int | None) -> PodSize:
    """A PodSize from a machine type, with --cpus / --memory taking precedence."""
    base = size_for(mtype or DEFAULT_MACHINE)
    if cpus is None and memory_gib is None:
        return base
    return PodSize(cpus or base.cpus, memory_gib or base.memory_gib, "--cpus/--memory")


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
    size: PodSize | None = None,
):
    """The tpubench container: `python3 -m tpubench SUBCOMMAND ARGS` (train by default).

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
    amounts = (size or size_for(DEFAULT_MACHINE)).quantities() | dict(resources or {})
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
    import yaml

    head = "".join(f"# {c}\n" for c in comments)
    return head + yaml.safe_dump_all(docs, sort_keys=False, width=1000)


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
