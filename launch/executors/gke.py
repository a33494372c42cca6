"""GKE through kubectl: each configuration is one Job (CPU/GPU) or one JobSet (a TPU slice).

The manifests come from the engine registry `tpubench-launch gke` uses
(engines.for_one_pod: a Job, or a JobSet on a TPU slice), so a sweep's pod
looks like a hand-launched one.  A run is a cloud.Plan like a VM's: the
rendered manifest is written under the sweep's logs, `kubectl apply -f`
starts it, a waiter (`python -m tpubench_launch.k8s.wait`) polls the object
until it completed or failed and
keeps the pods' logs, the records come back from the bucket with `gcloud
storage rsync`, and `kubectl delete -f` always runs.  The cluster is the one
kubectl's current context names; node pools (GPUs, TPU slices) must exist.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import shutil

from tpubench.children import command
from tpubench_launch import engines, errors, executors, tpus
from tpubench_launch.executors import cloud, gcp, rented, shared
from tpubench_launch.k8s import objects, sizing, tpu

SPOT_LABEL = "cloud.google.com/gke-spot"


def check_kubectl() -> None:
    if shutil.which("kubectl") is None:
        raise errors.CloudError(
            "kubectl not found on PATH: install it (gcloud components install kubectl) and "
            "point it at the cluster (gcloud container clusters get-credentials), or add "
            "--dry-run to print the commands"
        )


def object_name(s: rented.Settings, sweep_name: str, config_id: str) -> str:
    """A valid, deterministic Kubernetes name (<= 40 characters: the builders add suffixes).

    A hash of the id, not the id itself: run labels may hold '_' and '.',
    which Kubernetes names may not.
    """
    slug = re.sub(r"[^a-z0-9-]+", "-", f"{s.name_prefix}-{sweep_name}".lower()).strip("-")
    if not slug[:1].isalpha():
        slug = "t" + slug
    tail = hashlib.sha256(config_id.encode()).hexdigest()[:8]
    return f"{slug[:31].rstrip('-')}-{tail}"


def _refuse(config, why: str) -> errors.UsageError:
    return errors.UsageError(f"{config.id}: {why}")


def plan(config, sweep, s: rented.Settings, log_dir: str) -> cloud.Plan:
    # No clusters, no tune, single-host v4+ slices: what gke declares, checked in base.plans.
    machine = config.settings["machine"]
    name = object_name(s, sweep.name, config.id)
    # The builders add --tpu=local and --run_label themselves.
    flags = [
        f
        for f in shared.remote_flags(config, s)
        if not f.startswith(("--run_label=", "--tpu=", "--notpu"))
    ]
    request = engines.Request(
        name=name,
        image=s.image,
        args=flags,
        queue=s.queue,
        run_label=config.record_label,
        subcommand=config.command,
    )
    notes = []
    if machine.lower().startswith("gcp:tpu-"):
        request = dataclasses.replace(request, tpu=machine)
        engine = engines.for_one_pod(request)
        docs = engine.manifests(request)
        pool = tpu.node_pool_command(name, machine, None, "CLUSTER", s.zone or "ZONE", s.spot)
        notes.append(
            f"{tpus.parse(machine).accelerator_type} on a TPU node pool; one like: "
            + command.shell(pool)
        )
    else:
        mtype, gpu, count = _shape(config, machine)
        try:
            size = sizing.size_for(mtype)
        except errors.UsageError as e:
            raise _refuse(config, str(e).replace(" or give --cpus and --memory", "")) from None
        threads = config.train_flags().get("num_intra_threads")
        capped = ""
        if threads:  # the cores the run was sized for, not a share of a busy node
            if int(threads) > size.cpus:
                # A node never offers pods all its vCPUs: asking for them would never schedule.
                capped = f" ({threads} threads; one {mtype} node offers pods {size.cpus} cores)"
            cores = min(int(threads), size.cpus)
            size = sizing.PodSize(cores, size.memory_gib, f"{threads} threads")
        request = dataclasses.replace(request, gpus=count, gpu_type=gpu, size=size)
        engine = engines.for_one_pod(request)
        docs = engine.manifests(request)
        notes.append(
            f"{mtype}: " + (f"{count} x {gpu}" if gpu else "CPU only") + f" per pod, "
            f"{size.cpus} cores and {size.memory_gib} GiB (requests = limits){capped}"
        )
    pod = engine.pod_spec(docs[0])
    if s.spot:
        pod.setdefault("nodeSelector", {})[SPOT_LABEL] = "true"
    c = pod["containers"][0]
    notes.append("pod runs: " + command.shell([*c["command"], *c["args"]]))
    here = os.path.join(log_dir, config.id)
    manifest = os.path.join(here, f"{name}.yaml")
    text = objects.render(docs, [f"tpubench-launch sweep {sweep.name}: {config.id}"])
    kubectl = ["kubectl", *([f"--namespace={s.namespace}"] if s.namespace else [])]
    waiter = command.python_argv("tpubench_launch.k8s.wait", f"--kind={engine.name}")
    waiter += [f"--name={name}"]
    waiter += [*([f"--namespace={s.namespace}"] if s.namespace else [])]
    waiter += [f"--logs={os.path.join(here, name + '.pods.log')}"]
    return cloud.Plan(
        config.id,
        setup=[[*kubectl, "apply", "-f", manifest]],
        tasks=[(name, waiter)],
        trainers=[name],
        collect=[gcp.rsync_records(config, s, sweep.results_dir)],
        teardown=[[*kubectl, "delete", "-f", manifest, "--ignore-not-found"]],
        notes=notes,
        files={manifest: text},
    )


def _shape(config, machine: str) -> tuple[str, str | None, int]:
    try:
        mtype, gpu, count = shared.shape(machine)
    except errors.UsageError as e:
        raise _refuse(config, str(e).replace("--executor=gce", "--executor=gke")) from None
    if not gpu and mtype.startswith(shared.GPU_MACHINE_FAMILIES):
        raise _refuse(
            config,
            f"machine {machine!r}: on GKE name the GPUs the pod asks for, e.g. "
            "gcp:a2-highgpu-1g+1xgcp:a100",
        )
    return mtype, gpu, count


def vms(config) -> int:
    return 1  # one pod (or one slice) per configuration


@executors.REGISTRY.register
class Gke(gcp.Gcp):
    name = "gke"
    title = "GKE"
    devices = ("cpu", "gpu", "tpu")
    tpu_slices = ("single-host",)  # a node pool does not answer the Cloud TPU API
    tpu_generations = tuple(tpus.GKE_ACCELERATORS)  # GKE has no v2 or v3 TPU node pools
    subcommands = ("train", "infer")
    # gke talks to the cluster kubectl points at: no project or zone of its own.
    required = ("bucket", "image")
    example = "cloud: {bucket: gs://my-bucket/tb, image: us-docker.pkg.dev/my-project/tb/tpubench}"
    own_settings = ("image", "namespace", "queue")
    machine_example = "gcp:n1-standard-8+1xgcp:t4 or gcp:tpu-v5e-8"
    machines = "node"
    setup = "schedule, pull the image and delete"
    installs_package = False  # the image holds tpubench

    def code_lines(self, settings) -> list[str]:
        return [f"# every pod runs the container image {settings.image} (cloud.image)"]

    def check_tools(self) -> None:
        gcp.check_gcloud()
        check_kubectl()

    plan = staticmethod(plan)
    vms = staticmethod(vms)
