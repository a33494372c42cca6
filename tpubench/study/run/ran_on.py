"""What a study's cells ran on, beside the machine each is priced as.

A setup that names a machine (`machine:`) is priced as that machine wherever
its cells run: cpu_vs_gpu's `8 vCPU` is 8 cores of whatever CPU the host has,
pinned, priced as gcp:n1-highcpu-8 (the seed's were Skylake n1 machines).  Its
rates are the hardware's that ran and its prices the named machine's, so the
report names both, per setup: the CPU its records name (`hardware.cpu.model`),
the cores the run was pinned to of the host's, the GPUs it trained on, and
the machine and price basis it is priced as (report.render places the table
after the measured ones).  A TPU setup's machine (the
seed's slice) is what a renting executor rents; a run prices the TPU it ran
on (cells.Cell.flags), and the table names both where they differ.
"""

from __future__ import annotations

from tpubench.core import money, safe_text

HEADING = "## What the cells ran on"


def describe(record: dict) -> str:
    """What one run record says its process ran on: the CPU and its cores, its GPUs or TPU
    devices; 'not recorded' for what an older record lacks."""
    hardware = record.get("hardware") if isinstance(record, dict) else None
    hardware = hardware if isinstance(hardware, dict) else {}
    cpu = hardware.get("cpu") if isinstance(hardware.get("cpu"), dict) else {}
    text = str(cpu.get("model") or "a CPU it did not name")
    used, host = cpu.get("affinity_cores"), cpu.get("logical_cores")
    if isinstance(used, int) and isinstance(host, int) and used < host:
        text += f": {used} of the host's {host} cores"
    elif isinstance(host, int):
        text += f": all {host} of the host's cores"
    names: dict[str, int] = {}
    for acc in hardware.get("accelerators") or []:
        if isinstance(acc, dict):
            name = "TPU device" if acc.get("kind") == "tpu" else str(acc.get("name") or "GPU")
            names[name] = names.get(name, 0) + 1
    return "; ".join([text, *(f"{n} x {name}" for name, n in names.items())])


def section(results) -> list[str]:
    """The report's table of what each measured setup ran on and is priced as, or []."""
    rows = []
    for part in results.study.parts:
        for setup in part.setups:
            found = results.of(part.name, setup=setup.label)
            if not found:
                continue
            ran = ", ".join(dict.fromkeys(x for m in found for x in m.ran_on)) or "not recorded"
            priced = ", ".join(
                dict.fromkeys(
                    f"{m.machine} ({money.basis(m.pricing)})" if m.pricing else m.machine
                    for m in found
                )
            )
            if setup.machine and all(m.machine != setup.machine for m in found):
                priced += f"; the study names {setup.machine}"
            cells = [f"{part.name} · {setup.label}", str(len(found)), ran, priced]
            rows.append("| " + " | ".join(map(safe_text.markdown_cell, cells)) + " |")
    if not rows:
        return []
    return [
        HEADING,
        "",
        "A rate is the hardware's that ran; a price the machine's the cell is priced as "
        "(N-vCPU setups: N pinned cores of the host named, priced as the N-vCPU machine).",
        "",
        "| part · setup | cells | ran on (from the records) | priced as |",
        "| --- | --- | --- | --- |",
        *rows,
        "",
    ]
