"""Compute Engine VMs (GPU or CPU only) through gcloud: one VM per task.

A configuration's machine names the VM: `gcp:n1-standard-8+1xgcp:t4` is an
n1-standard-8 with one T4; `gcp:c2-standard-8` is CPU only; `gcp:a2-*`,
`gcp:a3-*` and `gcp:g2-*` carry their GPUs.  Cluster strategies get one VM
per task, and TF_CONFIG names each by its internal DNS name
(VM.ZONE.c.PROJECT.internal), which GCE resolves inside the VPC.
"""

from __future__ import annotations

import os

from tpubench.children import command
from tpubench_launch import errors, executors, topology
from tpubench_launch.executors import base, cloud

GPUS = {
    "k80": "nvidia-tesla-k80",
    "p4": "nvidia-tesla-p4",
    "p100": "nvidia-tesla-p100",
    "v100": "nvidia-tesla-v100",
    "t4": "nvidia-tesla-t4",
    "l4": "nvidia-l4",
    "a100": "nvidia-tesla-a100",
    "a100-80gb": "nvidia-a100-80gb",
    "h100": "nvidia-h100-80gb",
}
GPU_MACHINE_FAMILIES = ("a2-", "a3-", "g2-")  # GPUs come with the machine type
IMAGES = {
    "gpu": ("common-cu124-debian-11-py310", "deeplearning-platform-release"),
    "cpu": ("debian-12", "debian-cloud"),
}


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


def plan(config, sweep, s: cloud.Settings, log_dir: str) -> cloud.Plan:
    machine = config.settings.get("machine")
    if not machine:
        raise errors.UsageError(
            f"{config.id}: --executor=gce needs a machine (grid.machines), e.g. gcp:n1-standard-8"
        )
    if config.strategy == "tpu":
        raise errors.UsageError(f"{config.id}: strategy tpu needs --executor=tpu-vm")
    mtype, gpu, count = shape(machine)
    has_gpu = bool(gpu) or mtype.startswith(GPU_MACHINE_FAMILIES)
    family, project = IMAGES["gpu" if has_gpu else "cpu"]
    family, project = s.image_family or family, s.image_project or project

    if config.is_cluster:
        roles = topology.task_roles(config.workers, config.ps)
        names = [cloud.vm_name(s, sweep.name, config.id, f"{r[0]}{i}") for r, i in roles]
        dns = [f"{n}.{s.zone}.c.{s.project}.internal" for n in names]
        tasks = topology.plan(config.workers, config.ps, hosts=dns, port=s.port)
        trainers = [names[tasks.index(t)] for t in topology.trainers(tasks)]
    else:
        names, tasks = [cloud.vm_name(s, sweep.name, config.id)], [None]
        trainers = list(names)

    create = ["gcloud", "compute", "instances", "create", *names, *s.where]
    create.append(f"--machine-type={mtype}")
    if gpu:
        create += [f"--accelerator=type={gpu},count={count}"]
    if has_gpu:
        create += ["--maintenance-policy=TERMINATE", "--metadata=install-nvidia-driver=True"]
    create += [
        f"--image-family={family}",
        f"--image-project={project}",
        f"--boot-disk-size={s.boot_disk_gb}GB",
        "--scopes=cloud-platform",
    ]
    if s.spot:
        create += ["--provisioning-model=SPOT", "--instance-termination-action=DELETE"]
    create.append(f"--labels=tpubench-config={config.id}")

    setup = [create]
    script = cloud.install_script(s, "gpu" if has_gpu else "cpu")
    for name in names:  # the package file to each VM, then its install by hash
        if s.install.local:
            setup.append(["gcloud", "compute", "scp", s.install.local, f"{name}:~", *s.ssh])
        setup.append(["gcloud", "compute", "ssh", name, *s.ssh, f"--command={script}"])

    flags = remote_flags(config, s)
    log_file = f"tpubench-{config.id}.log"
    runs = []
    for name, task in zip(names, tasks, strict=True):
        task_flags = flags
        tf_config = None
        if task is not None:
            tf_config = topology.tf_config(tasks, task)
            task_flags = flags + [f"--strategy={topology.strategy_of(tasks)}"]
        script = cloud.run_script(task_flags, log_file, tf_config, config.command)
        runs.append((name, ["gcloud", "compute", "ssh", name, *s.ssh, f"--command={script}"]))

    local_logs = os.path.join(log_dir, config.id)
    collect = [
        ["gcloud", "compute", "scp", f"{n}:~/{log_file}", f"{local_logs}/{n}.log", *s.ssh]
        for n in names
    ]
    collect.append(cloud.rsync_records(config, s, sweep.results_dir))
    teardown = [["gcloud", "compute", "instances", "delete", *names, *s.where, "--quiet"]]
    return cloud.Plan(config.id, setup, runs, trainers, collect, teardown)


def vms(config) -> int:
    return _tasks(config)


def _tasks(config) -> int:
    return len(topology.task_roles(config.workers, config.ps)) if config.is_cluster else 1


def remote_flags(config, s: cloud.Settings, extra: dict | None = None) -> list[str]:
    """tpubench flags on a VM: results and model dir on gs://, the config's label."""
    flags = dict(config.train_flags())
    if s.spot and "pricing" not in flags:
        flags["pricing"] = "spot"
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


@executors.REGISTRY.register
class Gce(base.CloudExecutor):
    name = "gce"

    plan = staticmethod(plan)
    vms = staticmethod(vms)
