"""Durations for people, in the two forms tpubench prints them.

`short` picks the unit a reader takes in at once (42.1 s, 12.5 min, 3.2 h,
4.1 d): report tables and `advise`'s lines.  `clock` is a stopwatch's
H:MM:SS: plans and cost previews (the study's and the launcher's), where
rows of estimates line up.  `figure` is a bare number of seconds for a
column whose header names the unit (a study's `s/epoch`).  None of them
prints 0 for a time that is not 0.
"""

from __future__ import annotations

import math


def short(seconds: float | None) -> str:
    """Seconds in a unit a reader takes in at once: 42.1 s, 12.5 min, 3.2 h, 4.1 d."""
    if seconds is None:
        return "n/a"
    for unit, size, limit in (("s", 1, 100), ("min", 60, 100 * 60), ("h", 3600, 48 * 3600)):
        if abs(seconds) < limit:
            return f"{seconds / size:.3g} {unit}" if size == 1 else f"{seconds / size:.1f} {unit}"
    return f"{seconds / 86400:,.1f} d"


def figure(seconds: float) -> str:
    """Seconds as a bare figure: 1,234 / 45 / 2.5 / 0.43 / 0.0043 (two significant digits
    below 10 s, so a short time never prints as 0)."""
    if seconds == 0 or not math.isfinite(seconds) or abs(seconds) >= 9.95:
        return f"{seconds:,.0f}"
    rounded = float(f"{seconds:.2g}")  # 0.0999 -> 0.1, shown 0.10
    return f"{rounded:.{1 - math.floor(math.log10(abs(rounded)))}f}"


def clock(seconds: float) -> str:
    """H:MM:SS, rounded to the second: 3725.4 -> '1:02:05'."""
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
