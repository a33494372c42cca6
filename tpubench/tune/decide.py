"""Is the leader really faster than the runner-up?  A t-interval on paired log-ratios.

Pure Python.  The two best settings run in rounds, one run of each per
round and back to back (the order turns each round), so the two runs of a
round share whatever else the machine was doing at that moment.  Each round
gives one log-ratio ln(rate_A / rate_B); their mean and Student's t
interval (95%, n - 1 degrees of freedom), exponentiated, are the speed-up
and its interval.  Logs because speed-ups multiply, and because a ratio's
noise is closer to symmetric on a log scale.  The interval excluding 1
means the order is settled; a round more is run while it does not and the
budget allows.
"""

from __future__ import annotations

import dataclasses
import math
import statistics

LEVEL = 0.95
# Two-sided 95% quantiles of Student's t, t(0.975, df), for df 1..30; then 40, 60, 120, inf.
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
_T975_TAIL = ((40, 2.021), (60, 2.000), (120, 1.980))


def t975(df: int) -> float:
    """t(0.975, DF): exact to 3 decimals for df 1..30; above, the next tabled df down
    (slightly wide, never narrow)."""
    if df < 1:
        raise ValueError(f"degrees of freedom {df}; accepted: 1 or more")
    if df <= len(_T975):
        return _T975[df - 1]
    return [t for d, t in ((30, _T975[-1]), *_T975_TAIL) if d <= df][-1]


@dataclasses.dataclass(frozen=True)
class Ratio:
    """How many times faster the first setting is than the second, with a 95% interval."""

    ratio: float
    low: float | None  # None: fewer than 2 pairs, no interval
    high: float | None
    n: int

    @property
    def decided(self) -> bool:
        """The interval excludes 1: the order of the two is settled at 95%."""
        return self.low is not None and (self.low > 1.0 or self.high < 1.0)

    def flipped(self) -> Ratio:
        """The same comparison the other way round (B over A)."""
        inv = lambda x: None if x is None else 1.0 / x  # noqa: E731
        return Ratio(1.0 / self.ratio, inv(self.high), inv(self.low), self.n)

    def interval_text(self) -> str:
        if self.low is None:
            return f"no interval: n={self.n}"
        return f"95% interval {self.low:.2f}-{self.high:.2f}, n={self.n}"


def paired(a: list[float], b: list[float]) -> Ratio | None:
    """A over B from rates paired by round (A[i] and B[i] ran back to back); None if no pair."""
    logs = [math.log(x / y) for x, y in zip(a, b, strict=True) if x and y and x > 0 and y > 0]
    if not logs:
        return None
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return Ratio(math.exp(mean), None, None, 1)
    half = t975(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return Ratio(math.exp(mean), math.exp(mean - half), math.exp(mean + half), len(logs))


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The answer of a tune: which of the two leaders, and how sure."""

    winner: str  # the setting's name
    other: str
    ratio: Ratio | None
    busy: int = 0  # rounds with a run on a busy host (kept, and said)
    reason: str = ""  # why the rounds stopped

    @property
    def decided(self) -> bool:
        return self.ratio is not None and self.ratio.decided

    def text(self) -> str:
        """'A, 1.30x B (95% interval 1.20-1.40, n=5)', 'a tie within noise: pick either ...'
        (the interval holds 1), or 'not settled: ...' (one round: no interval)."""
        busy = f"; {self.busy} round(s) had a busy host" if self.busy else ""
        if self.ratio is None:
            why = self.reason or "no runner-up measured the same way"
            return f"{self.winner}, with no confidence to state ({why})"
        r = self.ratio
        why = f"; {self.reason}" if self.reason else ""
        if r.low is None:
            return (
                f"not settled: {self.winner}, {r.ratio:.2f}x {self.other} in one round, "
                f"no interval (n=1{busy}{why})"
            )
        if self.decided:
            return f"{self.winner}, {r.ratio:.2f}x {self.other} ({r.interval_text()}{busy})"
        return (
            f"a tie within noise: pick either of {self.winner} and {self.other} "
            f"({r.ratio:.2f}x, {r.interval_text()}{busy}{why})"
        )
