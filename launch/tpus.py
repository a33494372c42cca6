"""Cloud TPU slice names: `gcp:tpu-v5e-8` -> accelerator type, chips, hosts, GKE labels.

The suffix counts TensorCores for v2, v3, v4 and v5p (two per chip) and chips
for v5e and v6e, as Cloud TPU names them (the same rule tpubench's price
catalog uses).  A slice with more than one host is a pod: every host runs
the same program, started with `--worker=all`.
"""

from __future__ import annotations

import dataclasses
import re

from tpubench.core import machine_facts, tpu_slices
from tpubench_launch import errors

_RE = re.compile(r"^gcp:tpu-(?P<gen>v\d+[a-z]*)-(?P<n>\d+)(@[\d-]+)?$")
# generation -> its facts (core/tpu_generations.csv): what the suffix counts, gcloud's
# accelerator-type prefix, the base runtime (tpubench installs TensorFlow itself), GKE's
# accelerator label and host machine type.
GENERATIONS = machine_facts.tpu_generations()
# The base runtime a TPU VM of each generation boots.
RUNTIMES = {g: t.runtime for g, t in GENERATIONS.items()}
# The generations GKE has TPU node pools for (no v2 or v3): generation -> accelerator label.
GKE_ACCELERATORS = {
    g: t.gke_accelerator for g, t in sorted(GENERATIONS.items()) if t.gke_accelerator
}
_TOPOLOGY_2D = {1: "1x1", 4: "2x2", 8: "2x4", 16: "4x4", 32: "4x8", 64: "8x8", 128: "8x16"}
_TOPOLOGY_3D = {4: "2x2x1", 8: "2x2x2", 16: "2x2x4", 32: "2x4x4", 64: "4x4x4", 128: "4x4x8"}


@dataclasses.dataclass(frozen=True)
class Slice:
    generation: str
    size: int  # the name's suffix
    chips: int
    hosts: int

    @property
    def accelerator_type(self) -> str:
        """gcloud's --accelerator-type, e.g. v5litepod-8, v4-32."""
        return f"{GENERATIONS[self.generation].accelerator_type}-{self.size}"

    @property
    def is_pod(self) -> bool:
        return self.hosts > 1

    @property
    def chips_per_host(self) -> int:
        return self.chips // self.hosts


def parse(machine: str) -> Slice:
    """Parses a TPU slice machine such as gcp:tpu-v5e-8 or gcp:tpu-v4-32.

    Raises:
      UsageError: not a TPU slice name, or an unknown generation or size.
    """
    m = _RE.match(machine.strip().lower())
    if not m:
        raise errors.UsageError(
            f"machine {machine!r} is not a TPU slice; accepted: gcp:tpu-GEN-N such as "
            "gcp:tpu-v5e-8, gcp:tpu-v4-32, gcp:tpu-v6e-16"
        )
    gen, n = m["gen"], int(m["n"])
    if gen not in GENERATIONS:
        raise errors.unknown("TPU generation", gen, GENERATIONS)
    if GENERATIONS[gen].suffix_counts == "cores":
        if n < 8 or n % 8:
            raise errors.UsageError(
                f"machine {machine!r}: {gen} slices count TensorCores in multiples of 8 "
                f"(e.g. gcp:tpu-{gen}-8, gcp:tpu-{gen}-32)"
            )
        return Slice(gen, n, chips=n // 2, hosts=tpu_slices.hosts(gen, n // 2))
    if n not in (1, 4, 8) and (n < 16 or n % 4):
        raise errors.UsageError(
            f"machine {machine!r}: {gen} slices have 1, 4, 8 or a multiple of 4 chips from 16"
        )
    return Slice(gen, n, chips=n, hosts=tpu_slices.hosts(gen, n))


def gke_topology(s: Slice) -> str:
    """The gke-tpu-topology label value for a slice (2D for v5e/v6e, 3D for v4/v5p).

    Raises:
      UsageError: no GKE TPU for the generation, or a size without a known topology.
    """
    if s.generation not in GKE_ACCELERATORS:
        raise errors.unknown("TPU generation on GKE", s.generation, GKE_ACCELERATORS)
    table = _TOPOLOGY_3D if GENERATIONS[s.generation].suffix_counts == "cores" else _TOPOLOGY_2D
    if s.chips not in table:
        raise errors.UsageError(
            f"no known GKE topology for {s.accelerator_type} ({s.chips} chips); pass "
            "--tpu-topology (e.g. 4x4)"
        )
    return table[s.chips]
