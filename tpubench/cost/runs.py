"""Prices for a run, and the cost rows of train and infer records.  Pure Python.

A run is priced up front (a bad --machine fails in milliseconds, before
TensorFlow is imported) and its rows are filled in when its rate is known.
"""

from __future__ import annotations

import dataclasses

from tpubench.core.basis import Basis
from tpubench.core.config import CostConfig


@dataclasses.dataclass(frozen=True)
class Prices:
    """Hourly prices of the machines a run is priced as, and a note on how they were chosen."""

    hourly: tuple
    note: str | None = None
    pricing: Basis = Basis.ON_DEMAND  # the basis of the run's answers (--pricing, or override)
    what_if: tuple = ()  # --price_as: hourly prices of machines the run did not run on


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

    if accelerators is not None and cost.price_per_hour is None:
        check_measured(cost, accelerators)
    hourly, note = run.prices(
        machines=tuple(cost.machine),
        price_per_hour=cost.price_per_hour,
        catalog_path=cost.price_catalog,
        pricing_kind=cost.pricing,
        accelerators=accelerators,
        cpu=cpu,
    )
    basis = Basis.OVERRIDE if cost.price_per_hour is not None else cost.pricing
    what_if = ()
    if cost.price_as:
        what_if, _ = run.prices(
            machines=tuple(cost.price_as),
            catalog_path=cost.price_catalog,
            pricing_kind=cost.pricing,
        )
    return Prices(tuple(hourly), note, basis, tuple(what_if))


def check_measured(cost: CostConfig, accelerators: list[dict]) -> None:
    """Refuses a --machine that does not carry the ACCELERATORS the run used (one line)."""
    from tpubench.core import errors
    from tpubench.cost import catalog, detect, measured_on

    cat = catalog.load(cost.price_catalog)
    ran = detect.detect(accelerators)
    for spec in cost.machine:
        why = measured_on.mismatch(spec, cat, ran)
        if why:
            raise errors.UsageError(why)


def check_host(cost: CostConfig, **host) -> None:
    """Before TensorFlow loads: refuses a --machine whose accelerators this host cannot run.

    HOST: accelerator, tpu, no_gpu, tpu_host (measured_on.before_devices).
    """
    from tpubench.core import errors
    from tpubench.cost import catalog, measured_on

    if cost.price_per_hour is not None or not cost.machine:
        return
    cat = catalog.load(cost.price_catalog)
    for spec in cost.machine:
        why = measured_on.before_devices(spec, cat, **host)
        if why:
            raise errors.UsageError(why)


def _rows(priced: Prices, row) -> list[dict]:
    """ROW(price) for every price: the what-ifs' marked `what_if`."""
    return [row(p) for p in priced.hourly] + [row(p) | {"what_if": True} for p in priced.what_if]


def train_costs(priced: Prices, usage: Usage) -> dict:
    """The `cost` section of a train record."""
    from tpubench.cost import pricing

    rows = _rows(
        priced,
        lambda price: pricing.summarize(
            price,
            examples_per_sec=usage.examples_per_sec or 0.0,
            examples_per_epoch=usage.examples_per_epoch,
            run_seconds=usage.run_seconds,
            seconds_to_target=usage.seconds_to_target,
            num_accelerators=usage.num_accelerators,
        ),
    )
    return {
        "pricing": priced.pricing,
        "machines": rows,
        "note": priced.note,
        "examples_per_epoch": usage.examples_per_epoch,
    }


def infer_costs(priced: Prices, usage: Usage) -> dict:
    """The `cost` section of an infer record: $ per million predictions."""
    from tpubench.cost import pricing

    rows = _rows(
        priced,
        lambda price: pricing.summarize_inference(
            price,
            predictions_per_sec=usage.examples_per_sec or 0.0,
            run_seconds=usage.run_seconds,
            num_accelerators=usage.num_accelerators,
        ),
    )
    return {"pricing": priced.pricing, "machines": rows, "note": priced.note}
