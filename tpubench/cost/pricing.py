"""Dollar figures: $/hour of a machine, then $/epoch, $ per run and $ to target.

$/hour is the sum of the machine's parts, each `count x unit price` from
one catalog row; every figure keeps the rows it used (key, date, source,
status) so a run record says where its prices came from.  An unknown key or
a missing price is an error, never a silent $0.
"""

from __future__ import annotations

import dataclasses
import datetime
import math

from tpubench.core import errors
from tpubench.core.basis import Basis
from tpubench.cost import catalog as catalog_lib
from tpubench.cost import catalog_rows, machine

# The parameter name `catalog` is part of the public signature, hence `catalog_lib`.


@dataclasses.dataclass(frozen=True)
class PriceLine:
    """One priced part of a machine.

    Attributes:
      count: units of `row_key` priced (8 for `gcp:tpu-v5e-8`, 4 for `4xgcp:v100`).
      key: the part's key as written, with its `@when` pin if any.
      row_key: the catalog row used (differs from `key` for TPU slices).
      as_of: the row's date.
      source: the row's source.
      status: the row's status (confirmed, stale, historical...).
      unit: the row's unit, e.g. gpu-hour.
      unit_price: USD per unit-hour under the chosen pricing.
      subtotal: count x unit_price, USD per hour.
      note: how a TPU slice name became `count` (empty otherwise).
    """

    count: int
    key: str
    row_key: str
    as_of: datetime.date
    source: str
    status: str
    unit: str
    unit_price: float
    subtotal: float
    note: str = ""
    date_known: bool = True  # False: as_of is the day the row was read (catalog_rows.dated)

    def to_dict(self) -> dict:
        """Returns JSON-friendly values (as_of as an ISO date string)."""
        d = dataclasses.asdict(self)
        d["as_of"] = self.as_of.isoformat()
        return d


@dataclasses.dataclass(frozen=True)
class HourlyPrice:
    """What a machine costs per hour and which catalog rows say so.

    Attributes:
      usd_per_hour: the total.
      pricing: the basis: on demand, spot or override (`--price_per_hour`).
      lines: one line per part; empty for an override.
      machine: the machine description (canonical spelling), '' if none.
      accelerators: the GPUs or TPU chips the catalog says the machine
        carries (4 for a tpu-v2-8, 8 for a tpu-v5e-8; 0 for a CPU machine),
        None for an override, which names no catalog machine.
    """

    usd_per_hour: float
    pricing: Basis
    lines: tuple[PriceLine, ...]
    machine: str
    accelerators: int | None = None

    def to_dict(self) -> dict:
        """Returns JSON-friendly values for run records."""
        return {
            "usd_per_hour": self.usd_per_hour,
            "pricing": self.pricing,
            "machine": self.machine,
            "lines": [line.to_dict() for line in self.lines],
        }


def hourly(
    machine_spec: str, catalog: catalog_lib.Catalog, pricing: Basis = Basis.ON_DEMAND
) -> HourlyPrice:
    """Prices a `--machine` description per hour.

    Args:
      machine_spec: e.g. `gcp:n1-standard-8+4xgcp:v100` (see `machine.parse`).
      catalog: the price catalog.
      pricing: on demand or spot (preemptible), parsed at the edge; applies to every part.

    Returns:
      The total and one line per part.

    Raises:
      UsageError: a malformed description.
      PriceError: an unknown key, or a row without a price for `pricing` (a spot
        price refused at import, above on demand, says so).
    """
    parsed = machine.parse(machine_spec)
    lines = []
    for part, res in parsed.resolve(catalog):
        row = res.row
        unit_price = row.spot if pricing == Basis.SPOT else row.on_demand
        if unit_price is None:
            other = pricing.other
            refused = catalog_rows.refused_spot(row) if pricing == Basis.SPOT else ""
            if refused:  # the source's spot is above on demand: no discount to answer with
                raise errors.PriceError(
                    f"{part.pinned_key}: {refused}; {other} is available (--pricing={other})"
                )
            raise errors.PriceError(
                f"{part.pinned_key}: catalog row {row.key} ({row.as_of}) has no {pricing} "
                f"price; {other} is available (--pricing={other})"
            )
        count = part.count * res.units
        lines.append(
            PriceLine(
                count=count,
                key=part.pinned_key,
                row_key=row.key,
                as_of=row.as_of,
                source=row.source,
                status=row.status,
                unit=row.unit,
                unit_price=unit_price,
                subtotal=count * unit_price,
                note=res.note,
                date_known=row.date_known,
            )
        )
    total = math.fsum(line.subtotal for line in lines)
    chips = parsed.accelerators(catalog).count
    return HourlyPrice(total, pricing, tuple(lines), parsed.spec, chips)


def override(usd_per_hour: float, machine_spec: str | None = None) -> HourlyPrice:
    """A price given by the user (`--price_per_hour`), stronger than any catalog.

    Args:
      usd_per_hour: USD per hour for the whole machine; must be > 0.
      machine_spec: a label for the machine, kept as written (it need not be
        in any catalog: the override is for machines that are not).

    Raises:
      UsageError: the price is not a positive finite number.
    """
    try:
        value = float(usd_per_hour)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise errors.UsageError(
            f"--price_per_hour {usd_per_hour!r} must be a positive number of USD per hour, "
            "e.g. 2.48"
        )
    return HourlyPrice(value, Basis.OVERRIDE, (), (machine_spec or "").strip())


