"""Is the leader really faster than the runner-up?  Paired log-ratios, looked at in rounds.

The two best settings run in rounds, one run of each per round and back to
back (the order turns each round), so the two runs of a round share
whatever else the machine was doing at that moment.  Each round gives one
log-ratio ln(rate_A / rate_B); their mean and Student's t interval (n - 1
degrees of freedom), exponentiated, are the speed-up and its interval.
Logs because speed-ups multiply, and because a ratio's noise is closer to
symmetric on a log scale.

The rounds look at the interval after every planned round and stop once
it settles the question, so a plain 95% interval looked at 8 times would
call a tie a winner far more often than 5% of the time (16.7% of 100,000
simulated tied tunes, looks after rounds 3 to 10).  `Plan` fixes the looks
before the first one, after rounds FIRST..LAST, and spends almost nothing
of the 5% before the last (Haybittle and Peto's design): a look before
the last settles only at 3.29 standard errors (a two-sided 0.1%, after a
look's t statistic is turned into the normal score of the same tail
probability), and the last look gets what is left, c.  Under a tie with
normal log-ratios the t statistics of the looks have one joint law
whatever the noise (they do not depend on its scale), so c is found once
per plan by simulation (`boundary`: 200,000 simulated tied tunes, a fixed
seed, calibrated to 4.8% so that the calibration's own simulation error,
about 0.05%, cannot carry it past 5%): the chance that any look calls a
tie is at most 5%, and the intervals printed at the looks cover the true
ratio all together with at least 95% probability.  The last look is
nearly a single 95% test at the same rounds (c is about 2.0 where a single
test's is 1.96), so a tune finds a real difference about as often as a
fixed test would (docs/tune.md, `bench/tune_power.py`).  A look the budget
forces early is one of the planned looks, at its own boundary: the looks
it prevents are never taken.

Three answers, each with its interval: a winner (the interval excludes 1),
equivalent within the margin (the interval lies inside +/- the margin,
5% unless told), or not settled (neither; the answer says roughly how
many rounds at the noise seen would settle it).
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


MARGIN = 0.05  # what "equivalent" means unless told: the interval inside +/-5%
EARLY_Z = 3.29  # a look before the last: a two-sided 0.1% on the normal scale
_SPENT = 0.048  # what the looks of a plan spend together, calibrated (module docstring)
_PATHS, _SEED = 200_000, 20261207  # the boundary's simulated tunes


@functools.lru_cache(maxsize=256)
def boundary(first: int, last: int) -> float:
    """c: the last look's boundary on the normal scale for looks after rounds FIRST..LAST.

    One look (FIRST == LAST): 1.95996..., a plain 95% interval.  Otherwise
    the c at which simulated tied tunes call a winner at some look in
    _SPENT of them (the earlier looks at EARLY_Z), the look's t statistic
    turned into the normal score of the same tail probability.
    """
    from scipy import stats

    if first >= last:
        return float(stats.norm.isf((1.0 - LEVEL) / 2.0))
    import numpy as np

    rng = np.random.default_rng(_SEED)
    logs = rng.standard_normal((_PATHS, last))
    n = np.arange(1, last + 1)
    mean = np.cumsum(logs, axis=1) / n
    sq = np.cumsum(logs**2, axis=1)

    def score(k: int):
        sd = np.sqrt(np.maximum(sq[:, k - 1] - k * mean[:, k - 1] ** 2, 1e-300) / (k - 1))
        t = np.abs(mean[:, k - 1]) / (sd / math.sqrt(k))
        return stats.norm.isf(stats.t.sf(t, k - 1))  # the same one-sided tail, normal scale

    early = np.zeros(_PATHS, dtype=bool)
    for k in range(first, last):
        early |= score(k) >= EARLY_Z
    # The tunes not stopped early that the last look may still call: _SPENT in all.
    left = _SPENT - early.mean()
    return float(np.quantile(np.where(early, 0.0, score(last)), 1.0 - left))


@dataclasses.dataclass(frozen=True)
class Ratio:
    """How many times faster the first setting is than the second, with a 95% interval
    (at a look of a plan: one of intervals that hold the ratio together at 95%)."""

    ratio: float
    low: float | None  # None: fewer than 2 pairs, no interval
    high: float | None
    n: int
    looks: int = 1  # the looks of the plan this interval is one of
    sd: float | None = None  # of the log-ratios: the noise of a round

    @property
    def decided(self) -> bool:
        """The interval excludes 1: the order of the two is settled at 95%."""
        return self.low is not None and (self.low > 1.0 or self.high < 1.0)

    def equivalent(self, margin: float = MARGIN) -> bool:
        """The interval lies inside 1/(1 + MARGIN) .. 1 + MARGIN: the two are as fast."""
        return self.low is not None and self.low >= 1 / (1 + margin) and self.high <= 1 + margin

    def flipped(self) -> Ratio:
        """The same comparison the other way round (B over A)."""
        inv = lambda x: None if x is None else 1.0 / x  # noqa: E731
        return Ratio(1.0 / self.ratio, inv(self.high), inv(self.low), self.n, self.looks, self.sd)

    def interval_text(self) -> str:
        if self.low is None:
            return f"no interval: n={self.n}"
        looks = f", adjusted for {self.looks} looks" if self.looks > 1 else ""
        return f"95% interval {self.low:.2f}-{self.high:.2f}, n={self.n}{looks}"


def paired(a: list[float], b: list[float], plan: Plan | None = None) -> Ratio | None:
    """A over B from rates paired by round (A[i] and B[i] ran back to back); None if no pair.

    The interval is the look's of PLAN after round n (`Plan.multiplier`);
    no plan: a plain 95% interval."""
    logs = [math.log(x / y) for x, y in zip(a, b, strict=True) if x and y and x > 0 and y > 0]
    if not logs:
        return None
    plan = plan or Plan(len(logs), len(logs))
    n = len(logs)
    mean = sum(logs) / n
    if n < 2:
        return Ratio(math.exp(mean), None, None, 1, plan.looks)
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    half = plan.multiplier(n) * sd / math.sqrt(n)
    return Ratio(math.exp(mean), math.exp(mean - half), math.exp(mean + half), n, plan.looks, sd)


@dataclasses.dataclass(frozen=True)
class Plan:
    """The looks at the leaders' interval, fixed before the first: after rounds FIRST..LAST.

    The rounds stop at the first look that settles (`settles`: a winner, or
    equivalent within MARGIN), or after round LAST."""

    first: int
    last: int
    margin: float = MARGIN

    @classmethod
    def of(cls, repeats: int, last: int, margin: float = MARGIN) -> Plan:
        """Looks after rounds REPEATS..LAST (from round 2: one round has no interval)."""
        return cls(min(max(2, repeats), last), last, margin)

    @property
    def looks(self) -> int:
        return self.last - self.first + 1

    def multiplier(self, n: int) -> float:
        """The t multiplier of the interval after round N (N >= 2): the look's boundary on
        the normal scale (EARLY_Z before the last, `boundary` at it) as Student's t with
        N - 1 degrees of freedom."""
        return _multiplier(self.first, self.last, n)

    def paired(self, a: list[float], b: list[float]) -> Ratio | None:
        """A over B at this plan's look after round len(A) (see `paired`)."""
        return paired(a, b, self)

    def settles(self, n: int, ratio: Ratio | None) -> bool:
        """Whether the look after round N decides: a planned look whose interval excludes 1
        or lies inside the margin."""
        if not (self.first <= n <= self.last) or ratio is None:
            return False
        return ratio.decided or ratio.equivalent(self.margin)


