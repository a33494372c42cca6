"""The numerics guard: does a setting train like the fp32 reference?

Pure Python.  Both runs are at the same batch size, for the same steps, on
the same data (real data, guard_data.py: on synthetic batches a net
memorises and any loss falls to near zero).  What is compared is the mean
training loss over the common logged steps of the second half of the runs
(one step's loss is one mini-batch's, noisy), relative to the reference's
own mean there, the loss the user would see, not the first step's.  A floor
of `FLOOR` times the reference's first loss keeps a loss that fell to ~0
from turning every wobble into a large ratio.

The tolerances are wide enough for the run-to-run noise of fp32 itself:
four fp32 mnist_mlp runs on the embedded digits (100 steps, different
threads and XLA) had second-half means 0.174-0.186 (7% apart); bf16 gave
0.188 (+8%).  A setting whose loss is off by more than that is not a
faster way to train the same model.
"""

from __future__ import annotations

import math
import statistics

from tpubench.core.precision import Precision

FLOOR = 0.05  # of the reference's first logged loss: the least scale a loss is judged on


def late_mean(losses, ref_losses) -> tuple[float, float, int, int] | None:
    """(mean, reference mean, first step, last step) over the second half's common steps."""
    mine, ref = dict(losses), dict(ref_losses)
    common = sorted(set(mine) & set(ref))
    if not common:
        return None
    half = common[-1] / 2
    late = [s for s in common if s > half] or common[-1:]
    return (
        statistics.fmean(mine[s] for s in late),
        statistics.fmean(ref[s] for s in late),
        late[0],
        late[-1],
    )


def check(precision: Precision, outcome, reference) -> str | None:
    """Why OUTCOME's loss is off from REFERENCE's (both outcomes.Outcome), else None.

    Falls back to the final losses when a run logged no loss curve.
    """
    if outcome.status == "invalid":
        return f"NaN/inf loss ({outcome.reason or 'training diverged'})"
    got = late_mean(outcome.losses, reference.losses)
    if got:
        mine, ref, first, last = got
        what = f"mean loss {mine:.4g} vs fp32 {ref:.4g} over steps {first}-{last}"
    elif outcome.final_loss is not None and reference.final_loss is not None:
        mine, ref = outcome.final_loss, reference.final_loss
        what = f"loss {mine:.4g} vs fp32 {ref:.4g} after {outcome.steps} steps"
    else:
        return None  # nothing to compare: said by the caller
    if not (math.isfinite(mine) and math.isfinite(ref)):
        return f"NaN/inf loss ({what})"
    tol = precision.tune_loss_tolerance
    first = reference.losses[0][1] if reference.losses else reference.first_loss
    scale = max(abs(ref), FLOOR * abs(first or 0.0))
    off = abs(mine - ref)
    if off > tol * scale:
        return f"{what}: off by {off / scale:.0%} (tolerance {tol:.0%} of {scale:.3g})"
    return None


def agreement(outcome, reference) -> str:
    """How close the two were, for the console: '+8% of fp32 over steps 51-100'."""
    got = late_mean(outcome.losses, reference.losses)
    if not got:
        return "no loss curve to compare"
    mine, ref, first, last = got
    pct = (mine - ref) / ref if ref else 0.0
    return f"mean loss {mine:.4g} vs fp32 {ref:.4g} over steps {first}-{last} ({pct:+.1%})"
