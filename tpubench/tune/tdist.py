"""Student's t distribution: its CDF and quantiles at any level, in pure Python.

The rounds' decision (decide.py) tests at a per-look level such as 99.375%
(95% split over 8 looks), so a table of t(0.975, df) is not enough.  The CDF
is the regularized incomplete beta function, evaluated by its continued
fraction (Lentz's method, as in Numerical Recipes' `betacf`); a quantile is
the CDF inverted by bisection.  Both are exact to about 1e-10, far below the
three decimals any interval is printed with (tests/tune checks them against
SciPy and against printed tables).
"""

from __future__ import annotations

import functools
import math

_EPS = 1e-15
_TINY = 1e-300


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, _nonzero(1.0 - qab * x / qap)
    d = 1.0 / d
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        even = m * (b - m) * x / ((qam + m2) * (a + m2))
        odd = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        for aa in (even, odd):
            d = 1.0 / _nonzero(1.0 + aa * d)
            c = _nonzero(1.0 + aa / c)
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            return h
    raise ArithmeticError(f"incomplete beta did not converge (a={a}, b={b}, x={x})")


def _nonzero(v: float) -> float:
    return v if abs(v) > _TINY else _TINY


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), for a, b > 0 and 0 <= x <= 1."""
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"x={x} outside [0, 1]")
    if x in (0.0, 1.0):
        return x
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):  # the fraction converges fast here
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with DF degrees of freedom."""
    if df <= 0:
        raise ValueError(f"degrees of freedom {df}; accepted: more than 0")
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))  # P(T > |t|)
    return 1.0 - tail if t > 0 else tail


@functools.lru_cache(maxsize=4096)
def quantile(p: float, df: float) -> float:
    """The t with P(T <= t) = P, for 0 < P < 1 (bisection on the CDF, to 1e-12)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"probability {p}; accepted: between 0 and 1")
    if df <= 0:
        raise ValueError(f"degrees of freedom {df}; accepted: more than 0")
    if p < 0.5:
        return -quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while cdf(hi, df) < p:
        lo, hi = hi, hi * 2.0
    while hi - lo > 1e-12 * max(1.0, hi):
        mid = (lo + hi) / 2.0
        if cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0
