"""The rounds' decision: Student's t, the paired interval, and a 95% that stays 95% when the
rounds look after every round (simulated tunes, driving the functions the search calls)."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from tpubench.tune import decide

# -- Student's t ---------------------------------------------------------------------------


def test_t_quantiles_match_printed_tables():
    # Two-sided 95% and 99% multipliers as every statistics textbook prints them.
    printed = {
        (0.975, 1): 12.706,
        (0.975, 2): 4.303,
        (0.975, 3): 3.182,
        (0.975, 10): 2.228,
        (0.975, 30): 2.042,
        (0.975, 120): 1.980,
        (0.995, 2): 9.925,
        (0.995, 9): 3.250,
        (0.9995, 4): 8.610,
    }
    for (p, df), t in printed.items():  # a two-sided level: p = 1 - (1 - level) / 2
        assert decide.t_quantile(2 * p - 1, df) == pytest.approx(t, abs=5e-4), (p, df)
    assert decide.t_quantile(0.95, 10**7) == pytest.approx(1.95996, abs=1e-4)  # the normal's


@pytest.mark.parametrize("bad", [(0.0, 3), (1.0, 3), (0.9, 0)])
def test_t_quantile_refuses_a_bad_level_or_df_naming_it(bad):
    with pytest.raises(ValueError, match=str(bad[0] if bad[1] else bad[1])):
        decide.t_quantile(*bad)


# -- the paired interval and the plan of looks ---------------------------------------------


def test_paired_interval_is_the_t_interval_of_the_log_ratios():
    a, b = [130.0, 125.0, 136.0, 128.0], [100.0, 98.0, 103.0, 99.0]
    logs = [math.log(x / y) for x, y in zip(a, b, strict=True)]
    mean, se = statistics.fmean(logs), statistics.stdev(logs) / math.sqrt(4)
    r = decide.paired(a, b)
    assert r.n == 4 and r.decided and r.looks == 1
    assert r.ratio == pytest.approx(math.exp(mean))
    assert r.sd == pytest.approx(statistics.stdev(logs))
    t = 3.182446  # t(0.975, 3)
    assert (r.low, r.high) == pytest.approx((math.exp(mean - t * se), math.exp(mean + t * se)))
    assert r.interval_text() == f"95% interval {r.low:.2f}-{r.high:.2f}, n=4"
    # Round 4 of a plan of looks after rounds 3..10 is an early look: 3.29 standard errors
    # on the normal scale (two-sided 0.1002%), t(1 - 0.000501, 3) = 12.9227 (SciPy).
    plan = decide.Plan.of(3, 10)
    r8 = plan.paired(a, b)
    assert r8.low == pytest.approx(math.exp(mean - 12.9227 * se), rel=1e-4)
    assert (
        r8.interval_text() == f"95% interval {r8.low:.2f}-{r8.high:.2f}, n=4, adjusted for 8 looks"
    )
    one = decide.paired([100.0], [90.0])
    assert one.low is None and not one.decided  # one pair: no interval
    v = decide.Verdict("A", "B", one, reason="the budget ended")
    assert v.text() == "not settled: A, 1.11x B in one round, no interval (n=1; the budget ended)"


def test_the_last_look_gets_nearly_all_of_the_5_percent():
    # One look: a plain 95% (1.96).  Looks after rounds 3..10: the earlier seven at 3.29
    # spend about 0.2%, so the last look's c is close to 1.96; the fewer the early looks,
    # the closer.  c is calibrated by simulation with a fixed seed: the same every time.
    assert decide.boundary(3, 3) == pytest.approx(1.959964, abs=1e-6)
    c10, c5 = decide.boundary(3, 10), decide.boundary(3, 5)
    assert 1.96 < c5 < c10 < 2.05
    assert decide.boundary(3, 10) == c10
    plan = decide.Plan.of(3, 10)
    # The last look's multiplier beside a single 95% test's at 10 rounds, t(0.975, 9) = 2.262.
    assert 2.262 < plan.multiplier(10) < 2.35
    assert plan.multiplier(9) > 5  # an early look: only a clear difference settles there


def test_the_plan_looks_after_rounds_repeats_to_last_and_only_then():
    plan = decide.Plan.of(3, 10)
    assert (plan.first, plan.last, plan.looks) == (3, 10, 8)
    assert decide.Plan.of(1, 10).first == 2  # one round has no interval to look at
    assert decide.Plan.of(3, 2).looks == 1  # the budget holds 2 rounds: one look, at 95%
    settled = decide.paired([130.0, 125.0, 136.0, 128.0], [100.0, 98.0, 103.0, 99.0], plan)
    assert plan.settles(4, settled)
    assert not plan.settles(2, settled) and not plan.settles(11, settled)
    assert not plan.settles(4, None)


# -- the three answers ---------------------------------------------------------------------


def test_an_interval_inside_the_margin_is_equivalent_and_stops_the_rounds():
    r = decide.Ratio(1.01, 0.97, 1.04, 6, 8, 0.02)
    assert not r.decided and r.equivalent(0.05) and not r.equivalent(0.02)
    assert decide.Plan.of(3, 10).settles(6, r)
    assert not decide.Plan.of(3, 10, margin=0.02).settles(6, r)
    v = decide.Verdict("A", "B", r)
    assert v.outcome == "equivalent"
    assert v.text() == (
        "equivalent within ±5%: pick either of A and B (1.01x, 95% interval 0.97-1.04, n=6, "
        "adjusted for 8 looks)"
    )


def test_an_interval_holding_1_and_more_than_the_margin_is_not_settled_with_what_would():
    # The case: 0.94-1.53 after 5 rounds, a log-ratio s.d. of 20% a round.
    r = decide.Ratio(1.2, 0.94, 1.53, 5, 3, 0.2)
    v = decide.Verdict("A", "B", r, reason="the budget ended")
    assert v.outcome == "not settled" and not v.decided
    # t(0.975, 66) x 0.2 / sqrt(67) = 0.048784 <= ln 1.05 = 0.048790; at 66 rounds 0.04917.
    assert decide.rounds_to_settle(r, 0.05) == 67
    assert v.text() == (
        "not settled: A, 1.20x B (95% interval 0.94-1.53, n=5, adjusted for 3 looks; the "
        "budget ended): the interval holds both no difference and more than ±5%; about 67 "
        "rounds at this noise (20.0% a round) would settle it within ±5%, or less noise a "
        "round (a quieter machine, longer trials)"
    )
    winner = decide.Verdict("A", "B", decide.Ratio(1.3, 1.2, 1.4, 5, 8, 0.05))
    assert winner.outcome == "winner" and winner.text().startswith("A, 1.30x B (95% interval")
    lone = decide.Verdict("A", "", None, reason="no run reached the longer length")
    assert lone.outcome == "not settled"
    assert lone.text() == "not settled: A, with no interval (no run reached the longer length)"


# -- simulated tunes: ties and real differences --------------------------------------------

REPEATS, MAX_REPEATS = 3, 10  # tune's defaults: looks after rounds 3..10


def _simulate(speedup: float, noise: float, tunes: int, seed: int):
    """Tunes of two settings whose rates are log-normal (NOISE: sd of ln(rate) per run),
    A truly SPEEDUP x B.  Each tune's rounds run as search's do: after round n, the plan's
    interval; stop at the first planned look that settles, or after MAX_REPEATS rounds.

    Returns (share of tunes decided by the plan, of them decided for A, the naive rule's
    share: a plain 95% interval at every round from REPEATS, the rule tune used before)."""
    rng = random.Random(seed)
    plan = decide.Plan.of(REPEATS, MAX_REPEATS)
    decided = for_a = naive = 0
    for _ in range(tunes):
        a, b, settled, fooled = [], [], None, False
        for n in range(1, MAX_REPEATS + 1):
            a.append(speedup * math.exp(rng.gauss(0.0, noise)))
            b.append(math.exp(rng.gauss(0.0, noise)))
            if n < REPEATS:
                continue
            if settled is None:
                ratio = plan.paired(a, b)
                if plan.settles(n, ratio):
                    settled = ratio
            if not fooled:
                fooled = decide.paired(a, b).decided  # one look: 95% at every look
            if settled is not None and fooled:
                break
        decided += settled is not None and settled.decided
        for_a += settled is not None and settled.decided and settled.ratio > 1
        naive += fooled
    return decided / tunes, for_a / tunes, naive / tunes


def test_a_tie_is_called_a_winner_in_at_most_5_percent_of_tunes():
    # 12,000 tunes: the plan's rate is ~4.8% by its calibration (docs/tune.md); the binomial
    # standard error is 0.2%.  The rule of a plain 95% interval at each of the 8 looks
    # calls ~17% of ties winners: the simulation can tell.
    decided, _, naive = _simulate(1.0, 0.03, tunes=12_000, seed=38)
    assert decided <= 0.05, decided
    assert naive > 0.10, naive


def test_a_real_10_percent_speed_up_is_found_at_10_percent_noise_about_as_often_as_once():
    # 10% noise per run, looks after rounds 3..10: the plan finds the faster one in about
    # 47% of tunes (bench/tune_power.py), a single test after round 10 in about 48%;
    # Bonferroni's split over the 8 looks (tune's rule before) found it in about 22%.
    decided, for_a, _ = _simulate(1.10, 0.10, tunes=3_000, seed=7)
    assert for_a >= 0.40 and for_a >= decided - 0.01, (decided, for_a)
