"""One way to print a dollar figure: three significant digits, never fewer than two decimals.

$1,234.57 · $12.35 · $1.17 · $0.871 · $0.000100 · $0.00000350: the same
precision whether a figure is a dollar or a millionth of one, and never
scientific notation beside plain decimals.
"""

from __future__ import annotations

import math

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
