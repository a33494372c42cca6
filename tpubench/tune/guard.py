"""The numerics guard: a short trial's loss checked against fp32's before it may win.

`check` runs the fp32 reference (and, with `numerics_apart`, the setting's
own run on real data) through the search's trials, so their time is spent
from its budget, and remembers each verdict per the axes that change the
arithmetic; numerics.py compares the two losses.
"""

from __future__ import annotations

import dataclasses

from tpubench.core.precision import Precision
from tpubench.tune import numerics, outcomes


def check(search, o: outcomes.Outcome) -> str | None:
    """Why O's numerics disqualify it (NaN, or a loss off from fp32's), else None.

    The reference is fp32 without XLA at O's batch size, over the same steps.
    With `numerics_apart` both are their own runs on real data, one per
    (batch, precision, XLA): the axes that change the arithmetic; the
    others (threads, layout, steps per loop) only reorder fp32 sums."""
    if o.status == "invalid":
        return f"NaN/inf loss ({o.reason or 'training diverged'})"
    if o.status != "ok" or o.steps != search.opts.trial_steps:
        return None
    s, d = o.setting, search.space.default
    ref_s = dataclasses.replace(d, batch_size=s.batch_size, precision=Precision.FP32, xla=False)
    apart = search.opts.numerics_apart
    key = dataclasses.replace(ref_s, precision=s.precision, xla=s.xla) if apart else s
    if key == ref_s:
        return None
    if key in search.checked:
        return search.checked[key]
    ref = search.trial(ref_s, o.steps, 0, "fp32 reference", check=apart)
    cand = o
    if apart:
        cand = None if ref is None else search.trial(key, o.steps, 0, "numerics", check=True)
    ran = cand is not None and cand.status in ("ok", "invalid")
    if ref is None or ref.status != "ok" or not ran:
        # Not carried on: a setting whose numerics are unknown is not a way to train faster.
        missing = "the budget had no room" if ref is None or cand is None else "a run failed"
        return f"numerics not checked ({missing} for the fp32 comparison on {_data(search)})"
    why = numerics.check(s.precision, cand, ref)
    search.checked[key] = why
    line = f"REJECTED: {why}" if why else f"ok: {numerics.agreement(cand, ref)}"
    data = _data(search)
    search.result.checks.append((key, f"numerics of {search.name(key)} on {data}: {line}"))
    search.say(search.result.checks[-1][1])
    return why


def _data(search) -> str:
    return "real data" if search.opts.numerics_apart else "the trials' data"
