"""The hourly prices of one train or infer run: `--machine`, an override, or what it ran on.

Pure Python (no TensorFlow), shared by train and infer so both price runs the
same way.  Without `--machine`, a CPU run is priced as cloud VMs with the
host's vCPU count (of a family whose CPU is of this one's kind: AMX, AMD
EPYC with AVX-512 BF16, other AMD EPYC, or any other x86) and
an accelerator run as the smallest catalog machine that carries its
accelerators (`detect.machines_for`): never a GPU run as a CPU-only VM.
"""

from __future__ import annotations

import contextlib
import os

from tpubench.core import errors, machine_facts
from tpubench.core.basis import Basis
from tpubench.cost import catalog as catalog_lib
from tpubench.cost import detect, pricing


def prices(
    *,
    machines=(),
    price_per_hour: float | None = None,
    catalog_path: str | None = None,
    pricing_kind: Basis = Basis.ON_DEMAND,
    accelerators: list[dict] | None = None,
    host_vcpus: int | None = None,
    cpu: dict | None = None,
) -> tuple[list[pricing.HourlyPrice], str | None]:
    """([HourlyPrice...], note) for a run.

    Args:
      machines: `--machine` specs; empty to price what the run ran on.
      price_per_hour: `--price_per_hour`, stronger than any catalog.
      catalog_path: `--price_catalog`; None for the user catalog over the shipped one.
      pricing_kind: on demand or spot: the basis of the run's answers; the other
        basis follows, where the catalog has it, for reports on that basis.
      accelerators: `probe.accelerators` of the run; None before they are known
        (a CPU default is priced so that a bad catalog fails early).
      host_vcpus: this host's vCPUs (default: the CPU affinity).
      cpu: this host's CPU (`probe.cpu()`, a record's `hardware.cpu`): its kind picks
        the VM family a CPU run is priced as (cpu_family).

    Returns:
      The prices, and a note saying how the machine was chosen (None when the
      user named it).
    """
    if price_per_hour is not None:
        spec = machines[0] if machines else None
        return [pricing.override(price_per_hour, spec)], None
    cat = catalog_lib.load(catalog_path)
    specs = list(machines)
    note = None
    if not specs:
        found = detect.detect(accelerators or [])
        if found is not None:
            specs, note = detect.machines_for(cat, found)
        else:
            family = cpu_family(cpu or {})
            specs = default_cpu_machines(cat, host_vcpus, family=family)
            note = "priced as cloud VMs with this host's vCPU count (pass --machine to choose)"
            if specs and family != "other" and specs[0].startswith(_FAMILY_PREFIX[family]):
                note = (
                    f"priced as cloud VMs whose CPUs, like this host's, {FAMILIES[family][0]}, "
                    "with this host's vCPU count (pass --machine to choose)"
                )
    # The chosen basis first (every answer reads it), then the other one where the
    # catalog has it, so a record can be reported on either basis later.
    out = [pricing.hourly(spec, cat, pricing_kind) for spec in specs]
    other = pricing_kind.other
    for spec in specs if other else ():
        with contextlib.suppress(errors.TpubenchError):  # no price on the other basis
            out.append(pricing.hourly(spec, cat, other))
    return out, note


# A CPU's kind -> (what the note says its VMs' CPUs are, (family prefix, sizes)...): the
# families a CPU-only run is compared with are a pricing choice; the sizes each sells are
# machine facts (core/machines.csv).  n4 (Emerald Rapids) and c3 (Sapphire Rapids) run bf16
# products on AMX; c4d (AMD Turin, Zen 5) and c3d (Genoa, Zen 4) on AVX-512 BF16 without
# AMX; n2d (AMD Milan/Rome) has no bf16; n1 (Skylake and older) no AMX.
_CHOSEN = {
    "amx": ("have AMX", ("gcp:n4-standard-", "gcp:c3-standard-")),
    "amd_avx512_bf16": (
        "are AMD EPYC with AVX-512 BF16",
        ("gcp:c4d-standard-", "gcp:c3d-standard-"),
    ),
    "amd": ("are AMD EPYC", ("gcp:n2d-standard-",)),
    "other": ("are x86", ("gcp:n1-standard-", "gcp:n1-highcpu-", "gcp:c2-standard-")),
}
FAMILIES = {
    k: (says, tuple((f, machine_facts.sizes(f)) for f in families))
    for k, (says, families) in _CHOSEN.items()
}
_FAMILY_PREFIX = {k: tuple(p for p, _ in v[1]) for k, v in FAMILIES.items()}


def cpu_family(cpu: dict) -> str:
    """Which FAMILIES a CPU (`probe.cpu()`, a record's `hardware.cpu`) is priced as.

    A CPU that lists AMX measured a rate only an AMX CPU delivers; an AMD EPYC
    one, a rate of AMD's cores (with AVX-512 BF16 on Zen 4 and 5); any other, n1's.
    """
    if (cpu.get("amx") or "absent") != "absent":
        return "amx"
    if "AMD" in str(cpu.get("model") or "").upper().split():
        return "amd_avx512_bf16" if "avx512_bf16" in set(cpu.get("isa") or ()) else "amd"
    return "other"


def default_cpu_machines(
    cat: catalog_lib.Catalog, host_vcpus: int | None = None, *, family: str = "other"
) -> list[str]:
    """Cloud VMs with at least this host's vCPU count (the smallest such size of
    each family), for a CPU run given no --machine.

    FAMILY (cpu_family) picks the VMs; where the catalog has none of them, the
    run is priced as n1 (and c2) VMs.
    """
    n = host_vcpus
    if n is None:
        n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()

    def keys(fam):
        # Per family, the smallest size the catalog prices with at least N vCPUs
        # (else its largest priced one): a catalog without n2d-standard-2 prices a
        # 2-vCPU host as n2d-standard-4, not as another family's VM.
        out = []
        for p, sizes in fam:
            priced = [s for s in sizes if f"{p}{s}" in cat]
            if priced:
                out.append(f"{p}{next((s for s in priced if s >= n), priced[-1])}")
        return out

    for fam in (family, "other"):
        found = [k for k in keys(FAMILIES[fam][1]) if k in cat]
        if found:
            return found
    return []