def compare(
    machine_specs: list[str], catalog: catalog_lib.Catalog, pricing: Basis = Basis.ON_DEMAND
) -> list[HourlyPrice]:
    """Prices several machines the same way, in the order given."""
    return [hourly(spec, catalog, pricing) for spec in machine_specs]


def _positive(x: float | None) -> bool:
    return x is not None and math.isfinite(x) and x > 0


def summarize(
    price: HourlyPrice,
    *,
    examples_per_sec: float,
    examples_per_epoch: int,
    run_seconds: float,
    seconds_to_target: float | None,
    num_accelerators: int,
) -> dict:
    """Turns a measured rate into dollar figures for a run record.

    A figure that cannot be computed (no throughput, target not reached) is
    None: never a division error and never $0.

    Args:
      price: the machine's hourly price.
      examples_per_sec: measured global training throughput.
      examples_per_epoch: examples in one training epoch.
      run_seconds: wall time the machine was held for the run.
      seconds_to_target: time to reach `--target_accuracy`, None if not reached.
      num_accelerators: accelerators the run held (0 for CPU only); the
        catalog's count for the priced machine wins when it has one (a
        tpu-v2-8 is 4 chips however many TensorCores ran replicas).

    Returns:
      A JSON-friendly dict: usd_per_hour, hours_per_epoch, usd_per_epoch,
      usd_run, usd_to_target, usd_per_million_examples, examples_per_usd,
      usd_per_accelerator_hour, num_accelerators, examples_per_sec_per_chip,
      usd_per_chip_hour, pricing, machine, rows.
    """
    usd_h = price.usd_per_hour
    rate_ok = _positive(examples_per_sec) and _positive(usd_h)
    hours_per_epoch = None
    if rate_ok and _positive(examples_per_epoch):
        hours_per_epoch = examples_per_epoch / examples_per_sec / 3600.0
    return {
        "machine": price.machine,
        "pricing": price.pricing,
        "usd_per_hour": usd_h,
        "hours_per_epoch": hours_per_epoch,
        "usd_per_epoch": hours_per_epoch * usd_h if hours_per_epoch is not None else None,
        "usd_run": run_seconds / 3600.0 * usd_h if _positive(run_seconds) else None,
        "usd_to_target": (
            seconds_to_target / 3600.0 * usd_h if _positive(seconds_to_target) else None
        ),
        "usd_per_million_examples": 1e6 / examples_per_sec / 3600.0 * usd_h if rate_ok else None,
        "examples_per_usd": examples_per_sec * 3600.0 / usd_h if rate_ok else None,
        **per_chip(price, examples_per_sec, num_accelerators, "examples_per_sec_per_chip"),
        "rows": [line.to_dict() for line in price.lines],
    }


def chips(price: HourlyPrice, num_accelerators: int) -> int:
    """The machine's GPUs or TPU chips: the catalog's count, else the run's NUM_ACCELERATORS."""
    return price.accelerators or max(int(num_accelerators or 0), 0)


def per_chip(price: HourlyPrice, rate: float, num_accelerators: int, rate_key: str) -> dict:
    """Per-accelerator figures, so a 4-chip and an 8-chip machine compare: the chips,
    RATE per chip (as RATE_KEY) and $ per chip-hour; None on a CPU-only machine."""
    n = chips(price, num_accelerators)
    usd_h = price.usd_per_hour
    return {
        "num_accelerators": n,
        "usd_per_accelerator_hour": usd_h / n if n > 0 else None,
        rate_key: rate / n if n > 0 and _positive(rate) else None,
        "usd_per_chip_hour": usd_h / n if n > 0 and _positive(usd_h) else None,
    }


def summarize_inference(
    price: HourlyPrice,
    *,
    predictions_per_sec: float,
    run_seconds: float,
    num_accelerators: int,
) -> dict:
    """Turns a measured prediction rate into dollar figures for an infer record.

    $ per million predictions = $/hour / (predictions/sec x 3600) x 1e6.  A
    figure that cannot be computed (no rate) is None, never $0.

    Args:
      price: the machine's hourly price.
      predictions_per_sec: measured global inference throughput.
      run_seconds: wall time of the timed section.
      num_accelerators: accelerators of the machine (0 for CPU only).

    Returns:
      A JSON-friendly dict: machine, pricing, usd_per_hour,
      usd_per_million_predictions, predictions_per_usd, usd_run,
      num_accelerators, usd_per_accelerator_hour, rows.
    """
    usd_h = price.usd_per_hour
    rate_ok = _positive(predictions_per_sec) and _positive(usd_h)
    return {
        "machine": price.machine,
        "pricing": price.pricing,
        "usd_per_hour": usd_h,
        "usd_per_million_predictions": (
            usd_h / (predictions_per_sec * 3600.0) * 1e6 if rate_ok else None
        ),
        "predictions_per_usd": predictions_per_sec * 3600.0 / usd_h if rate_ok else None,
        "usd_run": run_seconds / 3600.0 * usd_h if _positive(run_seconds) else None,
        **per_chip(price, predictions_per_sec, num_accelerators, "predictions_per_sec_per_chip"),
        "rows": [line.to_dict() for line in price.lines],
    }
