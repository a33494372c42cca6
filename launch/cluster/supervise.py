"""Supervising a local cluster's processes and writing its record (see local.py)."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import time

from tpubench.children import process as procs
from tpubench.storage import files, records
from tpubench_launch import commands, errors, topology

POLL_SECONDS = 0.2
# After a task died, the others wait on it in their collectives: they get this
# long to finish on SIGTERM (rarely enough), then SIGKILL.
FAILED_GRACE = 2.0


@dataclasses.dataclass
class Outcome:
    """How the cluster ended."""

    procs: dict  # Task -> Popen
    seconds: float
    failed: object = None  # the Task that ended the run, if one failed
    failure: str | None = None  # what happened to it
    exit_code: int = 0
    interrupted: str | None = None  # signal name
    stopped: tuple = ()  # tasks the launcher stopped
    killed: tuple = ()  # trainers still running after --grace on an interrupt (SIGKILLed)


def supervise(tasks, args: list[str], log_dir: str, opts, out) -> Outcome:
    """Starts every task, waits for the trainers, stops the rest; never hangs.

    Serving tasks (PS workers and parameter servers) start first; the chief
    retries its connections until they are up.
    """
    os.makedirs(log_dir, exist_ok=True)
    base_env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    base_env["PYTHONUNBUFFERED"] = "1"
    chief = topology.chief_of(tasks)
    train = topology.trainers(tasks)
    order = [t for t in tasks if t not in train] + train
    running: dict = {}
    t0 = time.monotonic()
    outcome = Outcome(procs=running, seconds=0.0)
    with procs.StopRequests() as stop_requests:
        try:
            for task in order:
                env = dict(base_env, TF_CONFIG=topology.tf_config(tasks, task))
                env.update(getattr(opts, "task_env", lambda *_: {})(tasks, task))
                try:
                    running[task] = procs.start(
                        [*commands.local_tpubench(), "train", *args],
                        os.path.join(log_dir, task.log_name),
                        env=env,
                        cpus=opts.cpus,
                        echo=out if (opts.echo and task == chief) else None,
                    )
                except procs.StartFailed as e:  # the host refused a fork: the record says so
                    outcome.failure = f"could not start task {task.name}: {e.reason}"
                    outcome.exit_code = e.exit_code
                    break
            if not outcome.failure:
                _write_state(tasks, running, log_dir)
                _watch(tasks, train, running, opts, outcome, stop_requests, t0)
        finally:
            # Stop whatever still runs: servers after a success, everything
            # after a failure, a timeout or an exception in the launcher itself.
            alive = [t for t, p in running.items() if p.poll() is None]
            outcome.stopped = tuple(alive)
            grace = opts.grace
            if outcome.failure:
                # The survivors' dying words (TensorFlow's collective errors, an
                # `internal error`) stay in their logs: the console gets one line.
                for p in running.values():
                    procs.mute(p)
                grace = min(grace, FAILED_GRACE)
            if outcome.interrupted:
                # The launcher's line says where the tasks stopped; the chief's
                # own error line stays in its log.
                for p in running.values():
                    procs.mute(p)
                # Trainers first: they checkpoint at a step they agree on and
                # the chief writes its record, which needs the serving tasks
                # (parameter servers hold the variables) still up.
                first = [running[t] for t in alive if t in train]
                procs.stop(first, grace=grace)
                outcome.killed = tuple(
                    t for t in alive if t in train and running[t].returncode == -signal.SIGKILL
                )
                # Then the serving tasks, with a grace of their own: TensorFlow's
                # shutdown takes a serving task 2-3 s after SIGTERM.
            procs.stop([running[t] for t in alive], grace=grace)
            for p in running.values():
                procs.wait_output(p)
    outcome.seconds = time.monotonic() - t0
    return outcome


def _watch(tasks, train, running, opts, outcome, stop_requests, t0) -> None:
    while True:
        if stop_requests.signal_name:
            outcome.interrupted = stop_requests.signal_name
            return
        dead = []
        for task, p in running.items():
            rc = p.poll()
            if rc is None:
                continue
            if task in train and rc == 0:
                continue
            dead.append((task, rc))
        if dead:
            # A task killed by a signal is the likeliest cause; the others
            # usually fail because it vanished from their collectives.
            dead.sort(key=lambda d: (d[1] >= 0, tasks.index(d[0])))
            task, rc = dead[0]
            outcome.failed = task
            if task in train:
                outcome.failure = procs.describe_exit(rc)
                outcome.exit_code = errors.exit_code_of(rc)
            else:
                outcome.failure = f"{procs.describe_exit(rc)} while the chief was still training"
                outcome.exit_code = errors.exit_code_of(rc) or 1
            return
        if all(running[t].poll() == 0 for t in train):
            return
        if opts.timeout and time.monotonic() - t0 > opts.timeout:
            outcome.failure = f"did not finish within --timeout={opts.timeout:g} s"
            outcome.exit_code = 124
            return
        time.sleep(POLL_SECONDS)


def _write_state(tasks, running, log_dir) -> None:
    """cluster.json in the log dir: which pid is which task, while the run is on."""
    state = {
        "tasks": [
            {"task": t.name, "address": t.address, "pid": running[t].pid, "log": t.log_name}
            for t in tasks
        ]
    }
    write_json(os.path.join(log_dir, "cluster.json"), state)


def section(tasks, outcome: Outcome, cluster_id: str, log_dir: str) -> dict:
    """The record's `cluster` section."""
    chief = topology.chief_of(tasks)
    rows = []
    for t in tasks:
        p: subprocess.Popen | None = outcome.procs.get(t)
        rows.append(
            {
                "role": t.role,
                "index": t.index,
                "address": t.address,
                "chief": t == chief,
                "pid": p.pid if p else None,
                "exit_code": p.returncode if p else None,
                "stopped_by_launcher": t in outcome.stopped,
                "log": os.path.join(log_dir, t.log_name),
            }
        )
    return {
        "id": cluster_id,
        "launcher": "tpubench-launch local-cluster",
        "strategy": topology.strategy_of(tasks),
        "spec": topology.cluster_spec(tasks),
        "tasks": rows,
        "failed_task": outcome.failed.name if outcome.failed else None,
        "log_dir": log_dir,
        "wall_seconds": round(outcome.seconds, 3),
    }


