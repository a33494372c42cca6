"""What a GKE pod asks for: whole cores and memory sized from its node's machine type.

Every pod requests exactly its limits (Guaranteed QoS): the cores and memory
one node of the machine type offers pods, after GKE's node-allocatable
reservations and room for GKE's own pods.  GPUs and TPU chips are added by
the engines (objects.container).
"""

from __future__ import annotations

import dataclasses
import math

from tpubench.core import machine_facts
from tpubench_launch import errors

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
    """(vCPUs, GiB) of a GCE or GKE TPU machine type: the machine facts
    (core/machines.csv, read through core/machine_facts.py).

    Raises:
      UsageError: a machine type the facts do not know.
    """
    facts = machine_facts.shape(f"gcp:{mtype}")
    if facts:
        return facts.vcpus, facts.gib
    known = [f.replace("{N}", "N") for f in machine_facts.families("gcp")]
    raise errors.UsageError(
        f"machine type {mtype!r}: its vCPUs and memory are not known here; use one of "
        f"{', '.join(sorted(known))} or give --cpus and --memory"
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
