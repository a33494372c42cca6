"""Whether an executor hosts a run: the one check of what an executor declares.

An executor of tpubench-launch declares what it hosts as data (the dict
`tpubench-launch executors --json` prints: `providers`, `devices`,
`tpu_slices`, `tpu_generations`, `clusters`, `multi_host`,
`one_machine_clusters`, `subcommands`).  `refusal(declared, need)` compares
a run's `Need` with that declaration and says, in one line, the first thing
the executor does not host: the value, and what it accepts.  The launcher's
sweep (every configuration, before anything starts) and tpubench's study
planner (which cells an executor can run) both call it, so the two cannot
disagree; no executor repeats a declared fact in code.  Pure Python: the
launcher may import it (tpubench.core), tpubench never imports the launcher.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

DEVICES = ("cpu", "gpu", "tpu")


@dataclasses.dataclass(frozen=True)
class Need:
    """What one run asks of the executor that hosts it."""

    subcommand: str = "train"  # the tpubench subcommand: train, infer, tune, ...
    device: str = "cpu"  # cpu, gpu or tpu: what it trains (or infers) on
    machine: str = ""  # the machine it rents, as the line names it (gcp:tpu-v5e-8)
    provider: str | None = None  # whose machine: gcp, aws, ... (None: not named)
    tpu_generation: str | None = None  # v2 ... v6e: a TPU slice's generation
    tpu_hosts: int = 1  # the hosts a TPU slice spans
    cluster: str | None = None  # multi_worker or parameter_server: a cluster of tasks
    one_machine: bool = False  # every task of that cluster on the one machine


def provider_of(machine: str) -> str | None:
    """'gcp' of 'gcp:n1-standard-8+1xgcp:t4'; None for a name without a provider."""
    head = machine.split("+")[0].strip()
    return head.split(":", 1)[0].lower() if ":" in head else None


def _words(values, none: str = "none") -> str:
    values = list(values)
    return ", ".join(values) if values else none


def why_not(declared: dict, need: Need) -> str | None:
    """What DECLARED does not host of NEED, in words after '--executor=NAME '; None: it does."""
    subcommands = declared.get("subcommands") or ()
    if need.subcommand not in subcommands:
        return f"runs `{_words(subcommands)}`, not `{need.subcommand}`"
    providers = declared.get("providers") or ()
    if providers and need.provider and need.provider not in providers:
        return f"rents {_words(providers)} machines, not {need.machine} ({need.provider})"
    devices = declared.get("devices") or ()
    if need.device not in devices:
        return f"runs on {_words(devices)}, not {need.device}" + (
            f" ({need.machine})" if need.machine else ""
        )
    if need.device == "tpu":
        if need.cluster:  # a slice is one TPUStrategy run, whoever rents it
            return f"runs a TPU slice as one TPUStrategy run, not a {need.cluster} cluster"
        generations = declared.get("tpu_generations") or ()
        if need.tpu_generation and generations and need.tpu_generation not in generations:
            return f"runs TPU {_words(generations)} slices, not {need.machine}"
        slices = declared.get("tpu_slices") or ()
        shape = "multi-host" if need.tpu_hosts > 1 else "single-host"
        if slices and shape not in slices:
            return (
                f"runs {_words(slices)} TPU slices, not {need.machine} "
                f"({need.tpu_hosts} host{'s' if need.tpu_hosts > 1 else ''})"
            )
    if need.cluster and need.one_machine:
        on_one = declared.get("one_machine_clusters") or ()
        if need.cluster not in on_one:
            return (
                f"runs {_words(on_one, 'no')} clusters on one machine (one_machine: true), not "
                f"{need.cluster}"
            )
    elif need.cluster:
        clusters = declared.get("clusters") or ()
        if need.cluster not in clusters or not declared.get("multi_host"):
            across = clusters if declared.get("multi_host") else ()
            return f"runs {_words(across, 'no')} clusters across machines, not {need.cluster}"
    return None


def refusal(declared: dict, need: Need, others: Iterable[dict] = ()) -> str | None:
    """The one line saying what DECLARED (an executor's published dict) does not host of
    NEED, naming the executors of OTHERS that do; None when it hosts it."""
    why = why_not(declared, need)
    if why is None:
        return None
    hosts = [
        d["name"]
        for d in others
        if d.get("name") != declared.get("name") and why_not(d, need) is None
    ]
    shown = [f"--executor={h}" for h in sorted(hosts)]
    then = (
        f"; {shown[0] if len(shown) == 1 else ', '.join(shown[:-1]) + ' or ' + shown[-1]} does"
        if shown
        else ""
    )
    return f"--executor={declared.get('name')} {why}{then}"
