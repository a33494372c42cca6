"""The hourly prices of one train or infer run: `--machine`, an override, or what it ran on.

Pure Python (no TensorFlow), shared by train and infer so both price runs the
same way.  Without `--machine`, a CPU run is priced as cloud VMs with the
host's vCPU count (of a family whose CPUs have AMX when this one does) and
an accelerator run as the smallest catalog machine that carries its
accelerators (`detect.machines_for`): never a GPU run as a CPU-only VM.
"""

from __future__ import annotations

import contextlib
import os

from tpubench.core import errors, vocab
from tpubench.cost import catalog as catalog_lib
from tpubench.cost import detect, pricing


def prices(
    *,
    machines=(),
    price_per_hour: float | None = None,
    catalog_path: str | None = None,
    pricing_kind: str = "on_demand",
    accelerators: list[dict] | None = None,
    host_vcpus: int | None = None,
    cpu_amx: bool = False,
) -> tuple[list[pricing.HourlyPrice], str | None]:
    """([HourlyPrice...], note) for a run.

    Args:
      machines: `--machine` specs; empty to price what the run ran on.
      price_per_hour: `--price_per_hour`, stronger than any catalog.
      catalog_path: `--price_catalog`; None for the user catalog over the shipped one.
      pricing_kind: 'on_demand' or 'spot': the basis of the run's answers; the other
        basis follows, where the catalog has it, for reports on that basis.
      accelerators: `probe.accelerators` of the run; None before they are known
        (a CPU default is priced so that a bad catalog fails early).
      host_vcpus: this host's vCPUs (default: the CPU affinity).
      cpu_amx: this host's CPU lists AMX (`hardware.cpu.amx` is not "absent").

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
            specs = default_cpu_machines(cat, host_vcpus, amx=cpu_amx)
            note = "priced as cloud VMs with this host's vCPU count (pass --machine to choose)"
            if specs and specs[0].startswith(AMX_FAMILIES):
                note = (
                    "priced as cloud VMs whose CPUs have AMX, as this one does, with this "
                    "host's vCPU count (pass --machine to choose)"
                )
    # The chosen basis first (every answer reads it), then the other one where the
    # catalog has it, so a record can be reported on either basis later.
    out = [pricing.hourly(spec, cat, pricing_kind) for spec in specs]
    other = vocab.OTHER_PRICING.get(pricing_kind)
    for spec in specs:
        with contextlib.suppress(errors.TpubenchError):  # no price on the other basis
            out.append(pricing.hourly(spec, cat, other))
    return out, note


# Sizes (vCPUs) GCP sells: n1 (Skylake and older, no AMX); n4 (Emerald Rapids) and
# c3 (Sapphire Rapids), whose CPUs run bf16 products on AMX.
N1_SIZES = (1, 2, 4, 8, 16, 32, 64, 96)
N4_SIZES = (2, 4, 8, 16, 32, 48, 64, 80)
C3_SIZES = (4, 8, 22, 44, 88, 176)
AMX_FAMILIES = ("gcp:n4-", "gcp:c3-")


def default_cpu_machines(
    cat: catalog_lib.Catalog, host_vcpus: int | None = None, *, amx: bool = False
) -> list[str]:
    """Cloud VMs with at least this host's vCPU count (the smallest such size of
    each family), for a CPU run given no --machine.

    A host whose CPU lists AMX measured a rate that only an AMX CPU delivers, so
    it is priced as n4 and c3 VMs where the catalog has those sizes; any other
    host as n1 (and c2) VMs.
    """
    n = host_vcpus
    if n is None:
        n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()

    def size(sizes):
        return next((s for s in sizes if s >= n), sizes[-1])

    if amx:
        keys = [f"gcp:n4-standard-{size(N4_SIZES)}", f"gcp:c3-standard-{size(C3_SIZES)}"]
        found = [k for k in keys if k in cat]
        if found:
            return found
    s = size(N1_SIZES)
    keys = [f"gcp:n1-standard-{s}", f"gcp:n1-highcpu-{s}", f"gcp:c2-standard-{s}"]
    return [k for k in keys if k in cat]