@functools.lru_cache(maxsize=4096)
def _multiplier(first: int, last: int, n: int) -> float:
    from scipy import stats

    z = EARLY_Z if n < last else boundary(first, last)
    return float(stats.t.isf(stats.norm.sf(z), n - 1))


def rounds_to_settle(ratio: Ratio, margin: float) -> int | None:
    """Roughly the rounds at RATIO's noise whose 95% interval would be no wider than the
    margin (a half-width of ln(1 + MARGIN) from one test at that many rounds); None
    without an interval."""
    if ratio.sd is None or ratio.sd == 0:
        return None
    half = math.log(1 + margin)
    n = ratio.n + 1
    while t_quantile(LEVEL, n - 1) * ratio.sd / math.sqrt(n) > half and n < 100_000:
        n += 1
    return n


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The answer of a tune: which of the two leaders, and how sure."""

    winner: str  # the setting's name
    other: str
    ratio: Ratio | None
    busy: int = 0  # rounds with a run on a busy host (kept, and said)
    reason: str = ""  # why the rounds stopped
    margin: float = MARGIN

    @property
    def decided(self) -> bool:
        return self.ratio is not None and self.ratio.decided

    @property
    def equivalent(self) -> bool:
        return self.ratio is not None and self.ratio.equivalent(self.margin)

    @property
    def outcome(self) -> str:
        """winner | equivalent | not settled."""
        if self.decided:
            return "winner"
        return "equivalent" if self.equivalent else "not settled"

    def text(self) -> str:
        """'A, 1.30x B (95% interval 1.20-1.40, n=5, adjusted for 8 looks)'; 'equivalent
        within ±5%: pick either of A and B (...)'; or 'not settled: ...' with its interval
        (or none: one round, no runner-up) and what would settle it."""
        busy = f"; {self.busy} round(s) had a busy host" if self.busy else ""
        why = f"; {self.reason}" if self.reason else ""
        r, pct = self.ratio, f"±{100 * self.margin:g}%"
        if r is None:
            what = self.reason or "no runner-up measured the same way"
            return f"not settled: {self.winner}, with no interval ({what})"
        if r.low is None:
            return (
                f"not settled: {self.winner}, {r.ratio:.2f}x {self.other} in one round, "
                f"no interval (n=1{busy}{why})"
            )
        if self.decided:
            return f"{self.winner}, {r.ratio:.2f}x {self.other} ({r.interval_text()}{busy})"
        if self.equivalent:
            return (
                f"equivalent within {pct}: pick either of {self.winner} and {self.other} "
                f"({r.ratio:.2f}x, {r.interval_text()}{busy})"
            )
        need = rounds_to_settle(r, self.margin)
        more = (
            f"; about {need} rounds at this noise ({100 * r.sd:.1f}% a round) would settle it "
            "within " + pct + ", or less noise a round (a quieter machine, longer trials)"
            if need
            else ""
        )
        return (
            f"not settled: {self.winner}, {r.ratio:.2f}x {self.other} ({r.interval_text()}"
            f"{busy}{why}): the interval holds both no difference and more than {pct}{more}"
        )
