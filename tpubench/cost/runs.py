"""Prices for a run, and the cost rows of train and infer records.  Pure Python.

A run is priced up front (a bad --machine fails in milliseconds, before
TensorFlow is imported) and its rows are filled in when its rate is known.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os

from tpubench import errors
from tpubench.config import CostConfig


@dataclasses.dataclass(frozen=True)
class Prices:
    """Hourly prices of the machines a run is priced as, and a note on how they were chosen."""

    hourly: tuple
    note: str | None = None


@dataclasses.dataclass(frozen=True)
class Usage:
    """What a finished run used: its rate, its wall time and the accelerators it held."""

    examples_per_sec: float | None
    run_seconds: float
    num_accelerators: int
    examples_per_epoch: int | None = None  # train only
    seconds_to_target: float | None = None  # train only


def prices(cost: CostConfig) -> Prices:
    """The hourly prices for COST: an override, the --machine specs, or this host's VMs."""
    from tpubench.cost import catalog, pricing

    if cost.price_per_hour is not None:
        spec = cost.machine[0] if cost.machine else None
        return Prices((pricing.override(cost.price_per_hour, spec),))
    cat = catalog.load(cost.price_catalog)
    machines = list(cost.machine) or default_machines(cat)
    out = []
    for spec in machines:
        out.append(pricing.hourly(spec, cat, cost.pricing))
        if cost.pricing == "on_demand":
            with contextlib.suppress(errors.TpubenchError):  # no spot price: show on-demand only
                out.append(pricing.hourly(spec, cat, "spot"))
    note = None
    if not cost.machine:
        note = "priced as cloud VMs with this host's vCPU count (pass --machine to choose)"
    return Prices(tuple(out), note)


def default_machines(cat) -> list[str]:
    """Cloud VMs with this host's vCPU count, for a CPU run given no --machine."""
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    size = next((s for s in (1, 2, 4, 8, 16, 32, 64, 96) if s >= n), 96)
    keys = [f"gcp:n1-standard-{size}", f"gcp:n1-highcpu-{size}", f"gcp:c2-standard-{size}"]
    return [k for k in keys if k in cat]


def train_costs(priced: Prices, usage: Usage) -> dict:
    """The `cost` section of a train record."""
    from tpubench.cost import pricing

    rows = [
        pricing.summarize(
            price,
            examples_per_sec=usage.examples_per_sec or 0.0,
            examples_per_epoch=usage.examples_per_epoch,
            run_seconds=usage.run_seconds,
            seconds_to_target=usage.seconds_to_target,
            num_accelerators=usage.num_accelerators,
        )
        for price in priced.hourly
    ]
    return {"machines": rows, "note": priced.note, "examples_per_epoch": usage.examples_per_epoch}


def infer_costs(priced: Prices, usage: Usage) -> dict:
    """The `cost` section of an infer record: $ per million predictions."""
    from tpubench.cost import pricing

    rows = [
        pricing.summarize_inference(
            price,
            predictions_per_sec=usage.examples_per_sec or 0.0,
            run_seconds=usage.run_seconds,
            num_accelerators=usage.num_accelerators,
        )
        for price in priced.hourly
    ]
    return {"machines": rows, "note": priced.note}
