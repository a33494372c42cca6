"""The rounds: the two leaders, with the defaults beside them, until their order is settled.

Each round runs every setting of the group once, back to back, the order
turning each round, at the longer length.  The looks at the leaders'
interval are planned once, after the first round (when a round's cost is
known, and before any look): one after each round from `--repeats` to the
last round the budget is estimated to hold, at most `--max_repeats`
(decide.Plan: together at 95%).  The rounds stop at the first look that
settles (a winner, or equivalent within --equivalence_margin), after the
last planned round (what the
budget was estimated to hold: budget may be left), or when the budget has
no room for a trial.  Setting the last look by the budget, not
by --max_repeats alone, keeps a small budget from spreading its 5% over
looks it will never take.
"""

from __future__ import annotations

from tpubench.tune import decide


def run(srch, longer: int, top: list, defaults_ok: bool) -> None:
    """Rounds of TOP (the two leaders, or one) and the defaults; sets SRCH.result's verdict,
    winner and speed-up over the defaults.  SRCH is the search.Search that runs the trials."""
    d, r, opts = srch.space.default, srch.result, srch.opts
    if not top:
        best = srch.leaders(opts.trial_steps, 1)
        name = srch.name(best[0]) if best else "nothing"
        r.verdict = decide.Verdict(
            name, "", None, reason="no run reached the longer length", margin=opts.margin
        )
        return
    group = top + ([d] if d not in top and defaults_ok else [])
    plan = decide.Plan.of(opts.repeats, opts.max_repeats, opts.margin)
    stop, n = "", 0
    while not stop:
        turn = n % len(group)
        for s in group[turn:] + group[:turn]:
            if srch.trial(s, longer, n, "repeat" if n else "longer") is None:
                stop = "the budget ended"
        n += 1
        if n == 1:
            plan, cost = _plan(srch, group, longer)
        ratio = pair(srch, top, longer, plan)[0] if len(top) == 2 else None
        if (ratio is None and n >= opts.repeats) or plan.settles(n, ratio):
            break
        if n >= plan.last and not stop and plan.last >= opts.max_repeats:
            stop = f"{n} rounds run (--max_repeats)"
        elif n >= plan.last and not stop:
            stop = f"{n} round(s), all the budget was estimated to hold at {cost:.0f} s a round"
    r.winner = top[0]
    other, ratio, busy = "", None, 0
    if len(top) == 2:
        ratio, busy = pair(srch, top, longer, plan)
        if ratio and ratio.ratio < 1:
            top, ratio = top[::-1], ratio.flipped()
        r.winner, other = top[0], srch.name(top[1])
    why = stop if ratio and not ratio.decided else ""
    if len(top) == 1:
        why = "the only setting besides the defaults that reached the longer runs"
    r.verdict = decide.Verdict(srch.name(r.winner), other, ratio, busy, why, opts.margin)
    if r.winner != d and defaults_ok:
        r.vs_defaults = pair(srch, [r.winner, d], longer, plan)[0]


def _plan(srch, group: list, longer: int) -> tuple[decide.Plan, float]:
    """The looks, and the estimated seconds of a round: the rounds the rest of the budget
    holds, from the first round's runs."""
    opts = srch.opts
    cost = sum(srch.estimate(s, longer) for s in group)
    left = opts.budget_seconds - srch.result.spent_seconds
    holds = 1 + int(left // cost) if cost > 0 else opts.max_repeats
    last = max(1, min(opts.max_repeats, holds))
    return decide.Plan.of(opts.repeats, last, opts.margin), cost


def pair(srch, two: list, steps: int, plan=None) -> tuple[decide.Ratio | None, int]:
    """The first over the second, paired by round (the interval of PLAN's look, decide.Plan;
    None: a plain 95%); and the rounds with a busy host."""
    runs = [
        {o.repeat: o for o in srch.result.outcomes if o.setting == s and o.steps == steps}
        for s in two
    ]
    both = sorted(
        n
        for n in set(runs[0]) & set(runs[1])
        if runs[0][n].status == "ok" and runs[1][n].status == "ok"
    )
    a, b = [runs[0][n].rate for n in both], [runs[1][n].rate for n in both]
    busy = sum(1 for n in both if runs[0][n].busy or runs[1][n].busy)
    return decide.paired(a, b, plan), busy
