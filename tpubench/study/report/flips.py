"""Cost verdicts on two price bases, and what price would flip them (from the catalog).

Each cell is priced as its setup says (`pricing:`, the seed's own basis); the
other basis (spot <-> on demand) comes from the same catalog row, so a
reader sees whether the basis moved the verdict.  A flip line says at what
hourly price (or spot discount) the cheapest setup would lose to the next.
Pure Python: the cells' seconds per epoch and the catalog.
"""

from __future__ import annotations

import functools

from tpubench.core import errors, money
from tpubench.core.basis import Basis
from tpubench.cost import catalog, pricing
from tpubench.study.report import judge as J


@functools.lru_cache(maxsize=1)
def _catalog():
    return catalog.load()


def hourly(machine: str, basis: Basis) -> float | None:
    """$/hour of MACHINE on BASIS from the built-in catalog, or None if it has no such price."""
    if not machine or machine in ("?", "unpriced") or basis.other is None:
        return None
    try:
        return pricing.hourly(machine, _catalog(), basis).usd_per_hour
    except errors.TpubenchError:
        return None


def usd_epoch(m, basis: Basis) -> float | None:
    """M's $/epoch on BASIS: its own figure on its basis, else seconds x the other price."""
    if basis == (m.pricing or Basis.ON_DEMAND):
        return m.usd_epoch
    price = hourly(m.machine, basis)
    if price is None or not m.sec_epoch:
        return None
    return m.sec_epoch * price / 3600


def cheapest(ms: dict, basis: Basis | None) -> tuple[str | None, dict]:
    """(the cheapest label, {label: $/epoch}) over MS on BASIS (None: each cell's own)."""
    costs = {k: (m.usd_epoch if basis is None else usd_epoch(m, basis)) for k, m in ms.items()}
    costs = {k: v for k, v in costs.items() if v}
    if len(costs) < 2:
        return None, costs
    return min(costs, key=costs.get), costs


def basis_line(ms: dict) -> str | None:
    """Which setup is cheapest on each basis; says when the basis moves the verdict."""
    own, _ = cheapest(ms, None)
    if own is None:
        return None
    moved = []
    for basis in (Basis.SPOT, Basis.ON_DEMAND):
        best, costs = cheapest(ms, basis)
        if best is None or len(costs) < len(ms):
            continue  # the catalog lacks one setup's price on this basis
        moved.append(f"all {basis.label}: {best}")
        if best != own:
            moved[-1] += " (this basis moves the verdict)"
    if not moved:
        return None
    return f"cheapest on each cell's own basis: {own}; " + "; ".join(moved)


def flip_lines(ms: dict) -> list[str]:
    """What would flip `cheapest` among MS (label -> Measured), on each cell's own basis
    (and whether its 95% intervals of $/epoch already overlap the next one's)."""
    best, costs = cheapest(ms, None)
    if best is None:
        return []
    w = ms[best]
    runner = min((k for k in costs if k != best), key=costs.get)
    r = ms[runner]
    if not w.sec_epoch or not r.sec_epoch or not w.usd_hour or not r.usd_hour:
        return []
    tie_w = r.usd_epoch / w.sec_epoch * 3600  # W's $/hour at which it costs what R does
    tie_r = w.usd_epoch / r.sec_epoch * 3600
    basis = (w.pricing or Basis.ON_DEMAND).label
    out = [
        f"{best} stays cheapest unless its machine costs more than {money.usd(tie_w)}/h "
        f"(now {money.usd(w.usd_hour)}/h, {basis}); {runner} wins below "
        f"{money.usd(tie_r)}/h (now {money.usd(r.usd_hour)}/h)"
    ]
    if not J.apart(w, r, "usd_epoch"):
        out.append(f"{best} and {runner} are within noise of each other: their $/epoch overlap")
    on_demand = hourly(w.machine, Basis.ON_DEMAND) if w.pricing == Basis.SPOT else None
    if on_demand:
        now, needed = 1 - w.usd_hour / on_demand, 1 - tie_w / on_demand
        if needed <= 0:
            out.append(f"{best} stays cheapest even at its on-demand price")
        else:
            out.append(
                f"{best} stays cheapest unless the spot discount falls below {needed:.0%} "
                f"(now {now:.0%})"
            )
    return out
