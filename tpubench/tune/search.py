"""The search: short trials one axis at a time, then longer runs and repeats for the leaders.

1. Screen (short trials of `trial_steps`): the plain defaults first, then each
   axis in turn (batch size, steps per loop, precision, XLA, layout,
   threads), every value tried with the others at the best setting so far
   (coordinate descent: a product of them all would be hundreds of
   processes); a second pass from the new best when the first moved it,
   which costs only the points not yet measured.
2. Successive halving: the `finalists` best settings run `LONGER`x longer;
   the better half goes on to `repeats` runs of that length, with the
   defaults beside them so the speed-up compares like with like.

Every trial checks the numerics against fp32 (`guard`) and the budget
before it starts (`fits`).  Trials an earlier run of the same tune recorded
are reused, which also spends their recorded time, so a resumed tune makes
the same decisions.
"""

from __future__ import annotations

import dataclasses
import statistics

from tpubench.core import errors
from tpubench.tune import space, trials

LONGER = 3
# How far a trial's final loss may stray from fp32's at the same batch and
# steps, as a share of the reference's first-step loss (its scale): bf16 has
# an 8-bit mantissa, fp16 10 bits with loss scaling; fp32 differs only by
# the order of its sums (threads, XLA, layouts).
TOLERANCE = {"fp32": 0.02, "fp16": 0.05, "bf16": 0.10}


@dataclasses.dataclass(frozen=True)
class Options:
    trial_steps: int
    budget_seconds: float
    objective: str  # throughput or cost
    finalists: int = 4
    repeats: int = 3
    batch_sizes: tuple[int, ...] = ()  # empty: the default batch and its doublings


@dataclasses.dataclass
class Result:
    outcomes: list = dataclasses.field(default_factory=list)
    disqualified: dict = dataclasses.field(default_factory=dict)  # setting -> reason
    notes: list = dataclasses.field(default_factory=list)
    default_batch: int | None = None
    spent_seconds: float = 0.0


