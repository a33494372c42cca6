"""The price basis of a dollar figure: one typed value, parsed once where it enters.

A basis names the catalog column a price is read from (on demand, spot) or
says the user gave the price (override: `--price_per_hour`).  Its text enters
at the edge only, and is parsed here once: the `--pricing` flag (cli/), a
study or sweep file (study/, the launcher), a catalog's columns (cost/), a
run record read back (`recorded`).  Past the edge it travels as a `Basis`;
being a `StrEnum`, a member writes the same JSON string a record always held,
so old records read unchanged.  No other module spells the values.
"""

from __future__ import annotations

import enum

from tpubench.core import errors


class Basis(enum.StrEnum):
    """Which price a dollar figure is on."""

    ON_DEMAND = "on_demand"
    SPOT = "spot"  # preemptible
    OVERRIDE = "override"  # --price_per_hour: the user's price, no catalog column

    @property
    def label(self) -> str:
        """How the basis is named beside its figures: 'on demand', 'spot', '--price_per_hour'."""
        return _LABELS[self]

    @property
    def other(self) -> Basis | None:
        """The other catalog column, offered beside a figure on this one; None for an override."""
        return _OTHER.get(self)


# What --pricing, a study's and a sweep file's `pricing` accept: the catalog's columns.
CHOSEN = (Basis.ON_DEMAND, Basis.SPOT)
# The basis of a figure that names none: older records, a study setup without one.
DEFAULT = Basis.ON_DEMAND

_LABELS = {Basis.ON_DEMAND: "on demand", Basis.SPOT: "spot", Basis.OVERRIDE: "--price_per_hour"}
_OTHER = {Basis.ON_DEMAND: Basis.SPOT, Basis.SPOT: Basis.ON_DEMAND}


def parse(value: object, where: str = "--pricing") -> Basis:
    """VALUE (text a user wrote) as one of the CHOSEN bases.

    Raises:
      UsageError: one line naming WHERE, the bad value and the accepted ones,
        e.g. "--pricing='spto': not a price basis; accepted: on_demand, spot".
    """
    if value in CHOSEN:
        return Basis(value)
    accepted = ", ".join(CHOSEN)
    raise errors.UsageError(f"{where}={value!r}: not a price basis; accepted: {accepted}")


def recorded(value: object) -> Basis | None:
    """The basis a record, catalog row or cost section says (any member, an override
    included); DEFAULT when it names none; None for a value no tpubench wrote."""
    if value is None or value == "":
        return DEFAULT
    try:
        return Basis(value)
    except ValueError:
        return None
