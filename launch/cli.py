"""`tpubench-launch SUBCOMMAND [options] [-- TRAIN_FLAGS...]`: the launcher's edge.

argparse rather than absl: the launcher has subcommands, and everything
after `--` is handed to `tpubench train` untouched, which absl's global flag
registry cannot express without defining tpubench's flags a second time.
Every LaunchError becomes one line on stderr and its exit code.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from tpubench.children import command
from tpubench.core import bounds
from tpubench.core import errors as core_errors
from tpubench_launch import commands, engines, errors, executors

PROG = "tpubench-launch"


class _Parser(argparse.ArgumentParser):
    """argparse with its errors as one line (exit 2), like the rest of tpubench."""

    def error(self, message):
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} must be >= 0")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} must be > 0")
    return value


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="Run tpubench on local clusters, sweeps, cloud VMs and GKE.",
        epilog="Flags after `--` go to `tpubench train` unchanged. See docs/launch.md.",
    )
    sub = p.add_subparsers(dest="command", metavar="SUBCOMMAND", parser_class=_Parser)
    sub.required = True

    lc = sub.add_parser(
        "local-cluster",
        help="a real tf.distribute cluster on localhost ports: -- TRAIN_FLAGS",
    )
    lc.add_argument("--workers", type=_positive, required=True, help="worker tasks (>= 1)")
    lc.add_argument(
        "--ps", type=_positive, default=0, help="parameter servers; > 0 adds a chief (default 0)"
    )
    lc.add_argument("--log-dir", help="per-task logs (default RESULTS_DIR/logs/CLUSTER_ID)")
    lc.add_argument("--timeout", type=_seconds, help="stop the cluster after this many seconds")
    lc.add_argument(
        "--grace", type=_seconds, default=15.0, help="seconds between SIGTERM and SIGKILL"
    )
    lc.add_argument(
        "--gpus-per-worker",
        type=_positive,
        default=0,
        help="give worker i GPUs i*N..i*N+N-1 (CUDA_VISIBLE_DEVICES); the chief of a "
        "parameter-server cluster gets none (default 0: every task sees every GPU)",
    )
    lc.add_argument(
        "--ps-device",
        choices=("cpu", "gpu", "any"),
        default="any",
        help="where parameter servers keep the variables: cpu (they see no GPU), gpu (each "
        "sees one GPU after the workers' ones), any (default: the environment as it is)",
    )

    sw = sub.add_parser(
        "sweep", help="run a sweep file (grid or runs) locally, on GCE, TPU VMs or GKE"
    )
    sw.add_argument("file", help="the sweep file (YAML)")
    sw.add_argument(
        "--executor",
        default=executors.DEFAULT,
        help=executors.REGISTRY.help_text(executors.DEFAULT),
    )
    sw.add_argument("--dry-run", action="store_true", help="print the preview and commands only")
    sw.add_argument("--results-dir", help="override the sweep file's results_dir")
    sw.add_argument(
        "--max-cost", type=float, help="refuse to launch when the estimated USD total is higher"
    )
    sw.add_argument(
        "--max-configs",
        type=_positive,
        default=10_000,
        help="refuse a grid that expands to more configurations (default 10000)",
    )
    sw.add_argument(
        "--trust-code",
        action="store_true",
        help="run a sweep file whose flags name model_module or flagfile (code every run "
        "imports) or whose cloud: chooses code (package, package_index_version, image, "
        "image_family, image_project); without it such a file is refused",
    )

    ex = sub.add_parser(
        "executors", help="list the sweep executors and what each can host (devices, clusters)"
    )
    ex.add_argument(
        "--json", action="store_true", help="one JSON list, as `tpubench study` reads it"
    )
    ex.add_argument(
        "--check-cloud",
        metavar="FILE",
        help="also check FILE's cloud settings against the launcher's formats: each "
        "executor's `problem` in the JSON (the first value it refuses, or null)",
    )
    ex.add_argument(
        "--prefix", help="with --check-cloud: how a problem line starts (default 'FILE: ')"
    )

    gk = sub.add_parser("gke", help="render (and apply) GKE manifests: -- TRAIN_FLAGS")
    gk.add_argument("--name", required=True, help="prefix of every Kubernetes object")
    gk.add_argument("--image", required=True, help="a container image with tpubench installed")
    gk.add_argument("--workers", type=_positive, default=1, help="worker tasks (default 1)")
    gk.add_argument("--ps", type=_positive, default=0, help="parameter servers (default 0)")
    gk.add_argument("--gpus", type=_positive, default=0, help="GPUs per task (nvidia.com/gpu)")
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
    gk.add_argument("--cpus", type=_positive, help="whole cores per pod (requests = limits)")
    gk.add_argument("--memory", type=_positive, help="GiB of memory per pod (requests = limits)")
    gk.add_argument(
        "--ttl",
        type=_positive,
        default=86400,
        help="seconds a finished JobSet/TFJob keeps its pods and logs (default 86400)",
    )
    gk.add_argument(
        "--max-restarts",
        type=_positive,
        default=0,
        help="jobset: recreate every pod up to N times after a failure (default 0)",
    )
    gk.add_argument("--dry-run", action="store_true", help="print the manifests only")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    own, passthrough = argv, []
    if "--" in argv:
        cut = argv.index("--")
        own, passthrough = argv[:cut], argv[cut + 1 :]
    args = parser().parse_args(own)
    name = f"{PROG} {args.command}"
    if passthrough and args.command == "sweep":
        print(
            f"{name}: error: sweep takes no `--` flags; put them under flags: in the file",
            file=sys.stderr,
        )
        return 2
    try:
        for key, value in sorted(vars(args).items()):  # every number within its range
            bounds.check_flag(key, value, "--" + key.replace("_", "-"))
        commands.check_gs_urls(argv)
        if args.command == "local-cluster":
            return _local_cluster(args, passthrough, [PROG, *argv])
        if args.command == "sweep":
            from tpubench_launch.sweep import run as sweep_run

            sweep_run.run(
                args.file,
                args.executor,
                args.dry_run,
                args.results_dir,
                args.max_cost,
                [PROG, *argv],
                trust_code=args.trust_code,
                max_configs=args.max_configs,
            )
            return 0
        if args.command == "executors":
            return _executors(args)
        return _gke(args, passthrough)
    except core_errors.TpubenchError as e:  # the launcher's errors are tpubench's (errors.py)
        where = getattr(e, "record_path", None)
        print(
            f"{name}: error: {e}" + (f" [run record: {where}]" if where else ""),
            file=sys.stderr,
            flush=True,
        )
        return e.exit_code
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return 130


def _local_cluster(args, passthrough, argv) -> int:
    from tpubench_launch.cluster import local as local_cluster

    opts = local_cluster.Options(
        workers=args.workers,
        ps=args.ps,
        train_args=tuple(passthrough),
        log_dir=args.log_dir,
        timeout=args.timeout,
        grace=args.grace,
        gpus_per_worker=args.gpus_per_worker,
        ps_device=args.ps_device,
    )
    local_cluster.run(opts, argv)
    return 0


def _executors(args) -> int:
    """Every registered executor and what it hosts: a JSON list, or one line each; with
    --check-cloud=FILE, each one's first refused value of FILE (a line, or exit 2)."""
    import json

    from tpubench_launch import cloud_file
    from tpubench_launch.executors import base

    if args.prefix is not None and args.check_cloud is None:
        raise errors.UsageError("--prefix goes with --check-cloud=FILE")
    found = base.published(args.check_cloud, args.prefix)
    if args.json:
        print(json.dumps(found))
        return 0
    for e in found:
        gens = e.get("tpu_generations") or []
        tpu = f" ({', '.join(e['tpu_slices'])} TPU slices" if e["tpu_slices"] else ""
        tpu += (f": {', '.join(gens)})" if gens else ")") if tpu else ""
        clusters = ", ".join(e["clusters"]) or "none"
        where = " across machines" if e["multi_host"] else ""
        if e["multi_host"] and e["one_machine_clusters"]:
            where += f" (or on one machine: {', '.join(e['one_machine_clusters'])})"
        needs = f"; cloud: {', '.join(e['required'])}" if e["required"] else ""
        print(
            f"{e['name']}: {', '.join(e['devices'])}{tpu}; clusters: {clusters}{where}; runs "
            f"{', '.join(e['subcommands'])}{needs}"
        )
    if args.check_cloud is not None:
        refused = [e["problem"] for e in found if e["problem"]]
        if refused:
            raise errors.UsageError(refused[0])
        print(f"{cloud_file.where_of(args.check_cloud)}every value keeps the launcher's formats")
    return 0


def _gke(args, passthrough) -> int:
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