class Search:
    def __init__(self, sp: space.Space, host: space.Host, opts: Options, runner, say):
        self.space, self.host, self.opts, self.runner, self.say = sp, host, opts, runner, say
        self.result = Result()

    # -- one trial ---------------------------------------------------------
    def trial(self, s: space.Setting, steps: int, repeat: int = 0, stage: str = "short"):
        """Runs (or reuses) one trial; None when the budget has no room for it."""
        r = self.result
        found = next(
            (o for o in r.outcomes if (o.setting, o.steps, o.repeat) == (s, steps, repeat)), None
        )
        if found:
            return found
        o = self.runner.recorded(s, steps, repeat)
        if o is None:
            if not self.fits(s, steps):
                r.notes.append(f"budget: {self._name(s)} at {steps} steps (#{repeat + 1}) not run")
                return None
            self.say(f"[{len(r.outcomes) + 1}] {stage} {steps} steps: {self._name(s)} ...")
            o = self.runner.run(s, steps, repeat)
        r.outcomes.append(o)
        r.spent_seconds += o.wall_seconds
        if r.default_batch is None and s == self.space.default:
            r.default_batch = o.batch  # the model's default (x replicas), from the record
        why = self.guard(o)
        if why and s not in r.disqualified:
            r.disqualified[s] = why
        self.say(f"[{len(r.outcomes)}] {stage} {steps} steps: {self._name(s)}: {_said(o, why)}")
        return o

    def fits(self, s: space.Setting, steps: int) -> bool:
        if not self.result.outcomes:
            return True  # the defaults always run: every figure is relative to them
        return self.result.spent_seconds + self.estimate(s, steps) <= self.opts.budget_seconds

    def estimate(self, s: space.Setting, steps: int) -> float:
        """Seconds a trial will take: a like trial's fixed cost plus its steps at its rate."""
        done = [o for o in self.result.outcomes if o.status == "ok" and o.rate]
        like = [o for o in done if o.setting == s] or [
            o for o in done if o.setting.batch_size == s.batch_size
        ]
        o = (like or done or self.result.outcomes)[-1]
        if not o.rate or not o.batch:
            return o.wall_seconds
        per_step = o.batch / o.rate
        fixed = max(0.0, o.wall_seconds - o.steps * per_step)
        return fixed + steps * per_step

    def guard(self, o: trials.Outcome) -> str | None:
        """Why O's numerics disqualify it (NaN, or a loss too far from fp32's), else None."""
        if o.status == "invalid":
            return f"NaN/inf loss ({o.reason or 'training diverged'})"
        if o.status != "ok" or o.final_loss is None or o.steps != self.opts.trial_steps:
            return None
        ref_setting = dataclasses.replace(
            self.space.default, batch_size=o.setting.batch_size, precision="fp32", xla=False
        )
        if o.setting == ref_setting:
            return None
        ref = self.trial(ref_setting, o.steps, 0, "fp32 reference")
        if ref is None or ref.status != "ok" or ref.final_loss is None:
            return None
        tol = TOLERANCE[o.setting.precision]
        scale = max(abs(ref.final_loss), ref.first_loss or 0.0)
        if abs(o.final_loss - ref.final_loss) > tol * scale:
            return (
                f"loss {o.final_loss:.4g} vs fp32 {ref.final_loss:.4g} after {o.steps} steps "
                f"(tolerance {tol:.0%} of {scale:.3g})"
            )
        return None

    # -- the search ----------------------------------------------------------
    def run(self) -> Result:
        d, steps = self.space.default, self.opts.trial_steps
        first = self.trial(d, steps, stage="defaults")
        if first.status not in ("ok", "oom"):
            raise errors.UsageError(
                f"the plain defaults failed, so nothing can be compared: {first.reason}"
                + (f" [run record: {first.record}]" if first.record else "")
            )
        best = d
        for first_pass in (True, False):
            start = best
            for axis in self.space.axes:
                best = self._screen(axis, best, steps, first_pass)
            if best == start:
                break  # a pass that moves nothing: the short round is done
        if not self.leaders(steps, 1):
            self._nothing_ran()
        finalists = self.leaders(steps, self.opts.finalists)
        longer = steps * LONGER
        for s in finalists:
            self.trial(s, longer, 0, "longer")
        top = self.leaders(longer, max(1, len(finalists) // 2))
        if d not in top and first.status == "ok":
            top.append(d)  # the baseline beside the leaders, measured the same way
        for repeat in range(self.opts.repeats):  # repeat 0 of a finalist is its longer run
            for s in top:
                self.trial(s, longer, repeat, "repeat")
        return self.result

    def _screen(self, axis: space.Axis, best: space.Setting, steps: int, first_pass: bool):
        """Tries AXIS's values at BEST; returns the best short trial so far.

        A second pass runs only if the first moved the best: values chosen late
        (steps per loop after XLA, say) can change which earlier value is best,
        and one measurement per value on a busy machine is easily misled."""
        for value in self._values(axis):
            if not first_pass and value in axis.once:
                continue  # no fast path here: one short trial is all it gets
            o = self.trial(best.with_axis(axis.name, value), steps)
            if axis.name == "batch_size" and o is not None and o.status == "oom":
                note = f"batch sizes above {value} not tried: batch {value} ran out of memory"
                if note not in self.result.notes:
                    self.result.notes.append(note)
                break
        leaders = self.leaders(steps, 1)
        return leaders[0] if leaders else best

    def _values(self, axis: space.Axis) -> tuple:
        if axis.name != "batch_size":
            return axis.values
        base = self.result.default_batch
        sizes = self.opts.batch_sizes
        if not sizes and base:
            defaults_oom = any(
                o.status == "oom" for o in self.result.outcomes if o.setting == self.space.default
            )
            # Out of memory at the default batch: look below it instead of above.
            sizes = (
                tuple(b for b in (base // 4, base // 2) if b >= 1)
                if defaults_oom
                else space.batch_sizes_for(base, self.host)
            )
        # The default's batch is the defaults' own setting (None), not a second trial.
        return tuple(None if b == base else b for b in sorted(sizes))

    def leaders(self, steps: int, n: int) -> list[space.Setting]:
        """The N best settings measured at STEPS, best first: not disqualified, and none
        holding a value the hardware has no fast path for (tried once, never carried on)."""
        once = {(a.name, v) for a in self.space.axes for v in a.once}
        by = {}
        for o in self.result.outcomes:
            s = o.setting
            if o.steps != steps or o.status != "ok" or s in self.result.disqualified:
                continue
            if any((name, _value(s, name)) in once for name, _ in once):
                continue
            if not self._searched(s):  # a guard's fp32 reference under a fixed precision
                continue
            by.setdefault(s, []).append(o)
        ranked = sorted(by, key=lambda s: score(by[s], self.opts.objective), reverse=True)
        return ranked[:n]

    def _searched(self, s: space.Setting) -> bool:
        """Whether S differs from the defaults only along the axes searched."""
        axes = {a.name for a in self.space.axes}
        d = self.space.default
        return all(_value(s, name) == _value(d, name) or name in axes for name in space.AXES)

    def _nothing_ran(self):
        ooms = [o for o in self.result.outcomes if o.status == "oom"]
        if ooms and len(ooms) == len(self.result.outcomes):
            sizes = ", ".join(
                str(o.setting.batch_size or f"{self.result.default_batch or 'default'}")
                for o in ooms
            )
            raise errors.UsageError(
                f"every batch size ran out of memory ({sizes}): {ooms[0].reason}; "
                "accepted: --batch_sizes that fit this machine, or smaller --params"
            )
        why = "; ".join(f"{self._name(s)}: {r}" for s, r in self.result.disqualified.items())
        raise errors.UsageError(f"no trial finished with a valid result ({why or 'see logs'})")

    def _name(self, s: space.Setting) -> str:
        return s.describe(self.space.default, self.result.default_batch)


def _value(s: space.Setting, axis: str):
    return (s.intra, s.inter) if axis == "threads" else getattr(s, axis)


def score(outcomes: list, objective: str) -> float:
    """Higher is better: the median rate, or minus the median $/epoch."""
    if objective == "cost":
        usd = [o.usd_per_epoch for o in outcomes if o.usd_per_epoch]
        if usd:
            return -statistics.median(usd)
    rates = [o.rate for o in outcomes if o.rate]
    return statistics.median(rates) if rates else 0.0


def _said(o: trials.Outcome, why: str | None) -> str:
    if o.status == "ok":
        text = f"{o.rate:,.1f} examples/s (compile {o.compile_seconds or 0:.1f} s)"
    elif o.status == "oom":
        text = "out of memory"
    else:
        text = f"{o.status}: {o.reason}"
    if why:
        text += f"; DISQUALIFIED: {why}"
    return text + (" [recorded earlier]" if o.reused else "")
