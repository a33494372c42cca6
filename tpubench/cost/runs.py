"""Prices for a run, and the cost rows of train and infer records.  Pure Python.

A run is priced up front (a bad --machine fails in milliseconds, before
TensorFlow is imported) and its rows are filled in when its rate is known.
"""

from __future__ import annotations

import dataclasses

from tpubench.core.config import CostConfig


@dataclasses.dataclass(frozen=True)
class Prices:
    """Hourly prices of the machines a run is priced as, and a note on how they were chosen."""

    hourly: tuple
    note: str | None = None
    pricing: str = "on_demand"  # the basis of the run's answers (--pricing, or 'override')


@dataclasses.dataclass(frozen=True)
class Usage:
    """What a finished run used: its rate, its wall time and the accelerators it held."""

    examples_per_sec: float | None
    run_seconds: float
    num_accelerators: int
    examples_per_epoch: int | None = None  # train only
    seconds_to_target: float | None = None  # train only


def prices(
    cost: CostConfig, accelerators: list[dict] | None = None, cpu: dict | None = None
) -> Prices:
    """The hourly prices for COST: an override, the --machine specs, or what the run ran on.

    ACCELERATORS are the run's `probe.accelerators`; before they are known
    (None) a CPU default is priced, so that a bad catalog or --machine fails
    early.  With no --machine an accelerator run is priced as the smallest
    catalog machine that carries its accelerators, and a CPU run as VMs of its
    vCPU count, of CPU's (`probe.cpu`) kind (tpubench.cost.run.cpu_family).
    """
    from tpubench.cost import run

    hourly, note = run.prices(
        machines=tuple(cost.machine),
        price_per_hour=cost.price_per_hour,
        catalog_path=cost.price_catalog,
        pricing_kind=cost.pricing,
        accelerators=accelerators,
        cpu=cpu,
    )
    basis = "override" if cost.price_per_hour is not None else cost.pricing
    return Prices(tuple(hourly), note, basis)


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
    return {
        "pricing": priced.pricing,
        "machines": rows,
        "note": priced.note,
        "examples_per_epoch": usage.examples_per_epoch,
    }


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
    return {"pricing": priced.pricing, "machines": rows, "note": priced.note}
