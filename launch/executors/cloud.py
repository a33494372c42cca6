"""The run plan engine every renting executor shares, and the scripts its machines run.

Each configuration becomes a `Plan`: set up (create VMs, install), run (one
command per task, together: `gcloud ... ssh`, `sky jobs launch`, a waiter),
bring results back, tear down.
`execute` always tears down: after a success, a failed command, a dead task,
Ctrl-C or SIGTERM.  The dry run prints the same commands in the same order.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import time

from tpubench.children import command as child_command
from tpubench.children import process as procs
from tpubench_launch import errors, package

SSH_RETRIES = 5  # a new VM's sshd may need a minute


# Every value that enters a remote shell goes through shlex (child_command.shell):
# a file name, flag value or TF_CONFIG holding a quote, `$(...)` or `;` must
# reach the VM as one word and run nothing.


def install_script(s, extra: str) -> str:
    """Shell run on each VM: a virtualenv with tpubench[EXTRA] in it, as package.py installs it
    (S: rented.Settings, its package chosen)."""
    if s.install is None:  # every rented-VM executor resolves it in CloudExecutor.settings
        raise errors.UsageError("no tpubench package was chosen for the VMs (a launcher bug)")
    return package.install_script(s.install, extra)


def run_script(
    train_flags: list[str],
    log_file: str,
    tf_config: str | None = None,
    command: str = "train",
    local_cluster: list[str] | None = None,
) -> str:
    """Shell run on a VM for one task: tpubench COMMAND, output also kept in LOG_FILE; with
    LOCAL_CLUSTER (its shape flags) the VM runs every task: `tpubench-launch local-cluster`."""
    env = f"export TF_CONFIG={child_command.shell([tf_config])}; " if tf_config else ""
    what = ["tpubench", command]
    if local_cluster is not None:
        what = ["tpubench_launch.main", "local-cluster", *local_cluster, "--"]
    python = child_command.installed_python(f"{package.VENV}/bin/python", "-m", *what)
    train = child_command.shell([*python, *train_flags])
    return f"set -o pipefail; cd ~; {env}{train} 2>&1 | tee ~/{child_command.shell([log_file])}"


@dataclasses.dataclass
class Plan:
    """Every gcloud command of one configuration, in order."""

    config_id: str
    setup: list[list[str]]
    tasks: list[tuple[str, list[str]]]  # (task name, gcloud ssh argv), run together
    trainers: list[str]  # task names whose exit ends the run (others serve)
    collect: list[list[str]]  # logs and records back home (also after a failure)
    teardown: list[list[str]]  # delete: always
    notes: list[str] = dataclasses.field(default_factory=list)
    files: dict[str, str] = dataclasses.field(default_factory=dict)  # written before setup

    def commands(self) -> list[list[str]]:
        return [*self.setup, *(a for _, a in self.tasks), *self.collect, *self.teardown]


def show(argv: list[str], out) -> None:
    print("$ " + child_command.shell(argv), file=out, flush=True)


def call(argv: list[str], out, retries: int = 0) -> None:
    """Runs one gcloud command in the foreground (output shown).

    Raises:
      CloudError: it failed (after RETRIES more tries for ssh/scp exit 255).
    """
    show(argv, out)
    for attempt in range(retries + 1):
        rc = subprocess.run(argv, stdin=subprocess.DEVNULL).returncode
        if rc == 0:
            return
        if rc != 255 or attempt == retries:
            break
        time.sleep(min(30, 5 * (attempt + 1)))
    raise errors.CloudError(f"`{child_command.shell(argv[:4])} ...` failed with exit code {rc}")


@contextlib.contextmanager
def signals_raise():
    """SIGINT and SIGTERM raise KeyboardInterrupt, so `finally` blocks clean up for both.

    SIGINT is installed explicitly too: a launcher started in the background
    by a shell (nohup, CI) inherits SIGINT as ignored.
    """

    def _raise(signum, frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    old = {s: signal.signal(s, _raise) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextlib.contextmanager
def signals_ignored():
    """Cleanup must finish: a second Ctrl-C must not leave a VM running."""
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def execute(plan: Plan, log_dir: str, out=None) -> None:
    """Runs PLAN; teardown always runs.

    Raises:
      CloudError: a setup command failed.  TaskFailed: a task failed.
      Interrupted: Ctrl-C/SIGTERM.  (Each after teardown.)
    """
    out = out or sys.stdout
    for path, text in plan.files.items():
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    ran = False
    try:
        with signals_raise():
            for i, argv in enumerate(plan.setup):
                call(argv, out, retries=SSH_RETRIES if i and _is_ssh(argv) else 0)
            ran = True
            _run_tasks(plan, log_dir, out)
    except KeyboardInterrupt as e:
        raise errors.Interrupted(
            f"interrupted ({e or 'SIGINT'}) during {plan.config_id}; its VMs were deleted; run "
            "the same command again to resume"
        ) from None
    finally:
        with signals_ignored():
            if ran:
                for argv in plan.collect:
                    best_effort(argv, out)
            failed = [a for a in plan.teardown if not best_effort(a, out)]
            if failed:
                print(
                    "tpubench-launch: WARNING: delete failed; check and delete by hand: "
                    + "; ".join(child_command.shell(a) for a in failed),
                    file=sys.stderr,
                    flush=True,
                )


def _is_ssh(argv: list[str]) -> bool:
    return "ssh" in argv or "scp" in argv


def best_effort(argv: list[str], out) -> bool:
    show(argv, out)
    try:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True)
        return p.wait(timeout=1800) == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _run_tasks(plan: Plan, log_dir: str, out) -> None:
    """Starts every task's ssh together; the first failure (or a server exiting) stops all."""
    for _, argv in plan.tasks:
        show(argv, out)
    running = {}
    try:
        for name, argv in plan.tasks:
            echo = out if name == plan.trainers[0] else None
            running[name] = procs.start(argv, os.path.join(log_dir, f"{name}.ssh.log"), echo=echo)
        while True:
            for name, p in running.items():
                rc = p.poll()
                if rc is None or (rc == 0 and name in plan.trainers):
                    continue
                what = procs.describe_exit(rc)
                if name not in plan.trainers:
                    what += " while the chief was still training"
                log = os.path.join(log_dir, f"{name}.ssh.log")
                said = procs.last_error_line(log)
                raise errors.TaskFailed(
                    f"{plan.config_id}: task {name} {what}; its log: {log}"
                    + (f" ({said})" if said else ""),
                    exit_code=errors.exit_code_of(rc) or 1,
                )
            if all(running[n].poll() == 0 for n in plan.trainers):
                return
            time.sleep(0.2)
    finally:
        procs.stop(list(running.values()), grace=5.0)
        for p in running.values():
            procs.wait_output(p)
