"""What the rented-machine executors share about one configuration, beside cloud.py's plans.

`shape` reads a catalog machine as GCE knows it (machine type, GPU type and
count): gce creates it, gke sizes its pod from it, skypilot asks for it.
`remote_flags` are the tpubench flags every rented machine runs: results and
model dirs on the bucket, the configuration's record label.
"""

from __future__ import annotations

from tpubench.children import command
from tpubench.core import host_procs, hosting, machine_facts
from tpubench.core.basis import Basis
from tpubench_launch import errors, tpus
from tpubench_launch.cluster import local as local_cluster
from tpubench_launch.executors import rented
from tpubench_launch.k8s import sizing

# Catalog GPU name -> the GCE accelerator type attached to the VM (machine facts).
GPUS = machine_facts.gce_accelerator_types()
# GPUs come with the machine type in these series (a2-, a3-, a4-, g2-): machine facts.
GPU_MACHINE_FAMILIES = machine_facts.series_carrying("gcp", "gpu")


def shape(machine: str) -> tuple[str, str | None, int]:
    """(machine type, GPU accelerator type or None, GPU count) of a priced machine.

    Raises:
      UsageError: not a GCE machine (other provider, a TPU, several hosts, unknown GPU).
    """
    parts = [p.split("@")[0].strip().lower() for p in machine.split("+")]
    host = parts[0]
    if not host.startswith("gcp:") or "x" in host.split(":")[0] or host[4:] in GPUS:
        raise errors.UsageError(
            f"machine {machine!r}: --executor=gce needs a GCE host first, like "
            "gcp:n1-standard-8 or gcp:n1-standard-8+1xgcp:t4 (one VM per task)"
        )
    if host.startswith("gcp:tpu-"):
        raise errors.UsageError(f"machine {machine!r} is a TPU slice: use --executor=tpu-vm")
    gpu, count = None, 0
    for part in parts[1:]:
        n, _, key = part.partition("x") if part[0].isdigit() else ("1", "", part)
        name = key.removeprefix("gcp:")
        if name not in GPUS:
            raise errors.unknown(f"GPU in machine {machine!r}:", name, GPUS)
        if gpu and GPUS[name] != gpu:
            raise errors.UsageError(f"machine {machine!r}: one GPU type per VM")
        gpu, count = GPUS[name], count + int(n)
    return host[4:], gpu, count


def need(config) -> hosting.Need:
    """What CONFIG asks of the executor renting its machine (tpubench/core/hosting.py): its
    subcommand, device (its --device, else what the machine carries), TPU slice, cluster."""
    flagged = config.train_flags().get("device")
    return need_of(
        str(config.settings.get("machine") or ""),
        config.command,
        "tpu" if config.strategy == "tpu" else flagged if flagged in hosting.DEVICES else None,
        config.strategy if config.is_cluster else None,
        config.one_machine,
    )


def need_of(machine: str, subcommand="train", device=None, cluster=None, one_machine=False):
    """The hosting.Need of a run on MACHINE: its device is DEVICE, else what MACHINE carries
    (a TPU slice; GPUs named after '+', or a machine type whose facts carry GPUs)."""
    host = machine.split("+")[0].split("@")[0].strip().lower()
    generation, hosts, kind = None, 1, "cpu"
    if host.startswith("gcp:tpu-"):
        t = tpus.parse(machine)
        generation, hosts, kind = t.generation, t.hosts, "tpu"
    elif (
        "+" in machine
        or host.removeprefix("gcp:").startswith(GPU_MACHINE_FAMILIES)
        or getattr(machine_facts.shape(host), "accelerators", 0) > 0
    ):
        kind = "gpu"
    return hosting.Need(
        subcommand=subcommand,
        device=device or kind,
        machine=machine,
        provider=hosting.provider_of(machine),
        tpu_generation=generation,
        tpu_hosts=hosts,
        cluster=cluster,
        one_machine=one_machine,
    )


def check_one_machine(config) -> None:
    """A one-machine cluster's tasks against what its machine type holds, where the type's
    vCPUs and memory are known (k8s/sizing.py); not against this host."""
    machine = config.settings.get("machine")
    if not (config.one_machine and machine):
        return
    try:
        vcpus, gib = sizing.machine_shape(shape(machine)[0])
    except errors.UsageError:
        return  # a machine of unknown size: the executor says what it needs of it
    shown = f"workers={config.workers}" + (f", ps={config.ps}" if config.ps else "")
    local_cluster.check_room(
        config.workers,
        config.ps,
        f"{config.id} ({shown}, one_machine)",
        host=host_procs.fit(vcpus, gib, f"{machine} ({vcpus} vCPUs, {gib:g} GiB)"),
    )


def remote_flags(config, s: rented.Settings, extra: dict | None = None) -> list[str]:
    """tpubench flags on a VM: results and model dir on gs://, the config's label."""
    flags = dict(config.train_flags())
    if s.spot and "pricing" not in flags:
        flags["pricing"] = Basis.SPOT
    flags.update(extra or {})
    if config.command == "tune":  # tune names, places and resumes its own trials
        flags.update(results_dir=s.records)
    elif config.command == "infer":  # infer's --model_dir names weights to read
        flags.update(results_dir=s.records, run_label=config.record_label)
    else:
        flags.update(
            results_dir=s.records, model_dir=s.model_dir(config.id), run_label=config.record_label
        )
    return command.flags_argv(flags)
