"""Medians with distribution-free confidence intervals over repeated trials.

Benchmark timings are skewed (a noisy neighbour only ever slows a run down),
so a median and a rank-based interval describe them better than a mean and
a t-interval.  The interval for the median comes from order statistics and
the binomial distribution (no assumption about the timing distribution), as
recommended by Hoefler and Belli, "Scientific benchmarking of parallel
computing systems" (SC 2015).  Fewer than 6 trials cannot give 95%: the
interval is then the observed range and its real confidence is reported,
never rounded up to 95%.
"""

from __future__ import annotations

import dataclasses
import math
import statistics

LEVEL = 0.95


@dataclasses.dataclass(frozen=True)
class Interval:
    """A median over N trials with an interval [low, high] of confidence `confidence`.

    With one trial low == high == median and confidence is 0: there is no
    interval, and the renderings say so.
    """

    median: float
    low: float
    high: float
    n: int
    confidence: float

    @property
    def has_interval(self) -> bool:
        return self.n >= 2

    def scaled(self, factor: float) -> Interval:
        """The same interval in other units (factor > 0)."""
        return Interval(
            self.median * factor, self.low * factor, self.high * factor, self.n, self.confidence
        )

    def describe(self) -> str:
        """How the interval was obtained, for captions and table notes."""
        if self.n < 2:
            return "1 trial: no interval"
        if self.confidence >= LEVEL:
            return f"{self.n} trials: {self.confidence:.1%} interval of the median"
        return f"{self.n} trials: range, {self.confidence:.1%} confidence (6+ trials give 95%)"


# Up to this many trials the tail is summed exactly in integers (int / int is
# rounded once); past it scipy's regularized incomplete beta, about 1e-13
# relative at any n.  (2.0**n overflowed a float at n = 1,024: issue 58.)
EXACT_UP_TO = 2000


def _binom_cdf(k: int, n: int) -> float:
    """P(B <= k) for B ~ Binomial(n, 1/2), for any n."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if n <= EXACT_UP_TO:
        term, total = 1, 1  # C(n, 0)
        for i in range(k):
            term = term * (n - i) // (i + 1)  # C(n, i + 1), exactly
            total += term
        return total / (1 << n)
    from scipy.special import betainc  # only for large n: scipy takes 0.7 s to import

    return float(betainc(n - k, k + 1, 0.5))  # I_{1/2}(n-k, k+1) = P(B <= k)


def order_ranks(n: int, level: float = LEVEL) -> tuple[int, float]:
    """(k, confidence): the interval [x_(k), x_(n+1-k)] (1-based ranks) covers the median
    with probability `confidence` = 1 - 2 P(B <= k-1) >= `level`, k as large as possible.

    When no k reaches `level` (n < 6 for 95%), k is 1 (the range) and the
    confidence is what the range actually gives.  k is found by bisection
    (P(B <= k) grows with k), so a million trials take a few dozen tails.
    """
    if n < 1:
        raise ValueError("no values")
    alpha = (1.0 - level) / 2.0
    # k is the least j >= 1 with P(B <= j) > alpha, capped at (n + 1) // 2.
    low, high = 1, (n + 1) // 2
    while low < high:
        mid = (low + high) // 2
        if _binom_cdf(mid, n) <= alpha:
            low = mid + 1
        else:
            high = mid
    k = low
    confidence = 1.0 - 2.0 * _binom_cdf(k - 1, n) if n >= 2 else 0.0
    return k, confidence


def median_interval(values: list[float], level: float = LEVEL) -> Interval | None:
    """The median of VALUES (None and NaN dropped) with its order-statistic interval.

    Returns None when no finite value is left.
    """
    xs = sorted(float(v) for v in values if v is not None and math.isfinite(float(v)))
    if not xs:
        return None
    n = len(xs)
    k, confidence = order_ranks(n, level)
    return Interval(statistics.median(xs), xs[k - 1], xs[n - k], n, confidence)
