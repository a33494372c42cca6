"""Dollar figures, one module for every printer (tpubench's and the launcher's).

`usd` is how a result is shown, everywhere: three significant digits, never
fewer than two decimals.  $1,234.57 · $12.35 · $1.17 · $0.871 · $0.000100 ·
$0.00000350: the same precision whether a figure is a dollar or a millionth
of one, and never scientific notation beside plain decimals.

`exact` is a price list's own figure, unrounded (`tpubench prices`): a
catalog row says 0.01306, and the list shows 0.01306, not $0.0131.
"""

from __future__ import annotations

import math

from tpubench.core import basis as basis_lib
from tpubench.core.basis import Basis

SIGNIFICANT = 3


def usd(x: float | None, none: str = "n/a") -> str:
    """Formats USD: `usd(0.8714)` -> '$0.871', `usd(3.5e-06)` -> '$0.00000350'."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return none
    if x == 0:
        return "$0.00"
    sign = "-" if x < 0 else ""
    rounded = float(f"{abs(x):.{SIGNIFICANT - 1}e}")  # 0.9996 -> 1.0, so it prints $1.00
    decimals = max(2, SIGNIFICANT - 1 - math.floor(math.log10(rounded)))
    return f"{sign}${abs(x):,.{decimals}f}"


def exact(value: float | None, max_decimals: int = 6) -> str:
    """A catalog price as written: 2 to `max_decimals` decimals, no $, '-' for None."""
    if value is None:
        return "-"
    text = f"{value:.{max_decimals}f}".rstrip("0")
    whole, _, frac = text.partition(".")
    return f"{whole}.{frac.ljust(2, '0')}"


def basis(pricing: Basis | None) -> str:
    """How a price basis is named beside its figures: 'on demand', 'spot', '--price_per_hour'."""
    known = basis_lib.recorded(pricing) if pricing else None
    return known.label if known else (pricing or "unknown basis")


def prices_on(pricing: Basis | None) -> str:
    """The phrase a table title names its basis with: 'on-demand prices (--pricing=on_demand)'."""
    if pricing == Basis.OVERRIDE:
        return "the price given by --price_per_hour"
    if pricing in basis_lib.CHOSEN:
        return f"{basis(pricing).replace(' ', '-')} prices (--pricing={pricing})"
    return f"prices of an unknown basis ({pricing})"


def _get(item, key):
    """KEY of a record section, a mapping (as written) or a record view (as read)."""
    return item.get(key) if isinstance(item, dict) else getattr(item, key, None)


def is_on_basis(row, pricing: Basis | None) -> bool:
    """Whether a cost row is priced on PRICING, an override standing for either.

    A row that names no basis was priced on demand, the only default there was.
    """
    return basis_lib.recorded(_get(row, "pricing")) in (pricing, Basis.OVERRIDE)


def on_basis(machines, pricing: Basis | None) -> list:
    """The cost rows of MACHINES priced on PRICING (`is_on_basis`), in their order.

    MACHINES are a record's `cost.machines` (mappings or record views);
    a record keeps every basis the catalog had, and an answer uses one.
    """
    return [m for m in machines if is_on_basis(m, pricing)]


def record_basis(cost) -> Basis | None:
    """The basis a record answered on: its `cost.pricing`, else (older records) its
    first cost row's, else on demand (None: a basis no tpubench wrote).  COST is the
    record's `cost` section."""
    machines = _get(cost, "machines") or []
    own = _get(machines[0], "pricing") if machines else None
    return basis_lib.recorded(_get(cost, "pricing") or own)
