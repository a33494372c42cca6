"""The executors a study's cells can run on: tpubench-launch's own answer, asked once.

Each executor of tpubench-launch declares what it hosts, as data
(`tpubench-launch executors --json`: devices, TPU slices, clusters, the
subcommands it runs, the cloud keys it requires and the ones only it
reads).  A study asks that answer (tpubench never imports the launcher:
it runs it, as a process) and decides from it which cells a renting
executor can host, so an executor registered with the launcher (a
plug-in included) serves a study with no edit here.
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
    devices: tuple[str, ...] = ()
    tpu_slices: tuple[str, ...] = ()
    clusters: tuple[str, ...] = ()
    multi_host: bool = False
    one_machine_clusters: tuple[str, ...] = ()  # clusters it runs with every task on one machine
    subcommands: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    example: str = ""
    own_settings: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, doc: dict) -> Executor:
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in doc.items() if k in known}
        return cls(**values)


@functools.cache
def _published() -> tuple[Executor, ...]:
    argv = command.python_argv("tpubench_launch.main", "executors", "--json")
    done = subprocess.run(
        argv, capture_output=True, text=True, check=False, env=command.child_env()
    )
    if done.returncode == 0:
        try:
            return tuple(Executor.from_json(x) for x in json.loads(done.stdout))
        except (ValueError, TypeError, AttributeError):
            pass
    last = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
    raise errors.UsageError(
        f"tpubench-launch could not list its executors (`tpubench-launch executors --json`): {last}"
    )


def renting() -> tuple[Executor, ...]:
    """The executors that rent machines: the ones a study's --executor may name besides local."""
    return tuple(x for x in _published() if x.rents)


def names() -> tuple[str, ...]:
    """--executor's accepted values: local, then the renting executors by name."""
    return (LOCAL, *sorted(x.name for x in renting()))


def get(name: str) -> Executor:
    """The renting executor NAME; an unknown name is one UsageError listing the accepted ones."""
    for x in renting():
        if x.name == name:
            return x
    raise errors.unknown("--executor", name, names(), listed_by="tpubench-launch executors")


def hosting(device: str) -> list[str]:
    """The renting executors that host DEVICE (cpu, gpu or tpu), by name."""
    return sorted(x.name for x in renting() if device in x.devices)


def either(found: list[str]) -> str:
    """'--executor=a', '--executor=a or --executor=b', '--executor=a, --executor=b or ...'."""
    shown = [f"--executor={x}" for x in found]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + f" or {shown[-1]}"


def settings_for(name: str, settings: dict) -> dict:
    """SETTINGS (a --cloud file's) less the keys only other executors read (one --cloud file
    serves every executor: GKE's namespace goes to gke only)."""
    others = {k for x in renting() if x.name != name for k in x.own_settings}
    others -= set(get(name).own_settings)
    return {k: v for k, v in settings.items() if k not in others}
