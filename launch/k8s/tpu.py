"""Single-host TPU slices on GKE: the node pool's selectors, its host machine type, its command.

A slice's pod lands on its node pool through the gke-tpu-accelerator and
gke-tpu-topology node selectors and asks for the host's chips as
`google.com/tpu`; the pool is created by `gcloud container node-pools create`
with the host's machine type (GKE's ct* types).
"""

from __future__ import annotations

from tpubench_launch import errors, tpus


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


def tpu_host_type(s: tpus.Slice) -> str:
    """The GKE machine type of one host of slice S (its node pool's --machine-type): a machine
    fact of its generation (core/tpu_generations.csv), `{N}` the chips one host holds."""
    return tpus.GENERATIONS[s.generation].gke_host.replace("{N}", str(s.chips_per_host))


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
