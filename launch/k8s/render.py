"""`tpubench-launch gke NAME -- TRAIN_FLAGS`: render (and apply) one run's GKE manifests.

The engine (engines/: job, jobset, tfjob, trainjob) builds the objects; each
pod is sized from a machine type (k8s/sizing.py) or a TPU slice's host
(k8s/tpu.py); `--dry-run` prints them, otherwise `kubectl apply` runs them.
"""

from __future__ import annotations

import dataclasses

from tpubench.children import command
from tpubench_launch import arg_types, engines, errors


def add(sub) -> None:
    """The `gke` subcommand and its flags, on SUB (argparse subparsers)."""
    gk = sub.add_parser("gke", help="render (and apply) GKE manifests: -- TRAIN_FLAGS")
    gk.add_argument("--name", required=True, help="prefix of every Kubernetes object")
    gk.add_argument("--image", required=True, help="a container image with tpubench installed")
    gk.add_argument("--workers", type=arg_types.whole, default=1, help="worker tasks (default 1)")
    gk.add_argument("--ps", type=arg_types.whole, default=0, help="parameter servers (default 0)")
    gk.add_argument(
        "--gpus", type=arg_types.whole, default=0, help="GPUs per task (nvidia.com/gpu)"
    )
    gk.add_argument("--gpu-type", help="node selector value, e.g. nvidia-tesla-t4")
    gk.add_argument("--tpu", help="a single-host TPU slice, e.g. gcp:tpu-v5e-8")
    gk.add_argument("--tpu-topology", help="override the slice topology label, e.g. 2x4")
    gk.add_argument("--cluster", help="GKE cluster name for the TPU node-pool command")
    gk.add_argument("--zone", help="zone for the TPU node-pool command")
    gk.add_argument("--spot", action="store_true", help="spot TPU node pool")
    gk.add_argument(
        "--engine",
        choices=engines.REGISTRY.names(),
        help=engines.REGISTRY.help_text() + " (default: jobset with several tasks, job with one)",
    )
    gk.add_argument("--queue", help="a Kueue LocalQueue: Kueue admits the run when it fits")
    gk.add_argument(
        "--machine-type",
        help="GCE machine type each CPU/GPU task's node is (default n1-standard-8): every pod "
        "requests, and is limited to, the whole cores and memory one such node holds",
    )
    gk.add_argument("--cpus", type=arg_types.whole, help="whole cores per pod (requests = limits)")
    gk.add_argument(
        "--memory", type=arg_types.whole, help="GiB of memory per pod (requests = limits)"
    )
    gk.add_argument(
        "--ttl",
        type=arg_types.whole,
        default=86400,
        help="seconds a finished JobSet/TFJob keeps its pods and logs (default 86400)",
    )
    gk.add_argument(
        "--max-restarts",
        type=arg_types.whole,
        default=0,
        help="jobset: recreate every pod up to N times after a failure (default 0)",
    )
    gk.add_argument("--dry-run", action="store_true", help="print the manifests only")


def run(args, passthrough) -> int:
    """Renders the manifests; applies them unless --dry-run."""
    from tpubench_launch.k8s import objects, sizing, tpu

    req = engines.Request(
        name=args.name,
        image=args.image,
        args=passthrough,
        workers=args.workers,
        ps=args.ps,
        gpus=args.gpus,
        gpu_type=args.gpu_type,
        tpu=args.tpu,
        tpu_topology=args.tpu_topology,
        queue=args.queue,
        ttl=args.ttl,
        max_restarts=args.max_restarts,
    )
    engine = engines.REGISTRY.get(args.engine or engines.default(req))
    engine.check(req)
    comments = []
    size = None
    if args.cpus or args.memory or args.machine_type:
        if args.tpu and args.machine_type:
            raise errors.UsageError(
                f"--machine-type={args.machine_type} with --tpu: a TPU pod is sized from its "
                "slice's host; give --cpus/--memory to size it yourself"
            )
        size = sizing.sized(args.machine_type, args.cpus, args.memory)
    if args.tpu:
        if args.workers != 1 or args.ps or args.gpus:
            raise errors.UsageError("--tpu runs one TPU slice: drop --workers, --ps and --gpus")
        s, _ = tpu.tpu_slice(args.tpu, args.tpu_topology)
        host = tpu.tpu_host_type(s)
        size = size or sizing.size_for(host)
        said = (
            f"the pod: {size.cpus} cores, {size.memory_gib} GiB and {s.chips} TPU chips "
            f"(requests = limits), sized for {size.source}"
        )
        pool = tpu.node_pool_command(
            args.name,
            args.tpu,
            args.tpu_topology,
            args.cluster or "CLUSTER",
            args.zone or "ZONE",
            args.spot,
        )
        comments.append("TPU slice node pool: " + command.shell(pool))
    else:
        if args.gpu_type and not args.gpus:
            raise errors.UsageError(f"--gpu-type={args.gpu_type} needs --gpus=N (GPUs per task)")
        size = size or sizing.size_for(sizing.DEFAULT_MACHINE)
        said = (
            f"each pod: {size.cpus} cores, {size.memory_gib} GiB (requests = limits), sized for "
            f"{size.source}"
        )
    docs = engine.manifests(dataclasses.replace(req, size=size))
    text = objects.render(docs, [*comments, said])
    if args.dry_run:
        print(text, end="")
        return 0
    objects.apply(text)
    print(f"applied; watch with: kubectl get {engine.resource},pods -l tpubench/run={args.name}")
    return 0