@dataclasses.dataclass(frozen=True)
class Run:
    """What `finish` needs to know about the cluster run it records."""

    tasks: tuple  # of topology.Task, in plan order
    results: str  # the results dir the chief writes its record to
    label: str  # the --run_label that finds the chief's record
    cluster_id: str
    log_dir: str
    argv: tuple  # the launcher's own command line
    started: str  # ISO time the launcher started the cluster
    before: tuple = ()  # record paths already there, which are not this run's
    model_dir: str = ""  # the --model_dir every task was given
    model_dir_given: bool = False  # by the user (else the launcher chose a fresh one)


def _interrupted(run: Run, outcome: Outcome, record: dict | None) -> str:
    """The one line of an interrupted cluster: where it stopped and how to resume."""
    head, n = f"interrupted by {outcome.interrupted}", len(run.tasks)
    if outcome.killed:
        names = ", ".join(t.name for t in outcome.killed)
        return (
            f"{head}; {names} did not stop within --grace and was killed (SIGKILL); stopped "
            f"all {n} task(s); a rerun resumes from the last checkpoint saved before, if any"
        )
    info = (record or {}).get("interrupted")
    if isinstance(info, dict) and info.get("checkpoint_saved"):
        if run.model_dir_given:
            resume = "rerun the same command to resume"
        else:
            resume = f"rerun with --model_dir={run.model_dir} to resume"
        return (
            f"{head}; all {n} task(s) stopped at step {info.get('step')} with a checkpoint "
            f"in {run.model_dir}; {resume}"
        )
    return f"{head}; stopped all {n} task(s) without a new checkpoint"


def finish(run: Run, outcome: Outcome, out) -> str:
    """Amends (or writes) the run record; returns its path or raises for a failed run."""
    tasks, log_dir, cluster_id = list(run.tasks), run.log_dir, run.cluster_id
    chief = topology.chief_of(tasks)
    found = [
        f for f in records.by_label(run.results).get(run.label, []) if f.path not in run.before
    ]
    path, record = (found[-1].path, found[-1].record) if found else (None, None)
    message = None
    if outcome.interrupted:
        message = _interrupted(run, outcome, record)
    elif outcome.failure:
        if outcome.failed is None:
            who = "the cluster "
        else:
            who = f"task {outcome.failed.name} (pid {outcome.procs[outcome.failed].pid}) "
        others = len([t for t in outcome.stopped if t != outcome.failed])
        message = f"{who}{outcome.failure}; stopped the other {others} task(s)"
        if outcome.failed is not None:
            log = os.path.join(log_dir, outcome.failed.log_name)
            said = procs.last_error_line(log)
            message += f"; its log: {log}" + (f" ({said})" if said else "")
    if record is None:
        record = {
            "schema_version": records.SCHEMA_VERSION,
            "run_id": cluster_id,
            "kind": "train",
            "run_label": run.label,
            "started": run.started,
            "argv": list(run.argv),
            "note": "written by tpubench-launch: the chief task wrote no record",
        }
        path = os.path.join(run.results, f"{cluster_id}.json")
    record["cluster"] = section(tasks, outcome, cluster_id, log_dir)
    if message:
        if record.get("error") and record["error"] != message:
            record["cluster"]["chief_error"] = record["error"]
        record["status"] = "interrupted" if outcome.interrupted else "failed"
        record["error"] = message
        record.setdefault("finished", records.now_iso())
    elif record.get("status") != "ok":
        # Every trainer exited 0 but the chief's record is not `ok`: trust neither.
        message = f"the chief {chief.name} exited 0 but its record says {record.get('status')!r}"
        record["status"] = "failed"
        record["error"] = message
        outcome.exit_code = 1
    record.setdefault("finished", records.now_iso())
    path = write_json(path, record)
    if outcome.interrupted:
        raise errors.Interrupted(message, record_path=path)
    if message:
        raise errors.TaskFailed(message, exit_code=outcome.exit_code or 1, record_path=path)
    print(
        f"tpubench-launch: cluster of {len(tasks)} task(s) ({record['cluster']['strategy']}) "
        f"finished in {outcome.seconds:.1f} s; record: {path}  logs: {log_dir}",
        file=out,
        flush=True,
    )
    return path


def write_json(path: str, doc: dict) -> str:
    """Writes DOC (a record, the cluster's state) to PATH atomically: a reader never
    sees half of it."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    text = json.dumps(doc, indent=2, sort_keys=True, allow_nan=False, default=str) + "\n"
    return files.write_atomic(path, text)
