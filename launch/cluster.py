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
import json
import os
import socket
import sys

from tpubench_launch import commands, errors, records

TRAIN_PORT_HOST = "localhost"


@dataclasses.dataclass(frozen=True)
class Task:
    """One process of the cluster."""

    role: str  # chief | worker | ps
    index: int
    address: str  # host:port

    @property
    def name(self) -> str:
        return f"{self.role}:{self.index}"

    @property
    def log_name(self) -> str:
        return f"{self.role}{self.index}.log"


def plan(
    workers: int, ps: int, hosts: list[str] | None = None, port: int | None = None
) -> list[Task]:
    """The tasks of a cluster with WORKERS workers and PS parameter servers.

    Args:
      workers: worker tasks (>= 1).
      ps: parameter-server tasks; > 0 adds a chief task that coordinates.
      hosts: one address host per task in plan order (chief, workers, ps);
        default: localhost with a free port each.
      port: the port every task listens on when HOSTS are given (one task
        per host), e.g. 2222 on cloud VMs.

    Raises:
      UsageError: a count out of range.
    """
    if workers < 1:
        raise errors.UsageError(f"--workers={workers} must be at least 1")
    if ps < 0:
        raise errors.UsageError(f"--ps={ps} must be 0 (MultiWorkerMirrored) or more")
    roles = task_roles(workers, ps)
    if hosts is None:
        addresses = [f"{TRAIN_PORT_HOST}:{p}" for p in free_ports(len(roles))]
    else:
        addresses = [f"{h}:{port}" for h in hosts]
    return [Task(r, i, a) for (r, i), a in zip(roles, addresses, strict=True)]


def task_roles(workers: int, ps: int) -> list[tuple[str, int]]:
    """(role, index) of every task in plan order: chief, workers, parameter servers."""
    roles = ([("chief", 0)] if ps else []) + [("worker", i) for i in range(workers)]
    return roles + [("ps", i) for i in range(ps)]


def free_ports(n: int) -> list[int]:
    """N distinct free TCP ports on localhost (held open together so they differ)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind((TRAIN_PORT_HOST, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def cluster_spec(tasks: list[Task]) -> dict:
    """TF_CONFIG's "cluster": role -> addresses in index order."""
    spec: dict[str, list[str]] = {}
    for t in sorted(tasks, key=lambda t: ("chief", "worker", "ps").index(t.role)):
        spec.setdefault(t.role, []).append(t.address)
    return spec


def tf_config(tasks: list[Task], task: Task) -> str:
    """The TF_CONFIG value for TASK, as compact JSON."""
    return json.dumps(
        {"cluster": cluster_spec(tasks), "task": {"type": task.role, "index": task.index}},
        separators=(",", ":"),
    )


def strategy_of(tasks: list[Task]) -> str:
    return "parameter_server" if any(t.role == "ps" for t in tasks) else "multi_worker"


def chief_of(tasks: list[Task]) -> Task:
    """The task that writes the record: `chief` if there is one, else worker 0."""
    return next((t for t in tasks if t.role == "chief"), tasks[0])


def trainers(tasks: list[Task]) -> list[Task]:
    """Tasks whose exit ends the run: every worker (multi-worker) or the chief (PS)."""
    if any(t.role == "ps" for t in tasks):
        return [chief_of(tasks)]
    return list(tasks)


def train_args(tasks: list[Task], args: list[str], label: str, model_dir: str) -> list[str]:
    """The pass-through train flags plus what a cluster needs, given once for every task.

    Adds --strategy (so a 1-worker cluster is still multi_worker), --run_label
    (how the chief's record is found) and one shared --model_dir, unless the
    user gave them.

    Raises:
      UsageError: --strategy contradicts the cluster's shape.
    """
    wanted = strategy_of(tasks)
    given = commands.flag_value(args, "strategy")
    if given not in (None, "auto", wanted):
        shape = "--ps tasks" if wanted == "parameter_server" else "no --ps"
        raise errors.UsageError(
            f"--strategy={given} does not fit a cluster with {shape}; accepted: auto or {wanted}"
        )
    out = list(args)
    if given in (None, "auto"):
        out = commands.without_flag(out, "strategy") + [f"--strategy={wanted}"]
    if not commands.has_flag(out, "run_label"):
        out.append(f"--run_label={label}")
    if not commands.has_flag(out, "model_dir"):
        out.append(f"--model_dir={model_dir}")
    return out


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
    from tpubench_launch import cluster_run

    out = out or sys.stdout
    results = results_dir_of(list(opts.train_args))
    cluster_id = records.new_run_id("cluster")
    tasks = plan(opts.workers, opts.ps)
    label = commands.flag_value(list(opts.train_args), "run_label") or cluster_id
    args = train_args(
        tasks, list(opts.train_args), label, os.path.join(results, f"{cluster_id}-model")
    )
    log_dir = opts.log_dir or os.path.join(results, "logs", cluster_id)
    before = [p for p, _ in records.read_all(results)]
    started = records.now_iso()
    outcome = cluster_run.supervise(tasks, args, log_dir, opts, out)
    return cluster_run.finish(
        tasks, outcome, results, label, cluster_id, log_dir, launcher_argv, started, before, out
    )
