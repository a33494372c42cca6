"""Durations for people, in the two forms tpubench prints them.

`short` picks the unit a reader takes in at once (42.1 s, 12.5 min, 3.2 h,
4.1 d): report tables and `advise`'s lines.  `clock` is a stopwatch's
H:MM:SS: plans and cost previews (the study's and the launcher's), where
rows of estimates line up.
"""

from __future__ import annotations


def short(seconds: float | None) -> str:
    """Seconds in a unit a reader takes in at once: 42.1 s, 12.5 min, 3.2 h, 4.1 d."""
    if seconds is None:
        return "n/a"
    for unit, size, limit in (("s", 1, 100), ("min", 60, 100 * 60), ("h", 3600, 48 * 3600)):
        if abs(seconds) < limit:
            return f"{seconds / size:.3g} {unit}" if size == 1 else f"{seconds / size:.1f} {unit}"
    return f"{seconds / 86400:,.1f} d"


def clock(seconds: float) -> str:
    """H:MM:SS, rounded to the second: 3725.4 -> '1:02:05'."""
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
