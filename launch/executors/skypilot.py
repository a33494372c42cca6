"""SkyPilot managed jobs: one task per configuration, recovered by SkyPilot after preemption.

Each configuration becomes a SkyPilot task YAML (resources from the catalog
machine: instance type and GPUs, or a single-host TPU slice; `use_spot`;
setup installs tpubench; run is `tpubench train` with results and model dir
on the bucket) launched with `sky jobs launch`, so a preempted spot cell is
restarted by SkyPilot and resumes from its checkpoint in the bucket.

A multi_worker configuration is one task on `num_nodes` VMs: SkyPilot runs
the same `run` on every node, with the nodes' IPs (SKYPILOT_NODE_IPS, one
per line, rank order) and the node's rank (SKYPILOT_NODE_RANK) in its
environment, and each node builds its TF_CONFIG from them.
"""

from __future__ import annotations

import os

from tpubench.children import command
from tpubench.core import safe_yaml
from tpubench_launch import errors, executors, tpus
from tpubench_launch.executors import cloud, gcp, rented, shared

# GCE accelerator type -> SkyPilot accelerator name.
ACCELERATORS = {
    "nvidia-tesla-k80": "K80",
    "nvidia-tesla-p4": "P4",
    "nvidia-tesla-p100": "P100",
    "nvidia-tesla-v100": "V100",
    "nvidia-tesla-t4": "T4",
    "nvidia-l4": "L4",
    "nvidia-tesla-a100": "A100",
    "nvidia-a100-80gb": "A100-80GB",
    "nvidia-h100-80gb": "H100",
}


def resources(config, s: rented.Settings) -> tuple[dict, str]:
    """(SkyPilot resources, tpubench extra to install) for CONFIG's machine: one that
    skypilot hosts (its declaration, checked in base.plans: no parameter servers, since a
    SkyPilot job ends when every node's run does; single-host TPU slices)."""
    machine = config.settings["machine"]
    out: dict = {"cloud": "gcp"}
    if s.zone:
        out["zone"] = s.zone
    if machine.lower().startswith("gcp:tpu-"):
        t = tpus.parse(machine)
        out["accelerators"] = f"tpu-{t.accelerator_type}"
        runtime = s.tpu_runtime or tpus.RUNTIMES[t.generation]
        out["accelerator_args"] = {"runtime_version": runtime, "tpu_vm": True}
        extra = "tpu"
    else:
        mtype, gpu, count = shared.shape(machine)
        out["instance_type"] = mtype
        if gpu:
            out["accelerators"] = {ACCELERATORS[gpu]: count}
        extra = "gpu" if gpu or mtype.startswith(shared.GPU_MACHINE_FAMILIES) else "cpu"
    out["use_spot"] = bool(s.spot)
    out["disk_size"] = s.boot_disk_gb
    return out, extra


def task(config, sweep, s: rented.Settings) -> dict:
    """The SkyPilot task YAML (as a mapping) of one configuration."""
    res, extra = resources(config, s)
    is_tpu = "accelerator_args" in res
    extra_flags = {"tpu": "local"} if is_tpu else None
    if config.is_cluster:
        extra_flags = {"strategy": "multi_worker"}
    flags = shared.remote_flags(config, s, extra_flags)
    doc = {"name": rented.vm_name(s, sweep.name, config.id)}
    if config.is_cluster:
        doc["num_nodes"] = config.workers
    doc["resources"] = res
    setup = cloud.install_script(s, extra)
    if s.install.local:  # the package file on every node, installed by its hash
        doc["file_mounts"] = {f"~/{s.install.remote}": s.install.local}
    doc["setup"] = setup
    run = cloud.run_script(flags, f"tpubench-{config.id}.log")
    doc["run"] = (tf_config_script(s.port) + run) if config.is_cluster else run
    return doc


# Run on each node: its TF_CONFIG from SkyPilot's node list (rank order) and its rank.
_TF_CONFIG = (
    "import json, os; "
    'ips = os.environ["SKYPILOT_NODE_IPS"].split(); '
    'rank = int(os.environ["SKYPILOT_NODE_RANK"]); '
    'cluster = {"worker": [ip + ":PORT" for ip in ips]}; '
    'print(json.dumps({"cluster": cluster, "task": {"type": "worker", "index": rank}}, '
    'separators=(",", ":")))'
)


def tf_config_script(port: int) -> str:
    """Shell exporting TF_CONFIG: worker RANK of the nodes SkyPilot started, at PORT."""
    code = _TF_CONFIG.replace("PORT", str(int(port)))
    python = command.shell(command.installed_python("python3", "-c", code))
    return f'export TF_CONFIG="$({python})"; '


def plan(config, sweep, s: rented.Settings, log_dir: str) -> cloud.Plan:

    doc = task(config, sweep, s)
    path = os.path.join(sweep.results_dir, "skypilot", f"{config.id}.yaml")
    text = safe_yaml.dumps(doc)
    launch = ["sky", "jobs", "launch", "--yes", f"--name={doc['name']}", path]
    collect = [gcp.rsync_records(config, s, sweep.results_dir)]
    return cloud.Plan(
        config.id,
        setup=[],
        tasks=[(doc["name"], launch)],
        trainers=[doc["name"]],
        collect=collect,
        teardown=[],
        notes=[f"task file {path}:"] + text.splitlines(),
        files={path: text},
    )


def vms(config) -> int:
    return config.workers if config.is_cluster else 1


def check_sky() -> None:
    import shutil

    if shutil.which("sky") is None:
        raise errors.CloudError(
            "sky not found on PATH: pip install 'skypilot[gcp]' and run `sky check gcp`, or add "
            "--dry-run to print the task YAMLs"
        )


@executors.REGISTRY.register
class SkyPilot(gcp.Gcp):
    name = "skypilot"
    devices = ("cpu", "gpu", "tpu")
    tpu_slices = ("single-host",)
    clusters = ("multi_worker",)  # num_nodes; a job ends when every node's run does
    multi_host = True

    required = ("bucket",)  # SkyPilot chooses the zone; the project is gcloud's
    example = "cloud: {bucket: gs://my-bucket/tb}"
    machine_example = "gcp:n1-standard-8+1xgcp:t4 or gcp:tpu-v5e-8"

    def check_tools(self) -> None:
        gcp.check_gcloud()
        check_sky()

    plan = staticmethod(plan)
    vms = staticmethod(vms)
