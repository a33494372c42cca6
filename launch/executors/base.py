"""The executor interface: what `tpubench-launch sweep` asks of every `--executor`.

`sweep/run.run` drives any executor through these methods in this order:
`settings` (the sweep file's `cloud:` mapping, checked before anything
starts; for rented VMs also the package each installs), `check_hosted` (what
it declares it hosts), `before_runs` (tools on PATH, earlier records; not in
a dry run), `code_lines` (what chooses the code the machines run), `plans`
(one per configuration, all checked up front), `vms`/`overhead_seconds`/
`preview_title` (the cost preview), then `dry_run_lines` or `execute`.
`CloudExecutor` holds what every rented-machine executor shares: a
`cloud.Plan` per configuration, its teardown always happening.
"""

from __future__ import annotations

import abc
import dataclasses
import os
from typing import ClassVar

from tpubench.children import command
from tpubench.core import hosting
from tpubench_launch import cloud_file, errors, package, tpus, trust
from tpubench_launch.executors import cloud, rented, shared
from tpubench_launch.sweep import resume


class Executor(abc.ABC):
    """Where a sweep's configurations run.  Subclasses set `name` and what they host.

    What an executor can host is data, published once by `tpubench-launch executors
    --json` (tpubench's study reads it there): the device kinds a configuration may train
    on, the TPU slices it rents (single- or multi-host, of which generations), the cluster
    strategies it runs and whether their tasks span machines, the tpubench subcommands
    it runs, and the `cloud:` keys it needs.
    """

    name: ClassVar[str]  # the --executor value
    title: ClassVar[str] = ""  # how errors name it: "a GKE setting"
    rents: ClassVar[bool] = False  # True: it rents machines (a `cloud:` mapping)
    devices: ClassVar[tuple[str, ...]] = ()  # cpu, gpu, tpu: what a configuration trains on
    tpu_slices: ClassVar[tuple[str, ...]] = ()  # single-host, multi-host
    # The TPU generations (tpus.GENERATIONS: v2 ... v6e) whose slices it runs, if it runs any.
    tpu_generations: ClassVar[tuple[str, ...]] = tuple(tpus.GENERATIONS)
    clusters: ClassVar[tuple[str, ...]] = ()  # multi_worker, parameter_server
    multi_host: ClassVar[bool] = False  # a cluster's tasks on several machines
    # The cluster strategies it runs with every task on one machine (`one_machine: true`).
    one_machine_clusters: ClassVar[tuple[str, ...]] = ()
    subcommands: ClassVar[tuple[str, ...]] = ("train", "infer", "tune")
    required: ClassVar[tuple[str, ...]] = ()  # the `cloud:` keys it cannot do without
    example: ClassVar[str] = ""  # those keys set, for the error line
    own_settings: ClassVar[tuple[str, ...]] = ()  # `cloud:` keys no other executor reads
    # Its own keys that choose the code its machines run (key -> what), beside trust.py's.
    code_settings: ClassVar[dict[str, str]] = {}
    providers: ClassVar[tuple[str, ...]] = ()  # whose machines it rents (gcp, aws); () any
    machine_example: ClassVar[str] = "gcp:n1-standard-8"  # a machine it rents, for errors

    def describe(self) -> dict:
        """What this executor hosts, as `tpubench-launch executors --json` prints it."""
        reads = self.cloud_keys()
        return {
            "name": self.name,
            "title": self.title or self.name,
            "rents": self.rents,
            "providers": list(self.providers),
            "devices": list(self.devices),
            "tpu_slices": list(self.tpu_slices),
            "tpu_generations": list(self.tpu_generations) if "tpu" in self.devices else [],
            "clusters": list(self.clusters),
            "multi_host": self.multi_host,
            "one_machine_clusters": list(self.one_machine_clusters),
            "subcommands": list(self.subcommands),
            "required": list(self.required),
            "example": self.example,
            "own_settings": list(self.own_settings),
            # what a study checks a --cloud file against: the keys this executor reads and,
            # of those, the ones that choose code (refused without --trust-code: trust.py)
            "settings": list(reads),
            "code_keys": {k: v for k, v in trust.code_settings().items() if k in reads},
        }

    def cloud_keys(self) -> tuple[str, ...]:
        """The `cloud:` keys this executor reads (none: it rents nothing)."""
        return ()

    def cloud_problem(self, raw: dict, where: str) -> str | None:
        """The one line naming the first value of RAW (a `cloud:` mapping) this executor
        refuses by its format, with WHERE first; None when it refuses none."""
        return None

    def settings(self, sweep, dry_run: bool = False) -> rented.Settings | None:
        """The sweep file's `cloud:` settings, checked; None where none are needed.

        DRY_RUN: nothing may be written (a wheel is built in a temporary folder).
        """
        return None

    def code_lines(self, settings) -> list[str]:
        """What chooses the code the runs' machines run: printed before the runs (and dry run)."""
        return []

    def before_runs(self, sweep, settings, out) -> None:  # noqa: B027 - optional hook
        """Checks and fetches before real runs (never called by a dry run)."""

    def check_hosted(self, configs) -> None:  # noqa: B027 - optional hook
        """UsageError for the first of CONFIGS it does not host (before any tool runs)."""

    @abc.abstractmethod
    def plans(self, sweep, todo: list, settings, log_dir: str) -> list:
        """One plan per configuration in TODO; raises UsageError for one that cannot run."""

    def vms(self, config) -> int:
        """How many machines CONFIG holds while it runs (the cost preview multiplies)."""
        return 1

    def model_dir(self, config, settings, sweep) -> str | None:
        """The --model_dir CONFIG's run is given (None: none; tune and infer runs): the one
        directory whose record is that configuration's (sweep/resume.py)."""
        return None

    def overhead_seconds(self, settings) -> float:
        """Seconds each run costs besides its own time (create, install, delete)."""
        return 0.0

    @abc.abstractmethod
    def preview_title(self, pricing: str, settings) -> str:
        """The cost preview's heading: what the estimate counts."""

    @abc.abstractmethod
    def dry_run_lines(self, config, plan, results_dir: str) -> list[str]:
        """What `--dry-run` prints for CONFIG after its `# id: ...` line."""

    @abc.abstractmethod
    def execute(self, sweep, todo: list, plans: list, argv: list, log_dir: str, out) -> list:
        """Runs TODO; returns (config, exit code, what) per configuration."""


