"""What a GKE pod asks for: whole cores and memory sized from its node's machine type.

Every pod requests exactly its limits (Guaranteed QoS): the cores and memory
one node of the machine type offers pods, after GKE's node-allocatable
reservations and room for GKE's own pods.  GPUs and TPU chips are added by
the engines (objects.container).
"""

from __future__ import annotations

import dataclasses
import math

from tpubench_launch import errors

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
