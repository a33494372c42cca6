"""When a finding may be judged, and how an interval turns into a verdict.

A verdict needs the study's repeats of every cell it reads (at --scale=smoke
none is judged: tiny models say nothing about the published figures).  A
figure whose 95% interval spans an edge of the finding's band is `within
noise`, not `holds` or `does not hold here`.  The same gate holds back every
other line that reads like a verdict: the cost lines (cheapest, what price
would flip it, which basis moves it) and the knee column (study/report/report.py).
"""

from __future__ import annotations

HOLDS = "holds"
FAILS = "does not hold here"
NOISE = "within noise"
SMOKE = "not judged (smoke scale)"


def gate(results, measured: list) -> str | None:
    """Why these cells cannot carry a verdict yet, or None when they can."""
    if results.scale == "smoke":
        return SMOKE
    fewest = min((m.trials for m in measured), default=0)
    if fewest < results.repeats:
        return f"not judged (needs {results.repeats} runs per cell; has {fewest})"
    return None


def verdict(results, measured: list, judged: str) -> str:
    """JUDGED, unless the cells cannot carry a verdict yet (smoke, too few runs)."""
    return gate(results, measured) or judged


def busy(measured) -> str:
    """The mark a figure from a busy host carries beside its verdict ('' when all were quiet)."""
    return " [measured on a busy host]" if any(m.busy for m in measured) else ""


def not_measured(needs: list[str]) -> str:
    """'not measured (needs ...)': the first two distinct needs of the missing cells."""
    said = [n.removeprefix("needs ") for n in list(dict.fromkeys(needs))[:2]]
    return f"not measured (needs {'; '.join(said) or 'a run of `tpubench study run`'})"


def at_least(x: float, ci: tuple | None, threshold: float) -> str:
    """x >= threshold, judged over its interval CI (lo, hi)."""
    lo, hi = ci or (x, x)
    if lo >= threshold:
        return HOLDS
    if hi < threshold:
        return FAILS
    return NOISE


def at_most(x: float, ci: tuple | None, threshold: float) -> str:
    lo, hi = ci or (x, x)
    if hi <= threshold:
        return HOLDS
    if lo > threshold:
        return FAILS
    return NOISE


def in_band(x: float, ci: tuple | None, band) -> str:
    """x inside BAND (study/report/bands.Band), judged over its interval CI at each edge it has."""
    verdicts = [] if band.lo is None else [at_least(x, ci, band.lo)]
    return combine(verdicts + ([] if band.hi is None else [at_most(x, ci, band.hi)]))


def combine(verdicts: list[str]) -> str:
    """All hold: holds; any certainly fails: does not hold; else within noise."""
    if all(v == HOLDS for v in verdicts):
        return HOLDS
    if any(v == FAILS for v in verdicts):
        return FAILS
    return NOISE


def ratio_ci(a, b, attr: str = "rate") -> tuple | None:
    """The interval of a.ATTR / b.ATTR from both cells' intervals (None if either has none)."""
    a_ci, b_ci = getattr(a, f"{attr}_ci"), getattr(b, f"{attr}_ci")
    if not a_ci or not b_ci or b_ci[0] <= 0:
        return None
    return a_ci[0] / b_ci[1], a_ci[1] / b_ci[0]


def shown_ci(ci: tuple | None, fmt: str = "{:.2f}") -> str:
    if not ci:
        return ""
    return f" [95%: {fmt.format(ci[0])}–{fmt.format(ci[1])}]"


def apart(low, high, attr: str = "rate") -> bool:
    """LOW's interval of ATTR lies wholly below HIGH's (so their order is not noise)."""
    lo_ci = getattr(low, f"{attr}_ci")
    hi_ci = getattr(high, f"{attr}_ci")
    if not lo_ci or not hi_ci:
        return getattr(low, attr) < getattr(high, attr)
    return lo_ci[1] < hi_ci[0]
