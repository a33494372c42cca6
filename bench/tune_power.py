"""How often tune's rounds call a winner: ties (false winners) and real gains (power).

Simulates tunes of two settings whose rates per run are log-normal with the
given noise (the standard deviation of ln(rate) per run), A truly GAIN x B,
through tune's own decision code: `decide.Plan.of(repeats, max_repeats)`,
`Plan.paired` after each round and `Plan.settles` at each planned look,
exactly as `tune/rounds.py` calls them.  Beside it, on the same simulated
rounds, two references: one 95% test after the last round (no looks
before it), and the 95% split evenly over the looks (Bonferroni: tune's
rule before 2026-12-07).  Columns: the share of tunes that named A the
winner, the share that named B, and the mean rounds the plan ran.

  python bench/tune_power.py                     # 3/10/15% noise, gains 1.0/1.1/1.3x
  python bench/tune_power.py --tunes=20000 --noise=0.05 --gains=1.05
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time

from tpubench.tune import decide


def _interval_excludes_1(logs: list[float], multiplier: float) -> int:
    """+1: the interval lies above 1 (A faster), -1: below, 0: it holds 1."""
    mean, sd = statistics.fmean(logs), statistics.stdev(logs)
    half = multiplier * sd / math.sqrt(len(logs))
    return 1 if mean - half > 0 else -1 if mean + half < 0 else 0


def simulate(gain: float, noise: float, tunes: int, repeats: int, last: int, seed: int):
    """{rule: (share for A, share for B)} and the plan's mean rounds (SEED: the case's own)."""
    rng = random.Random(seed)
    plan = decide.Plan.of(repeats, last)
    counts = {"tune's plan": [0, 0], "one test after the last round": [0, 0], "Bonferroni": [0, 0]}
    rounds = 0
    for _ in range(tunes):
        a = [gain * math.exp(rng.gauss(0.0, noise)) for _ in range(last)]
        b = [math.exp(rng.gauss(0.0, noise)) for _ in range(last)]
        logs = [math.log(x / y) for x, y in zip(a, b, strict=True)]
        n_run = last
        for n in range(plan.first, last + 1):  # tune's rounds: stop at the look that settles
            ratio = plan.paired(a[:n], b[:n])
            if plan.settles(n, ratio):
                n_run = n
                if ratio.decided:
                    counts["tune's plan"][0 if ratio.ratio > 1 else 1] += 1
                break
        rounds += n_run
        side = _interval_excludes_1(logs, decide.t_quantile(0.95, last - 1))
        if side:
            counts["one test after the last round"][0 if side > 0 else 1] += 1
        for n in range(plan.first, last + 1):
            split = decide.t_quantile(1 - 0.05 / plan.looks, n - 1)
            side = _interval_excludes_1(logs[:n], split)
            if side:
                counts["Bonferroni"][0 if side > 0 else 1] += 1
                break
    shares = {k: (v[0] / tunes, v[1] / tunes) for k, v in counts.items()}
    return shares, rounds / tunes


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tunes", type=int, default=5000, help="simulated tunes a case")
    p.add_argument("--noise", default="0.03,0.10,0.15", help="sd of ln(rate) per run")
    p.add_argument("--gains", default="1.0,1.1,1.3", help="A's true speed-up over B")
    p.add_argument("--repeats", type=int, default=3, help="the first look (tune's --repeats)")
    p.add_argument("--max_repeats", type=int, default=10, help="the last (--max_repeats)")
    args = p.parse_args(argv)
    noises = [float(x) for x in args.noise.split(",")]
    gains = [float(x) for x in args.gains.split(",")]
    plan = decide.Plan.of(args.repeats, args.max_repeats)
    c = decide.boundary(plan.first, plan.last)
    print(
        f"looks after rounds {plan.first}..{plan.last} ({plan.looks}); each look before the "
        f"last at {decide.EARLY_Z} standard errors, the last at {c:.3f}; {args.tunes:,} "
        "tunes a case"
    )
    print("| noise | gain | rule | A named | B named | mean rounds |")
    print("| --- | --- | --- | --- | --- | --- |")
    t0 = time.perf_counter()
    for i, (noise, gain) in enumerate((n, g) for n in noises for g in gains):
        shares, rounds = simulate(gain, noise, args.tunes, args.repeats, args.max_repeats, i)
        for rule, (for_a, for_b) in shares.items():
            mean = f"{rounds:.1f}" if rule == "tune's plan" else ""
            print(
                f"| {100 * noise:g}% | {gain:g}x | {rule} | {100 * for_a:.1f}% | "
                f"{100 * for_b:.1f}% | {mean} |"
            )
    print(
        f"({time.perf_counter() - t0:.0f} s; a tie's 'A named' + 'B named' is the false-winner "
        "rate)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
