"""The median's interval at any number of trials (issue 58: 2.0**n overflowed past 1,023).

Small n against exact binomial tails worked out in integers; large n against
scipy.stats.binom (a separate implementation) and the normal approximation.
"""

import math
import statistics
from fractions import Fraction

import pytest
from scipy.stats import binom

from tpubench.report import stats


def _exact_confidence(n: int, k: int) -> Fraction:
    """1 - 2 P(B <= k-1), B ~ Binomial(n, 1/2), as an exact fraction."""
    return 1 - 2 * Fraction(sum(math.comb(n, i) for i in range(k)), 2**n)


@pytest.mark.parametrize(
    "n, k, confidence",
    [
        (3, 1, Fraction(3, 4)),
        (6, 1, Fraction(31, 32)),
        (10, 2, Fraction(1024 - 22, 1024)),  # P(B <= 1) = 11/1024
        (100, 40, _exact_confidence(100, 40)),
        (1023, 480, _exact_confidence(1023, 480)),
        (1024, 481, _exact_confidence(1024, 481)),
        (2000, 956, _exact_confidence(2000, 956)),
    ],
)
def test_small_and_boundary_n_match_the_exact_binomial(n, k, confidence):
    got_k, got = stats.order_ranks(n)
    assert got_k == k
    # Exact in integers up to 2,000 trials: the float nearest the exact fraction.
    assert got == pytest.approx(float(confidence), rel=1e-15, abs=1e-16)
    # k is the largest rank that still reaches 95% (below 6 trials: the range, k = 1).
    assert k == 1 or confidence >= Fraction(95, 100) > _exact_confidence(n, k + 1)


@pytest.mark.parametrize("n", [1024, 1025, 2001, 5000, 20000, 1_000_000])
def test_large_n_gives_scipys_ranks_and_confidence(n):
    k, confidence = stats.order_ranks(n)
    # scipy's binomial: k-1 is within the 2.5% tail and k is not.
    assert binom.cdf(k - 1, n, 0.5) <= 0.025 < binom.cdf(k, n, 0.5)
    assert confidence == pytest.approx(1 - 2 * binom.cdf(k - 1, n, 0.5), rel=1e-12)
    assert 0.95 <= confidence < 0.96
    # The normal approximation: k ~ n/2 - 1.96 sqrt(n)/2, within a couple of ranks.
    assert abs(k - (n / 2 - 1.959964 * math.sqrt(n) / 2)) < 2


def test_the_interval_of_5000_trials_is_the_right_order_statistics():
    values = [float(v) for v in range(5000, 0, -1)]  # 1..5000, in reverse
    iv = stats.median_interval(values)
    k = int(binom.ppf(0.025, 5000, 0.5))  # the least j with P(B <= j) >= 2.5%
    assert iv.n == 5000 and iv.median == statistics.median(values) == 2500.5
    assert (iv.low, iv.high) == (float(k), float(5000 + 1 - k))
    assert iv.describe() == "5000 trials: 95.1% interval of the median"
