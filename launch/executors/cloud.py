"""What GCE and TPU-VM runs share: settings, the `gcloud` runner, and the run plan engine.

Each configuration becomes a `Plan`: set up (create VMs, install), run (one
`gcloud ... ssh` per task, together), bring results back, tear down.
`execute` always tears down: after a success, a failed command, a dead task,
Ctrl-C or SIGTERM.  The dry run prints the same commands in the same order.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from tpubench.children import command as child_command
from tpubench.children import process as procs
from tpubench_launch import cloud_file, commands, errors, package

SETTINGS = (
    "project",
    "zone",
    "bucket",
    "spot",
    "package",
    "package_index_version",
    "package_sha256",
    "image_family",
    "image_project",
    "tpu_runtime",
    "boot_disk_gb",
    "overhead_seconds",
    "name_prefix",
    "port",
    "image",
    "namespace",
    "queue",
)
# What a VM executor cannot do without; an executor declares its own (base.CloudExecutor).
REQUIRED = ("project", "zone", "bucket")
EXAMPLE = "cloud: {project: my-project, zone: us-central1-a, bucket: gs://my-bucket/tb}"
SSH_RETRIES = 5  # a new VM's sshd may need a minute


@dataclasses.dataclass(frozen=True)
class Settings:
    project: str
    zone: str
    bucket: str  # gs://... : records under records/, model dirs under model_dirs/
    spot: bool = False
    package: str | None = None  # a local wheel/sdist to install (package.py)
    package_index_version: str | None = None  # or this tpubench release from the index
    package_sha256: str | None = None  # the hash the installed file must have
    image_family: str | None = None
    image_project: str | None = None
    tpu_runtime: str | None = None
    boot_disk_gb: int = 100
    overhead_seconds: float = 300.0
    name_prefix: str = "tpubench"
    port: int = 2222
    image: str | None = None  # gke: a container image with tpubench installed
    namespace: str | None = None  # gke: default kubectl's current namespace
    queue: str | None = None  # gke: a Kueue LocalQueue
    install: package.Package | None = None  # what each VM installs (base.CloudExecutor.settings)

    @property
    def records(self) -> str:
        return self.bucket.rstrip("/") + "/records"

    def model_dir(self, config_id: str) -> str:
        return self.bucket.rstrip("/") + f"/model_dirs/{config_id}"

    @property
    def where(self) -> list[str]:
        return [f"--zone={self.zone}", f"--project={self.project}"]

    @property
    def ssh(self) -> list[str]:
        """Placement plus --quiet: ssh/scp must never wait for an answer (no stdin)."""
        return [*self.where, "--quiet"]


def settings(
    sweep,
    executor: str,
    required: tuple[str, ...] = REQUIRED,
    example: str = EXAMPLE,
    owned: dict[str, tuple[str, str]] | None = None,
) -> Settings:
    """The sweep file's `cloud:` mapping, checked for EXECUTOR.

    Args:
      required: the keys EXECUTOR cannot do without; EXAMPLE shows them set.
      owned: key -> (executor, what) for the keys only one executor reads
        (`cloud.image` is GKE's): set for another executor, they are refused.

    Raises:
      UsageError: a missing or unknown key, another executor's key, or a
        bucket that is not gs://.
    """
    raw = dict(sweep.cloud)
    cloud_file.check(raw, f"{sweep.path}: ")  # what sweep/file.py checked: the one checker
    missing = [k for k in required if not raw.get(k)]
    if missing:
        raise errors.UsageError(
            f"{sweep.path}: --executor={executor} needs cloud.{', cloud.'.join(missing)} "
            f"(e.g. {example})"
        )
    for key, (owner, what) in (owned or {}).items():
        if raw.get(key) is not None and executor != owner:
            raise errors.UsageError(
                f"{sweep.path}: cloud.{key} is a {what} setting; it needs --executor={owner}"
            )
    if "spot" in raw and not isinstance(raw["spot"], bool):
        raise errors.UsageError(f"{sweep.path}: cloud.spot={raw['spot']!r} must be true or false")
    hint = commands.gs_typo_hint(raw["bucket"]) or commands.gs_problem(raw["bucket"])
    if hint:
        raise errors.UsageError(f"{sweep.path}: cloud.bucket={hint}")
    if not str(raw["bucket"]).startswith("gs://"):
        raise errors.UsageError(
            f"{sweep.path}: cloud.bucket={raw['bucket']} must be a gs:// path (VMs write there)"
        )
    data_dir = sweep.configs[0].fixed_flags.get("data_dir") if sweep.configs else None
    if data_dir and not str(data_dir).startswith("gs://"):
        raise errors.UsageError(
            f"{sweep.path}: flags.data_dir={data_dir} must be on gs:// for --executor={executor}"
        )
    raw.setdefault("project", "")
    raw.setdefault("zone", "")
    return Settings(**{k: v for k, v in raw.items() if v is not None})


def vm_name(s: Settings, sweep_name: str, config_id: str, suffix: str = "") -> str:
    """A valid, deterministic GCE/TPU name: lowercase letters, digits, dashes, <= 63 chars."""
    slug = re.sub(r"[^a-z0-9-]+", "-", sweep_name.lower()).strip("-") or "sweep"
    # A grid id's own hex; a `runs:` label (any letters, '_' and '.') by its hash.
    if re.match(r"^cfg-[0-9a-f]{8}", config_id):
        short = config_id[4:12]
    else:
        short = hashlib.sha256(config_id.encode()).hexdigest()[:8]
    tail = "-" + short + (f"-{suffix}" if suffix else "")
    head = f"{s.name_prefix}-{slug}"[: 63 - len(tail)].rstrip("-")
    if not head[:1].isalpha():
        head = "t" + head[: 62 - len(tail)]
    return head + tail


# Every value that enters a remote shell goes through shlex (child_command.shell):
# a file name, flag value or TF_CONFIG holding a quote, `$(...)` or `;` must
# reach the VM as one word and run nothing.


def install_script(s: Settings, extra: str) -> str:
    """Shell run on each VM: a virtualenv with tpubench[EXTRA] in it, as package.py installs it."""
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


def rsync_records(config, s: Settings, results_dir: str) -> list[str]:
    """Copies the bucket's records here; a tune's trials lie one folder down (tune-ID/)."""
    deep = ["--recursive"] if config.command == "tune" else []
    return ["gcloud", "storage", "rsync", *deep, s.records, results_dir]


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


def check_gcloud() -> None:
    if shutil.which("gcloud") is None:
        raise errors.CloudError(
            "gcloud not found on PATH: install the Google Cloud CLI and run `gcloud auth "
            "login`, or add --dry-run to print the commands"
        )


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
