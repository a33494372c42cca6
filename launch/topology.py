"""Who a local cluster is: its tasks, their roles and addresses, TF_CONFIG.

Pure functions of the task list, shared by the local cluster (cluster/local.py,
cluster/supervise.py), the cloud executors and the Kubernetes engines.
"""

from __future__ import annotations

import dataclasses
import json
import socket

from tpubench_launch import commands, errors

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
