"""The hourly prices of one train or infer run: `--machine`, an override, or what it ran on.

Pure Python (no TensorFlow), shared by train and infer so both price runs the
same way.  Without `--machine`, a CPU run is priced as cloud VMs with the
host's vCPU count and an accelerator run as the smallest catalog machine that
carries its accelerators (`detect.machines_for`): never a GPU run as a
CPU-only VM.
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
            specs = default_cpu_machines(cat, host_vcpus)
            note = "priced as cloud VMs with this host's vCPU count (pass --machine to choose)"
    # The chosen basis first (every answer reads it), then the other one where the
    # catalog has it, so a record can be reported on either basis later.
    out = [pricing.hourly(spec, cat, pricing_kind) for spec in specs]
    other = vocab.OTHER_PRICING.get(pricing_kind)
    for spec in specs:
        with contextlib.suppress(errors.TpubenchError):  # no price on the other basis
            out.append(pricing.hourly(spec, cat, other))
    return out, note


def default_cpu_machines(cat: catalog_lib.Catalog, host_vcpus: int | None = None) -> list[str]:
    """Cloud VMs with this host's vCPU count, for a CPU run given no --machine."""
    n = host_vcpus
    if n is None:
        n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    size = next((s for s in (1, 2, 4, 8, 16, 32, 64, 96) if s >= n), 96)
    keys = [f"gcp:n1-standard-{size}", f"gcp:n1-highcpu-{size}", f"gcp:c2-standard-{size}"]
    return [k for k in keys if k in cat]
