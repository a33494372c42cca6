"""Is the leader really faster than the runner-up?  Paired log-ratios, looked at in rounds.

Pure Python.  The two best settings run in rounds, one run of each per
round and back to back (the order turns each round), so the two runs of a
round share whatever else the machine was doing at that moment.  Each round
gives one log-ratio ln(rate_A / rate_B); their mean and Student's t
interval (n - 1 degrees of freedom), exponentiated, are the speed-up and
its interval.  Logs because speed-ups multiply, and because a ratio's noise
is closer to symmetric on a log scale.

The rounds look at the interval after every round and stop once it excludes
1, so a plain 95% interval looked at 8 times would call a tie a winner far
more often than 5% of the time (16.7% of 100,000 simulated tied tunes,
looks after rounds 3 to 10; this plan: 3.0%, docs/tune.md).  `Plan` fixes
the looks before the first one: one per round from the first to the last
planned, `looks` of them, each at 5% / looks (Bonferroni).  Whatever
rounds are looked at, and wherever the rounds end (a decision, the last
look, or the budget), the chance that any look calls a tie is at most the
sum, 5%; and every interval printed is one of at most `looks` intervals
that all cover the true ratio together with 95% probability.  A look the
budget forces early is one of those looks, at the same level: the looks
it prevents are never taken.
"""

from __future__ import annotations

import dataclasses
import functools
import math

LEVEL = 0.95  # over all the looks of a plan


@functools.lru_cache(maxsize=4096)
def t_quantile(level: float, df: int) -> float:
    """The two-sided t multiplier of a LEVEL interval with DF degrees of freedom.

    SciPy's Student t (a dependency through scikit-learn, declared directly):
    a per-look level such as 99.375% (95% over 8 looks) is beyond any table.
    """
    if df < 1:
        raise ValueError(f"degrees of freedom {df}; accepted: 1 or more")
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level {level}; accepted: between 0 and 1")
    from scipy import stats  # imported once a tune has rounds to judge

    return float(stats.t.ppf(1.0 - (1.0 - level) / 2.0, df))


@dataclasses.dataclass(frozen=True)
class Ratio:
    """How many times faster the first setting is than the second, with a 95% interval
    (each look's interval at 1 - 5% / LOOKS: see the module's docstring)."""

    ratio: float
    low: float | None  # None: fewer than 2 pairs, no interval
    high: float | None
    n: int
    looks: int = 1  # the looks of the plan this interval is one of

    @property
    def level(self) -> float:
        """The level of this one interval: 95% spread over the plan's looks."""
        return 1.0 - (1.0 - LEVEL) / self.looks

    @property
    def decided(self) -> bool:
        """The interval excludes 1: the order of the two is settled at 95%."""
        return self.low is not None and (self.low > 1.0 or self.high < 1.0)

    def flipped(self) -> Ratio:
        """The same comparison the other way round (B over A)."""
        inv = lambda x: None if x is None else 1.0 / x  # noqa: E731
        return Ratio(1.0 / self.ratio, inv(self.high), inv(self.low), self.n, self.looks)

    def interval_text(self) -> str:
        if self.low is None:
            return f"no interval: n={self.n}"
        looks = f", adjusted for {self.looks} looks" if self.looks > 1 else ""
        return f"95% interval {self.low:.2f}-{self.high:.2f}, n={self.n}{looks}"


def paired(a: list[float], b: list[float], looks: int = 1) -> Ratio | None:
    """A over B from rates paired by round (A[i] and B[i] ran back to back); None if no pair.

    The interval is one of LOOKS (at 1 - 5% / LOOKS); LOOKS=1: a plain 95% interval."""
    logs = [math.log(x / y) for x, y in zip(a, b, strict=True) if x and y and x > 0 and y > 0]
    if not logs:
        return None
    n = len(logs)
    mean = sum(logs) / n
    if n < 2:
        return Ratio(math.exp(mean), None, None, 1, looks)
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    level = 1.0 - (1.0 - LEVEL) / looks
    half = t_quantile(level, n - 1) * sd / math.sqrt(n)
    return Ratio(math.exp(mean), math.exp(mean - half), math.exp(mean + half), n, looks)


@dataclasses.dataclass(frozen=True)
class Plan:
    """The looks at the leaders' interval, fixed before the first: after rounds FIRST..LAST.

    The rounds stop at the first look whose interval excludes 1 (`settles`),
    or after round LAST; each interval is at 1 - 5% / `looks`."""

    first: int
    last: int

    @classmethod
    def of(cls, repeats: int, last: int) -> Plan:
        """Looks after rounds REPEATS..LAST (from round 2: one round has no interval)."""
        return cls(min(max(2, repeats), last), last)

    @property
    def looks(self) -> int:
        return self.last - self.first + 1

    def paired(self, a: list[float], b: list[float]) -> Ratio | None:
        """A over B at this plan's level (see `paired`)."""
        return paired(a, b, self.looks)

    def settles(self, n: int, ratio: Ratio | None) -> bool:
        """Whether the look after round N decides: a planned look whose interval excludes 1."""
        return self.first <= n <= self.last and ratio is not None and ratio.decided


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
        """'A, 1.30x B (95% interval 1.20-1.40, n=5, adjusted for 8 looks)', 'a tie within
        noise: pick either ...'
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
