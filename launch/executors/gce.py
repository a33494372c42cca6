"""Compute Engine VMs (GPU or CPU only) through gcloud: one VM per task.

A configuration's machine names the VM: `gcp:n1-standard-8+1xgcp:t4` is an
n1-standard-8 with one T4; `gcp:c2-standard-8` is CPU only; `gcp:a2-*`,
`gcp:a3-*` and `gcp:g2-*` carry their GPUs.  Cluster strategies get one VM
per task, and TF_CONFIG names each by its internal DNS name
(VM.ZONE.c.PROJECT.internal), which GCE resolves inside the VPC; with
`one_machine: true` the one VM runs every task itself
(`tpubench-launch local-cluster`), parameter servers beside the GPUs.
"""

from __future__ import annotations

import os

from tpubench_launch import executors, topology
from tpubench_launch.executors import cloud, gcp, rented, shared

IMAGES = {
    "gpu": ("common-cu124-debian-11-py310", "deeplearning-platform-release"),
    "cpu": ("debian-12", "debian-cloud"),
}


def plan(config, sweep, s: rented.Settings, log_dir: str) -> cloud.Plan:
    # What gce hosts (no TPU, its clusters) was checked against its declaration (base.plans).
    mtype, gpu, count = shared.shape(config.settings["machine"])
    has_gpu = bool(gpu) or mtype.startswith(shared.GPU_MACHINE_FAMILIES)
    family, project = IMAGES["gpu" if has_gpu else "cpu"]
    family, project = s.image_family or family, s.image_project or project

    if config.is_cluster and not config.one_machine:
        roles = topology.task_roles(config.workers, config.ps)
        names = [rented.vm_name(s, sweep.name, config.id, f"{r[0]}{i}") for r, i in roles]
        dns = [f"{n}.{s.zone}.c.{s.project}.internal" for n in names]
        tasks = topology.plan(config.workers, config.ps, hosts=dns, port=s.port)
        trainers = [names[tasks.index(t)] for t in topology.trainers(tasks)]
    else:
        names, tasks = [rented.vm_name(s, sweep.name, config.id)], [None]
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

    flags = shared.remote_flags(config, s)
    log_file = f"tpubench-{config.id}.log"
    runs = []
    for name, task in zip(names, tasks, strict=True):
        task_flags = flags
        tf_config = None
        if task is not None:
            tf_config = topology.tf_config(tasks, task)
            task_flags = flags + [f"--strategy={topology.strategy_of(tasks)}"]
        shape = config.cluster_args() if config.one_machine else None
        script = cloud.run_script(task_flags, log_file, tf_config, config.command, shape)
        runs.append((name, ["gcloud", "compute", "ssh", name, *s.ssh, f"--command={script}"]))

    local_logs = os.path.join(log_dir, config.id)
    collect = [
        ["gcloud", "compute", "scp", f"{n}:~/{log_file}", f"{local_logs}/{n}.log", *s.ssh]
        for n in names
    ]
    collect.append(gcp.rsync_records(config, s, sweep.results_dir))
    teardown = [["gcloud", "compute", "instances", "delete", *names, *s.where, "--quiet"]]
    return cloud.Plan(config.id, setup, runs, trainers, collect, teardown)


def vms(config) -> int:
    return _tasks(config)


def _tasks(config) -> int:
    if config.is_cluster and not config.one_machine:
        return len(topology.task_roles(config.workers, config.ps))
    return 1


@executors.REGISTRY.register
class Gce(gcp.Gcp):
    name = "gce"
    devices = ("cpu", "gpu")
    clusters = ("multi_worker", "parameter_server")  # one VM per task
    multi_host = True
    one_machine_clusters = clusters  # or every task on one VM, as a local cluster there

    plan = staticmethod(plan)
    vms = staticmethod(vms)