class CloudExecutor(Executor):
    """A renting executor: each configuration is a `cloud.Plan` of commands.

    Subclasses give `plan(config, sweep, settings, log_dir)` and `vms(config)`,
    and own their settings (`settings_keys`, `required`, `example`,
    `setting_rules`, `scheme`), their tools (`check_tools`) and their copy-back
    (`copy_back`: the command that brings the bucket's records here).  What
    they host is checked once, for all, by `plans` (tpubench/core/hosting.py).
    """

    machines: ClassVar[str] = "VM"  # what the preview prices
    setup: ClassVar[str] = "create, install and delete"
    rents = True
    # The `cloud:` keys it reads (rented.COMMON and its own); gcp.Gcp's for the GCP ones.
    settings_keys: ClassVar[tuple[str, ...]] = rented.COMMON
    # Formats of its own keys: key -> (compiled regex, what is accepted), for --check-cloud too.
    setting_rules: ClassVar[dict] = {}
    scheme: ClassVar[str] = "gs://"  # where its machines write records (its bucket's scheme)
    installs_package: ClassVar[bool] = True  # False: the machines bring tpubench (an image)

    def cloud_keys(self) -> tuple[str, ...]:
        """settings_keys less the keys only another executor reads (gke's image)."""
        others = {k for e in cloud_executors() if e.name != self.name for k in e.own_settings}
        return tuple(k for k in self.settings_keys if k not in others - set(self.own_settings))

    def cloud_problem(self, raw: dict, where: str) -> str | None:
        """RAW's (a --cloud file's) first key no executor reads or value outside the
        launcher's formats: the one checker a sweep file's cloud: goes through too."""
        return cloud_file.problem(raw, where, cloud_file.STUDY_KEYS)

    def read_settings(self, sweep) -> rented.Settings:
        """The `cloud:` mapping through rented.read: names, numbers, bucket, package, data."""
        owned = {
            key: (other.name, other.title or other.name)
            for other in cloud_executors()
            for key in other.own_settings
        }
        return rented.read(sweep, self, owned)

    def settings(self, sweep, dry_run: bool = False) -> rented.Settings:
        """read_settings, then the package every VM installs (package.py), chosen once per
        sweep run: the default wheel is built here once for all its VMs."""
        s = self.read_settings(sweep)
        if not self.installs_package:
            return s
        chosen = package.resolve(dict(sweep.cloud), sweep.path, sweep.results_dir, dry_run)
        return dataclasses.replace(s, install=chosen)

    def code_lines(self, settings) -> list[str]:
        lines = [f"# {settings.install.describe()}"] if settings.install else []
        if settings.image_family or settings.image_project:
            lines.append(
                f"# boot image: family {settings.image_family or '(default)'} of project "
                f"{settings.image_project or '(default)'}, chosen by the sweep file's cloud:"
            )
        return lines

    @abc.abstractmethod
    def check_tools(self) -> None:
        """CloudError naming the first program its plans call that is not on PATH."""

    @abc.abstractmethod
    def copy_back(self, config, settings, results_dir: str) -> list[str]:
        """The command copying the bucket's records (CONFIG's; None: every one) to RESULTS_DIR."""

    def before_runs(self, sweep, settings, out) -> None:
        self.check_tools()
        os.makedirs(sweep.results_dir, exist_ok=True)
        # Records of earlier runs, perhaps from another machine: resume needs them.
        cloud.best_effort(self.copy_back(None, settings, sweep.results_dir), out)

    @abc.abstractmethod
    def plan(self, config, sweep, settings: rented.Settings, log_dir: str) -> cloud.Plan:
        """CONFIG's commands: setup, tasks, collect, teardown."""

    def need(self, config) -> hosting.Need:
        """What CONFIG asks of an executor, from its machine, flags and strategy."""
        return shared.need(config)

    def check_hosted(self, configs) -> None:
        """UsageError for the first of CONFIGS it does not host (what it declares, checked
        once for every renting executor: before any tool is called, and by `plans`)."""
        declared, everyone = self.describe(), [e.describe() for e in cloud_executors()]
        for c in configs:
            if not c.settings.get("machine"):
                raise errors.UsageError(
                    f"{c.id}: --executor={self.name} needs a machine (grid.machines), e.g. "
                    f"{self.machine_example}"
                )
            line = hosting.refusal(declared, self.need(c), everyone)
            if line:
                raise errors.UsageError(f"{c.id}: {line}")
            shared.check_one_machine(c)  # bounded by its machine type, not by this host

    def plans(self, sweep, todo, settings, log_dir) -> list:
        self.check_hosted(todo)
        return [self.plan(c, sweep, settings, log_dir) for c in todo]

    def model_dir(self, config, settings, sweep) -> str | None:
        # As shared.remote_flags gives it: tune and infer runs get none.
        return settings.model_dir(config.id) if config.command == "train" else None

    def overhead_seconds(self, settings) -> float:
        return settings.overhead_seconds

    def preview_title(self, pricing, settings) -> str:
        what = (
            f"{self.machines} price x estimated time incl. {settings.overhead_seconds:g} s to "
            f"{self.setup}"
        )
        return f"cost preview ({pricing}; {what}):"

    def dry_run_lines(self, config, plan, results_dir) -> list[str]:
        return [f"# {note}" for note in plan.notes] + [command.shell(a) for a in plan.commands()]

    def execute(self, sweep, todo, plans, argv, log_dir, out) -> list:
        results = []
        for i, (c, plan) in enumerate(zip(todo, plans, strict=True), 1):
            print(f"[{i}/{len(todo)}] {c.id} {c.describe()}", file=out, flush=True)
            try:
                cloud.execute(plan, log_dir, out)
            except (errors.TaskFailed, errors.CloudError) as e:
                results.append((c, e.exit_code, str(e)))
                print(f"[{i}/{len(todo)}] {c.id} FAILED: {e}", file=out, flush=True)
                continue
            # Its latest record of what it asks (sweep/resume.py), whatever else has its label.
            found = resume.find(sweep.results_dir, [c], lambda _: None).own.get(c.id)
            what = (
                f"record: {found[-1].path}" if found else f"no record copied from {plan.config_id}"
            )
            results.append((c, 0, what))
            print(f"[{i}/{len(todo)}] {c.id} done: {what}", file=out, flush=True)
        return results


