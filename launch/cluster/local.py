"""A real tf.distribute cluster on this machine: one `tpubench train` process per task.

Without parameter servers every task is a `worker` (worker 0 is the chief)
and tpubench builds MultiWorkerMirroredStrategy; with them the cluster is a
`chief` (the coordinator), workers and `ps` tasks, and tpubench builds
ParameterServerStrategy (worker and ps tasks serve until stopped).  Each
task gets its own TF_CONFIG and log file.

The chief writes the run record; the launcher then adds a `cluster` section
(tasks, roles, addresses, pids, exit codes, logs).  When a task dies, the
others are stopped at once (a surviving worker would otherwise wait forever
in a collective) and the record says which task failed.
"""

from __future__ import annotations

import dataclasses
import os
import sys

from tpubench.core import host_procs
from tpubench.storage import records
from tpubench_launch import commands, errors, topology
from tpubench_launch.cluster import supervise


@dataclasses.dataclass(frozen=True)
class Options:
    """What `local-cluster` runs."""

    workers: int
    ps: int
    train_args: tuple[str, ...]
    log_dir: str | None = None
    timeout: float | None = None  # seconds; None: no limit
    cpus: frozenset[int] | None = None
    grace: float = 15.0
    echo: bool = True  # copy the chief's output to the console
    gpus_per_worker: int = 0  # 0: every task sees every GPU
    ps_device: str = "any"  # cpu | gpu | any: what the parameter servers see

    def task_env(self, tasks: list[topology.Task], task: topology.Task) -> dict[str, str]:
        return task_env(tasks, task, self)


def task_env(tasks: list[topology.Task], task: topology.Task, opts: Options) -> dict[str, str]:
    """CUDA_VISIBLE_DEVICES for TASK, or {} to leave the environment as it is.

    Worker i gets GPUs i*N .. i*N+N-1 (N = gpus_per_worker); with parameter
    servers the chief only coordinates and gets none; `ps_device=cpu` hides
    the GPUs from the parameter servers (variables on their CPU), `gpu` gives
    each one GPU after the workers' (variables on that GPU).
    """
    n = opts.gpus_per_worker
    workers = sum(1 for t in tasks if t.role == "worker")
    if task.role == "ps" and opts.ps_device == "cpu":
        return {"CUDA_VISIBLE_DEVICES": ""}
    if task.role == "ps" and opts.ps_device == "gpu":
        return {"CUDA_VISIBLE_DEVICES": str(workers * n + task.index)}
    if not n:
        return {}
    if task.role == "worker":
        return {"CUDA_VISIBLE_DEVICES": ",".join(str(task.index * n + i) for i in range(n))}
    if task.role == "chief" and any(t.role == "ps" for t in tasks):
        return {"CUDA_VISIBLE_DEVICES": ""}
    return {}


def check_room(workers: int, ps: int, asked: str, cpus=None, host=None) -> None:
    """Refuses, in one line, a cluster of WORKERS and PS tasks (and a chief with PS) that
    HOST (default this host, on CPUS when pinned) cannot hold; ASKED: where the counts came
    from."""
    n = workers + ps + (1 if ps else 0)  # topology.task_roles, without listing them
    if ps:
        asked += " with its chief"
    host_procs.check(n, asked, host or host_procs.this_host(len(cpus) if cpus else None))


def results_dir_of(args: list[str]) -> str:
    """--results_dir from the pass-through flags (tpubench's default: runs).

    Raises:
      UsageError: a gs:// results dir (the launcher amends the record in place).
    """
    results = commands.flag_value(args, "results_dir") or "runs"
    if "://" in results:
        raise errors.UsageError(
            f"--results_dir={results}: local-cluster amends the chief's record in place and "
            "needs a local directory; copy the records to gs:// afterwards"
        )
    return results


def run(opts: Options, launcher_argv: list[str], out=None) -> str:
    """Runs the cluster to the end; returns the path of its run record.

    Raises:
      TaskFailed: a task died or the timeout passed (the record says which).
      Interrupted: SIGINT/SIGTERM; every task was stopped and recorded.
    """
    out = out or sys.stdout
    shape = f"--workers={opts.workers}" + (f" --ps={opts.ps}" if opts.ps else "")
    check_room(opts.workers, opts.ps, shape, opts.cpus)  # before any task starts
    results = results_dir_of(list(opts.train_args))
    cluster_id = records.new_run_id("cluster")
    tasks = topology.plan(opts.workers, opts.ps)
    label = commands.flag_value(list(opts.train_args), "run_label") or cluster_id
    args = topology.train_args(
        tasks, list(opts.train_args), label, os.path.join(results, f"{cluster_id}-model")
    )
    log_dir = opts.log_dir or os.path.join(results, "logs", cluster_id)
    before = [f.path for f in records.by_label(results).get(label, [])]
    started = records.now_iso()
    outcome = supervise.supervise(tasks, args, log_dir, opts, out)
    run = supervise.Run(
        tasks=tuple(tasks),
        results=results,
        label=label,
        cluster_id=cluster_id,
        log_dir=log_dir,
        argv=tuple(launcher_argv),
        started=started,
        before=tuple(before),
        model_dir=commands.flag_value(args, "model_dir") or "",
        model_dir_given=commands.has_flag(list(opts.train_args), "model_dir"),
    )
    return supervise.finish(run, outcome, out)
