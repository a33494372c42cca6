"""How many tpubench processes a machine holds at once: counts checked before anything starts.

A sweep file, a study file or a flag can ask for a local cluster of hundreds
of worker and parameter-server processes; on a 2-core host they never make
progress together (each loads TensorFlow, its thread pools and a gRPC
server), and enough of them end in a failed fork.  `fit` says how many this
host (or a machine of known size) holds: PROCESSES_PER_CPU for each CPU the
processes may use, and no more than the available memory (`bounds.
available_memory`, MemAvailable) at GIB_PER_PROCESS each.  `check` refuses a
count past it in one line naming the value, where it came from and what
fits.  Pure Python (docs/security.md: *Work bounded by the host*).
"""

from __future__ import annotations

import dataclasses
import os

from tpubench.core import bounds, errors

PROCESSES_PER_CPU = 4  # a local cluster's tasks still make progress together
GIB_PER_PROCESS = 0.5  # a tpubench process with TensorFlow loaded, at the least
HERE = "this host"


@dataclasses.dataclass(frozen=True)
class Fit:
    """The most processes a machine holds, and the figures it comes from."""

    most: int
    cpus: int
    gib: float | None  # memory they may take (None: not known)
    where: str  # HERE, or the machine's name

    def why(self) -> str:
        """'2 CPUs x 4 a CPU; 19.6 GiB available at about 0.5 GiB a process'."""
        said = f"{self.cpus} CPU(s) x {PROCESSES_PER_CPU} a CPU"
        if self.gib is not None:
            free = "available" if self.where == HERE else "of memory"
            said += f"; {self.gib:,.1f} GiB {free} at about {GIB_PER_PROCESS:g} GiB a process"
        return said


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity), else the machine's count."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def fit(cpus: int, gib: float | None, where: str) -> Fit:
    """The most processes CPUS and GIB (None: unknown) hold; at least one."""
    most = cpus * PROCESSES_PER_CPU
    if gib is not None:
        most = min(most, int(gib / GIB_PER_PROCESS))
    return Fit(max(1, most), cpus, gib, where)


def this_host(cpus: int | None = None) -> Fit:
    """What this host holds now: CPUS (default the usable ones) and its available memory."""
    free = bounds.available_memory()
    gib = None if free is None else free / 2**30
    return fit(cpus or usable_cpus(), gib, HERE)


def refusal(count: int, asked: str, host: Fit) -> str | None:
    """None when COUNT processes fit HOST, else why not (ASKED: where the count came from)."""
    if count <= host.most:
        return None
    return (
        f"{asked} asks for {count:,} processes at once; {host.where} holds at most "
        f"{host.most:,} ({host.why()}); accepted: 1 to {host.most:,} processes"
    )


def check(count: int, asked: str, host: Fit | None = None) -> None:
    """Raises a UsageError (one line) when COUNT processes do not fit HOST (default this host)."""
    said = refusal(count, asked, host or this_host())
    if said:
        raise errors.UsageError(f"{said}; nothing was started")
