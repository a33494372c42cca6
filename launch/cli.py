"""`tpubench-launch SUBCOMMAND [options] [-- TRAIN_FLAGS...]`: the launcher's edge.

argparse rather than absl: the launcher has subcommands, and everything
after `--` is handed to `tpubench train` untouched, which absl's global flag
registry cannot express without defining tpubench's flags a second time.
Every LaunchError becomes one line on stderr and its exit code.
"""

from __future__ import annotations

import argparse
import sys

from tpubench.core import bounds
from tpubench.core import errors as core_errors
from tpubench_launch import arg_types, commands, executor_list, executors
from tpubench_launch.k8s import render

PROG = "tpubench-launch"


def parser() -> argparse.ArgumentParser:
    p = arg_types.Parser(
        prog=PROG,
        description="Run tpubench on local clusters, sweeps, cloud VMs and GKE.",
        epilog="Flags after `--` go to `tpubench train` unchanged. See docs/launch.md.",
    )
    sub = p.add_subparsers(dest="command", metavar="SUBCOMMAND", parser_class=arg_types.Parser)
    sub.required = True

    lc = sub.add_parser(
        "local-cluster",
        help="a real tf.distribute cluster on localhost ports: -- TRAIN_FLAGS",
    )
    lc.add_argument("--workers", type=arg_types.whole, required=True, help="worker tasks (>= 1)")
    lc.add_argument(
        "--ps",
        type=arg_types.whole,
        default=0,
        help="parameter servers; > 0 adds a chief (default 0)",
    )
    lc.add_argument("--log-dir", help="per-task logs (default RESULTS_DIR/logs/CLUSTER_ID)")
    lc.add_argument(
        "--timeout", type=arg_types.seconds, help="stop the cluster after this many seconds"
    )
    lc.add_argument(
        "--grace", type=arg_types.seconds, default=15.0, help="seconds between SIGTERM and SIGKILL"
    )
    lc.add_argument(
        "--gpus-per-worker",
        type=arg_types.whole,
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
        type=arg_types.whole,
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

    executor_list.add(sub)

    render.add(sub)
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
            return executor_list.run(args)
        return render.run(args, passthrough)
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
