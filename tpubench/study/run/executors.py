"""The executors a study's cells can run on: tpubench-launch's own answer, asked once.

Each executor of tpubench-launch declares what it hosts, as data
(`tpubench-launch executors --json`: devices, TPU slices, clusters, the
subcommands it runs, the cloud keys it requires, reads and counts as code,
and the ones only it reads).  A study asks that answer (tpubench never
imports the launcher: it runs it, as a process) and decides from it which
cells a renting executor can host, so an executor registered with the
launcher (a plug-in included) serves a study with no edit here.  Given the
--cloud file (`--check-cloud=FILE`), the same answer also says the file's
first value each executor refuses: a study run asks once, for everything.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import subprocess

from tpubench.children import command
from tpubench.core import errors

LOCAL = "local"  # the study's own runner: cells on this host, not through the launcher


@dataclasses.dataclass(frozen=True)
class Executor:
    """What one of tpubench-launch's executors hosts (its `executors --json` entry)."""

    name: str
    rents: bool = True
    providers: tuple[str, ...] = ()  # whose machines it rents (gcp, aws); (): any
    devices: tuple[str, ...] = ()
    tpu_slices: tuple[str, ...] = ()  # single-host, multi-host
    # The TPU generations whose slices it runs (v2 ... v6e); None: not declared (any).
    tpu_generations: tuple[str, ...] | None = None
    clusters: tuple[str, ...] = ()
    multi_host: bool = False
    one_machine_clusters: tuple[str, ...] = ()  # clusters it runs with every task on one machine
    subcommands: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    example: str = ""
    own_settings: tuple[str, ...] = ()
    settings: tuple[str, ...] = ()  # the cloud keys it reads
    # of those, the keys that choose code (refused without --trust_code): key -> what it chooses
    code_keys: dict = dataclasses.field(default_factory=dict, hash=False)
    problem: str | None = None  # asked with a --cloud file: its first value refused here

    def hosts_slice(self, generation: str, hosts: int) -> bool:
        """Whether it runs a TPU slice of GENERATION on HOSTS hosts (what it declares)."""
        shape = "multi-host" if hosts > 1 else "single-host"
        declared = self.tpu_generations is None or generation in self.tpu_generations
        return (
            "tpu" in self.devices and declared and (not self.tpu_slices or shape in self.tpu_slices)
        )

    @classmethod
    def from_json(cls, doc: dict) -> Executor:
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in doc.items() if k in known}
        return cls(**values)


@functools.cache
def _ask(cloud: str | None) -> tuple[tuple[Executor, ...] | None, str]:
    """(the launcher's executors, "") or (None, the last line it said): one process per
    process and CLOUD (a --cloud file, checked in the same answer; None: none)."""
    argv = command.python_argv("tpubench_launch.main", "executors", "--json")
    if cloud is not None:
        argv += [f"--check-cloud={cloud}", f"--prefix=--cloud={cloud}: "]
    done = subprocess.run(
        argv, capture_output=True, text=True, check=False, env=command.child_env()
    )
    if done.returncode == 0:
        try:
            return tuple(Executor.from_json(x) for x in json.loads(done.stdout)), ""
        except (ValueError, TypeError, AttributeError):
            pass
    return None, (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]


def _published(cloud: str | None = None) -> tuple[Executor, ...]:
    found, last = _ask(cloud)
    if found is None and cloud is not None:
        # A --cloud file the launcher cannot read: the study refuses it in its own words
        # when it reads it (remote.load_cloud); what the executors host does not depend on it.
        found, last = _ask(None)
    if found is None:
        raise errors.UsageError(
            "tpubench-launch could not list its executors (`tpubench-launch executors --json`): "
            f"{last}"
        )
    return found


def renting(cloud: str | None = None) -> tuple[Executor, ...]:
    """The executors that rent machines: the ones a study's --executor may name besides local
    (CLOUD: the --cloud file the answer is asked with; each function here takes it, so that
    a study run asks the launcher once)."""
    return tuple(x for x in _published(cloud) if x.rents)


def names(cloud: str | None = None) -> tuple[str, ...]:
    """--executor's accepted values: local, then the renting executors by name."""
    return (LOCAL, *sorted(x.name for x in renting(cloud)))


def get(name: str, cloud: str | None = None) -> Executor:
    """The renting executor NAME; an unknown name is one UsageError listing the accepted ones."""
    for x in renting(cloud):
        if x.name == name:
            return x
    raise errors.unknown("--executor", name, names(cloud), listed_by="tpubench-launch executors")


def hosting(device: str, cloud: str | None = None) -> list[str]:
    """The renting executors that host DEVICE (cpu, gpu or tpu), by name."""
    return sorted(x.name for x in renting(cloud) if device in x.devices)


def either(found: list[str]) -> str:
    """'--executor=a', '--executor=a or --executor=b', '--executor=a, --executor=b or ...'."""
    shown = [f"--executor={x}" for x in found]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + f" or {shown[-1]}"


def problem(name: str, cloud: str) -> str | None:
    """The one line naming CLOUD's first value executor NAME refuses (prefixed
    '--cloud=CLOUD: '), or None.

    Raises:
      UsageError: the launcher could not check CLOUD (it said why in its last line).
    """
    found, last = _ask(cloud)
    if found is None:
        raise errors.UsageError(f"--cloud={cloud}: tpubench-launch could not check it: {last}")
    return get(name, cloud).problem


def settings_for(name: str, settings: dict, cloud: str | None = None) -> dict:
    """SETTINGS (a --cloud file's) less the keys only other executors read (one --cloud file
    serves every executor: GKE's namespace goes to gke only)."""
    others = {k for x in renting(cloud) if x.name != name for k in x.own_settings}
    others -= set(get(name, cloud).own_settings)
    return {k: v for k, v in settings.items() if k not in others}
