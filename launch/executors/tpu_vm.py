"""Cloud TPU VMs, single host or multi-host pods, through `gcloud compute tpus tpu-vm`.

A pod's hosts all run the same command (`--worker=all`).  A single-host
slice trains with `--tpu=local` (no API calls); a pod needs its TPU name
(`--tpu=NAME`), which TPUClusterResolver turns into every host's address.
"""

from __future__ import annotations

import os

from tpubench_launch import errors, executors, tpus
from tpubench_launch.executors import cloud, gcp, rented, shared


def plan(config, sweep, s: rented.Settings, log_dir: str) -> cloud.Plan:
    machine = config.settings["machine"]  # a TPU slice: checked against what tpu-vm declares
    if config.strategy not in (None, "auto", "tpu"):
        raise errors.UsageError(
            f"{config.id}: strategy {config.strategy} does not run on a TPU VM; accepted: tpu, auto"
        )
    tpu = tpus.parse(machine)
    name = rented.vm_name(s, sweep.name, config.id)
    base = ["gcloud", "compute", "tpus", "tpu-vm"]
    runtime = s.tpu_runtime or tpus.RUNTIMES[tpu.generation]
    create = [*base, "create", name, *s.where, f"--accelerator-type={tpu.accelerator_type}"]
    create += [f"--version={runtime}"]
    if s.spot:
        create.append("--spot")
    create.append(f"--labels=tpubench-config={config.id}")
    every = "--worker=all"
    setup = [create]
    install = cloud.install_script(s, "tpu")
    if s.install.local:  # the package file to every host, then its install by hash
        setup.append([*base, "scp", s.install.local, f"{name}:", every, *s.ssh])
    setup.append([*base, "ssh", name, every, *s.ssh, f"--command={install}"])

    # --tpu=local makes no API calls but sees only its own host's chips.
    flags = shared.remote_flags(config, s, {"tpu": name if tpu.is_pod else "local"})
    log_file = f"tpubench-{config.id}.log"
    script = cloud.run_script(flags, log_file, command=config.command)
    run = (name, [*base, "ssh", name, every, *s.ssh, f"--command={script}"])

    local_logs = os.path.join(log_dir, config.id)
    collect = [
        [
            *base,
            "scp",
            f"{name}:~/{log_file}",
            f"{local_logs}/{name}-w{i}.log",
            f"--worker={i}",
            *s.ssh,
        ]
        for i in range(tpu.hosts)
    ]
    collect.append(gcp.rsync_records(config, s, sweep.results_dir))
    teardown = [[*base, "delete", name, *s.where, "--quiet"]]
    notes = [f"{tpu.accelerator_type}: {tpu.chips} chips on {tpu.hosts} host(s)"]
    return cloud.Plan(config.id, setup, [run], [name], collect, teardown, notes)


def vms(config) -> int:
    return 1  # a slice is priced whole, whatever its host count


@executors.REGISTRY.register
class TpuVm(gcp.Gcp):
    name = "tpu-vm"
    devices = ("tpu",)
    tpu_slices = ("single-host", "multi-host")  # a pod runs --worker=all
    machine_example = "gcp:tpu-v5e-8"

    plan = staticmethod(plan)
    vms = staticmethod(vms)
