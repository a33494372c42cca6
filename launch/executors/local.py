"""Runs a sweep's configurations one after another on this machine.

`threads: N` pins the run to the first N CPUs this launcher may use
(os.sched_setaffinity in the child, before it execs) and sizes both of
TensorFlow's thread pools to N, so a 1-vCPU vs 2-vCPU study runs here.
Cluster strategies run as a real local cluster (cluster/local.py).  Every run's
output goes to RESULTS_DIR/logs/CONFIG_ID.log; records land in RESULTS_DIR.
"""

from __future__ import annotations

import contextlib
import os
import sys

from tpubench.children import command, labels, process
from tpubench_launch import commands, errors, executors
from tpubench_launch.cluster import local as local_cluster
from tpubench_launch.executors import base
from tpubench_launch.sweep import resume


def available_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def pinned(config) -> frozenset[int] | None:
    """The CPU ids a configuration runs on (None: not pinned).

    Raises:
      UsageError: more threads than CPUs available here.
    """
    n = config.settings.get("threads")
    if n is None:
        return None
    cpus = available_cpus()
    if n > len(cpus):
        raise errors.UsageError(
            f"{config.id} ({config.describe()}): threads={n} needs {n} CPUs but this machine "
            f"lets tpubench-launch use {len(cpus)}; accepted: 1..{len(cpus)}"
        )
    return frozenset(cpus[:n])


def run_flags(config, results_dir: str) -> dict:
    if config.command == "tune":  # tune names, places and resumes its own trials
        return {**config.train_flags(), "results_dir": results_dir}
    if config.command == "infer":  # infer's --model_dir names weights to read
        return {
            **config.train_flags(),
            "results_dir": results_dir,
            "run_label": config.record_label,
        }
    return {
        **config.train_flags(),
        "results_dir": results_dir,
        "model_dir": labels.model_dir(results_dir, config.id),
        "run_label": config.record_label,
    }


def command_line(config, results_dir: str) -> str:
    """What runs for CONFIG, as a shell line (the dry run prints it)."""
    args = command.flags_argv(run_flags(config, results_dir))
    cpus = pinned(config)
    pin = command.taskset(cpus)
    if config.is_cluster:
        shape = config.cluster_args()
        return command.shell([*pin, "tpubench-launch", "local-cluster", *shape, "--", *args])
    return command.shell([*pin, "tpubench", config.command, *args])


def run_one(config, results_dir: str, launcher_argv: list[str]) -> tuple[int, str]:
    """Runs CONFIG to the end; returns (exit code, one-line outcome).

    Raises:
      Interrupted: Ctrl-C/SIGTERM (the run was stopped and recorded first).
    """
    log_dir = os.path.join(results_dir, "logs")
    args = command.flags_argv(run_flags(config, results_dir))
    cpus = pinned(config)
    if config.is_cluster:
        opts = local_cluster.Options(
            workers=config.workers,
            ps=config.ps,
            train_args=tuple(args),
            log_dir=os.path.join(log_dir, config.id),
            cpus=cpus,
            echo=False,
            gpus_per_worker=config.settings.get("gpus_per_worker", 0),
            ps_device=config.settings.get("ps_device", "any"),
        )
        try:
            with open(os.devnull, "w") as quiet:
                local_cluster.run(opts, launcher_argv, out=quiet)
        except errors.TaskFailed as e:
            return e.exit_code, str(e)
        return 0, _summary(results_dir, config)
    log = os.path.join(log_dir, f"{config.id}.log")
    with process.StopRequests() as stop:
        # SIGTERM on a signal: tpubench checkpoints and records `interrupted`.
        try:
            code = process.run(
                [*commands.local_tpubench(), config.command, *args], log, stop, cpus=cpus
            )
        except process.StartFailed as e:  # the host refused the fork: this one failed
            return e.exit_code, str(e)
    if stop.signal_name:
        raise errors.Interrupted(
            f"interrupted by {stop.signal_name} during {config.id}; run the same "
            "command again to resume (finished configurations are skipped)"
        )
    if code != 0:
        said = process.last_error_line(log) or process.describe_exit(code)
        return errors.exit_code_of(code), f"{said} (log: {log})"
    return 0, _summary(results_dir, config)


def _summary(results_dir: str, config) -> str:
    """Its latest record: one of its own run (sweep/resume.py), whatever else has its label."""
    model_dir = run_flags(config, results_dir).get("model_dir")
    found = resume.find(results_dir, [config], lambda c: model_dir).own.get(config.id)
    if not found:
        return "finished, but no record of what it asks carries its label"
    rate = found[-1].run.results.examples_per_sec
    shown = f"{rate:,.1f} examples/s" if rate else "no throughput"
    return f"{found[-1].run.status}: {shown}; record: {found[-1].path}"


def execute(sweep, todo, launcher_argv, out=None) -> list[tuple[object, int, str]]:
    """Runs TODO in order with a progress bar; returns (config, exit code, outcome) each."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    out = out or sys.stdout
    for c in todo:
        pinned(c)  # every threads value fits this machine, before anything runs
    results = []
    console = Console(file=out, highlight=False, markup=False, soft_wrap=True)
    columns = (
        TextColumn("sweep {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    # On a terminal a live bar under the per-configuration lines; elsewhere
    # (CI logs, files) the "[i/N]" lines are the progress.
    bar = Progress(*columns, console=console, transient=True) if console.is_terminal else None
    with bar or contextlib.nullcontext():
        task = bar.add_task(sweep.name, total=len(todo)) if bar else None
        for i, config in enumerate(todo, 1):
            console.print(f"[{i}/{len(todo)}] {config.id} {config.describe()} ...")
            code, outcome = run_one(config, sweep.results_dir, launcher_argv)
            status = "done" if code == 0 else f"FAILED (exit {code})"
            console.print(f"[{i}/{len(todo)}] {config.id} {status}: {outcome}")
            results.append((config, code, outcome))
            if bar:
                bar.advance(task)
    return results


@executors.REGISTRY.register
class Local(base.Executor):
    name = "local"
    devices = ("cpu", "gpu", "tpu")  # whatever this host has
    tpu_slices = ("single-host",)
    clusters = ("multi_worker", "parameter_server")  # tasks on this host
    one_machine_clusters = clusters

    def plans(self, sweep, todo, settings, log_dir) -> list:
        for c in todo:
            cpus = pinned(c)  # checks a vCPU count against this host's cores
            if c.is_cluster:  # and a cluster's processes against what this host holds
                shape = f"workers={c.workers}" + (f", ps={c.ps}" if c.ps else "")
                local_cluster.check_room(c.workers, c.ps, f"{sweep.path}: {c.id} ({shape})", cpus)
        return [None] * len(todo)

    def model_dir(self, config, settings, sweep) -> str | None:
        return run_flags(config, sweep.results_dir).get("model_dir")

    def preview_title(self, pricing, settings) -> str:
        return (
            f"cost preview ({pricing}; what these runs would cost on the machines named; "
            "running them here costs nothing extra):"
        )

    def dry_run_lines(self, config, plan, results_dir) -> list[str]:
        return [command_line(config, results_dir)]

    def execute(self, sweep, todo, plans, argv, log_dir, out) -> list:
        return execute(sweep, todo, argv, out)