def published(check_cloud: str | None = None, where: str | None = None) -> list[dict]:
    """Every registered executor's `describe()`, as `tpubench-launch executors --json` prints
    it; with CHECK_CLOUD (a YAML file of `cloud:` settings) each also says the first value
    of it that executor refuses (`problem`: one line that starts with WHERE, default
    'CHECK_CLOUD: ', or None), so a study asks once for everything.

    Raises:
      UsageError: CHECK_CLOUD unreadable, not YAML or not a mapping (one line naming it).
    """
    from tpubench_launch import executors  # the registry imports this module

    found = [executors.REGISTRY.get(n) for n in executors.REGISTRY.names()]
    described = [e.describe() for e in found]
    if check_cloud is None:
        return described
    raw = cloud_file.read(check_cloud)
    where = cloud_file.where_of(check_cloud, where)
    for e, d in zip(found, described, strict=True):
        d["problem"] = e.cloud_problem(raw, where)
    return described


def cloud_executors() -> list[CloudExecutor]:
    """The registered rented-machine executors, by name (their `cloud:` keys are theirs)."""
    from tpubench_launch import executors  # the registry imports this module

    found = [executors.REGISTRY.get(n) for n in executors.REGISTRY.names()]
    return [e for e in found if isinstance(e, CloudExecutor)]
