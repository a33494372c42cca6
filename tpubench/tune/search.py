"""The search: short trials one axis at a time, then the two leaders in rounds until settled.

1. Screen (short trials of `trial_steps`, at most `SHORT_SHARE` of the
   budget): the plain defaults first, then each axis in turn (steps per
   loop, precision, XLA, layout, threads), every value tried with the
   others at the best setting so far (coordinate descent: a product of them
   all would be hundreds of processes); a second pass from the new best when
   the first moved it, which costs only the points not yet measured.
   Batch sizes come last and are reported apart: a batch size changes how
   the model trains, so it is never folded into the speed of "the same
   model" (unless the defaults' batch ran out of memory: then it must move).
2. Rounds (`LONGER`x longer runs): the `finalists` best get one run each;
   the two best of those, with the defaults, then run once per round, back
   to back, the order turning each round (rounds.py), until a planned look
   at the leaders' ratio settles it (decide.py: 95% over all the looks),
   the last planned round, or the end of the budget.

Every short trial's numerics are checked against fp32 (guard.py,
numerics.py), on real data (guard_data.py: the model's own, or for an image
model without any the embedded digits, resized); a trial on a busy host
(core/host_load.BUSY_PERCENT) is run again once and, if still busy, kept and
marked.  Trials an earlier run of the same tune recorded are reused, which
also spends their recorded time, so a resumed tune makes the same decisions.
"""

from __future__ import annotations

import dataclasses

from tpubench.core import errors
from tpubench.tune import decide, guard, outcomes, rounds, space, trials

LONGER = 3
SHORT_SHARE = 0.5  # of the budget, for the short round: the rest decides between the leaders

_SHORT = ("defaults", "short", "other batch", "numerics", "fp32 reference", "again")
# Screening trials on a busy host run again at the end of the short round, budget allowing:
# a re-run at once would spend a small budget before the axes are even tried.
_DEFERRED = ("defaults", "short", "other batch")


@dataclasses.dataclass(frozen=True)
class Options:
    trial_steps: int
    budget_seconds: float
    objective: str  # throughput or cost
    finalists: int = 2
    repeats: int = 3  # rounds at least (budget allowing)
    batch_sizes: tuple[int, ...] = ()  # empty: the default batch and its doublings
    max_repeats: int = 10
    margin: float = 0.05  # --equivalence_margin: "equivalent" is an interval inside +/- this
    numerics_apart: bool = False  # numerics checks are their own runs (on real data)
    guard_data: str = ""  # the data those runs read, said in the summary (guard_data.py)


@dataclasses.dataclass
class Result:
    outcomes: list = dataclasses.field(default_factory=list)
    disqualified: dict = dataclasses.field(default_factory=dict)  # setting -> reason
    notes: list = dataclasses.field(default_factory=list)
    default_batch: int | None = None
    spent_seconds: float = 0.0
    busy: list = dataclasses.field(default_factory=list)  # outcomes run again: busy host
    checks: list = dataclasses.field(default_factory=list)  # (setting, verdict line)
    other_batches: list = dataclasses.field(default_factory=list)  # settings reported apart
    verdict: decide.Verdict | None = None
    winner: space.Setting | None = None  # the verdict's choice (None: by median)
    vs_defaults: decide.Ratio | None = None  # the winner over the defaults, paired by round


class Search:
    def __init__(self, sp: space.Space, host: space.Host, opts: Options, runner, say):
        self.space, self.host, self.opts, self.runner, self.say = sp, host, opts, runner, say
        self.result = Result()
        self.checked: dict = {}  # numerics key -> reason or None (tune/guard.py)
        self.batch_apart = True

    # -- one trial ---------------------------------------------------------
    def trial(self, s: space.Setting, steps: int, repeat=0, stage="short", check=False):
        """Runs (or reuses) one trial; None when the budget has no room for it.

        CHECK: a numerics check's own run (the runner adds real data)."""
        r = self.result
        key = (s, steps, repeat, check)
        found = [o for o in r.outcomes if (o.setting, o.steps, o.repeat, o.numerics) == key]
        if found:
            return found[0]
        attempt, o = 0, None
        while True:
            got = self.runner.recorded(s, steps, repeat, attempt=attempt, numerics=check)
            if got is None:
                if not self.fits(s, steps, stage):
                    if o is None:
                        what = f"{stage} {self.name(s)} at {steps} steps (#{repeat + 1})"
                        if f"budget: {what} not run" not in r.notes:
                            r.notes.append(f"budget: {what} not run")
                        return None
                    break  # the busy run stands, marked
                self.say(f"[{len(r.outcomes) + 1}] {stage} {steps} steps: {self.name(s)} ...")
                got = self.runner.run(s, steps, repeat, attempt=attempt, numerics=check)
            if o is not None:
                r.busy.append(o)
            o = got
            r.spent_seconds += o.wall_seconds
            if not o.busy or attempt >= trials.BUSY_RERUNS or check or stage in _DEFERRED:
                break  # a numerics check's loss does not depend on the host's load
            again = self.runner.recorded(s, steps, repeat, attempt=attempt + 1, numerics=check)
            if again is None and not self.fits(s, steps, stage):
                what = f"{stage} {self.name(s)} at {steps} steps (#{repeat + 1})"
                r.notes.append(f"busy host: {what} kept, marked: no budget to run it again")
                break
            self.say(
                f"[{len(r.outcomes) + 1}] {stage} {steps} steps: {self.name(s)}: busy host "
                f"({o.busy}): not compared; running it again"
            )
            attempt += 1
        r.outcomes.append(o)
        number = len(r.outcomes)  # the guard's own runs come after it
        if r.default_batch is None and s == self.space.default:
            r.default_batch = o.batch  # the model's default (x replicas), from the record
        why = None if check or stage == "fp32 reference" else guard.check(self, o)
        if why and s not in r.disqualified:
            r.disqualified[s] = why
        self.say(f"[{number}] {stage} {steps} steps: {self.name(s)}: {o.said(why)}")
        return o

    def fits(self, s: space.Setting, steps: int, stage: str = "short") -> bool:
        if not self.result.outcomes:
            return True  # the defaults always run: every figure is relative to them
        limit = self.opts.budget_seconds * (SHORT_SHARE if stage in _SHORT else 1.0)
        return self.result.spent_seconds + self.estimate(s, steps) <= limit

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

    # -- the search ----------------------------------------------------------
    def run(self) -> Result:
        d, steps = self.space.default, self.opts.trial_steps
        first = self.trial(d, steps, stage="defaults")
        if first.status not in ("ok", "oom"):
            raise errors.UsageError(
                f"the plain defaults failed, so nothing can be compared: {first.reason}"
                + (f" [run record: {first.record}]" if first.record else "")
            )
        # The defaults' batch ran out of memory: the batch must move, so it is searched.
        self.batch_apart = first.status == "ok"
        axes = [a for a in self.space.axes if a.name != "batch_size" or not self.batch_apart]
        best = d
        for first_pass in (True, False):
            start = best
            for axis in axes:
                best = self._screen(axis, best, steps, first_pass)
            if best == start:
                break  # a pass that moves nothing: the short round is done
        batch = next((a for a in self.space.axes if a.name == "batch_size"), None)
        if batch and self.batch_apart:
            self._screen(batch, best, steps, True, stage="other batch")
        self._again(steps)
        if not self.leaders(steps, 1):
            self._nothing_ran()
        longer = steps * LONGER
        for s in self.leaders(steps, self.opts.finalists):
            self.trial(s, longer, 0, "longer")
        rounds.run(self, longer, self.leaders(longer, 2), first.status == "ok")
        return self.result

    def _again(self, steps: int) -> None:
        """Runs the short round's busy-host trials once more, fastest first, budget allowing;
        a re-run replaces its busy run (kept in `busy`, never compared)."""
        r = self.result
        busy = [
            o
            for o in r.outcomes
            if o.steps == steps
            and o.busy
            and not o.numerics
            and not o.attempt
            and o.rate
            and o.setting not in r.disqualified  # never compared: no use measuring it again
        ]
        for o in sorted(busy, key=lambda o: o.rate, reverse=True):
            what = f"short {self.name(o.setting)} at {steps} steps (#1)"
            got = self.runner.recorded(o.setting, steps, 0, attempt=1)
            if got is None:
                if not self.fits(o.setting, steps, "again"):
                    r.notes.append(f"busy host: {what} kept, marked: no budget to run it again")
                    continue
                self.say(f"[again] {steps} steps: {self.name(o.setting)} (busy before) ...")
                got = self.runner.run(o.setting, steps, 0, attempt=1)
            r.spent_seconds += got.wall_seconds
            r.outcomes[r.outcomes.index(o)] = got
            r.busy.append(o)
            why = guard.check(self, got)
            if why and o.setting not in r.disqualified:
                r.disqualified[o.setting] = why
            self.say(f"[again] {steps} steps: {self.name(o.setting)}: {got.said(why)}")

    def _screen(self, axis, best: space.Setting, steps: int, first_pass: bool, stage="short"):
        """Tries AXIS's values at BEST; returns the best short trial so far.

        A second pass runs only if the first moved the best: values chosen late
        (steps per loop after XLA, say) can change which earlier value is best,
        and one measurement per value on a busy machine is easily misled."""
        for value in self._values(axis):
            if not first_pass and value in axis.once:
                continue  # no fast path here: one short trial is all it gets
            if stage == "other batch" and value is None:
                continue  # the default batch: measured in the short round
            s = best.with_axis(axis.name, value)
            o = self.trial(s, steps, stage=stage)
            if stage == "other batch" and o is not None and s not in self.result.other_batches:
                self.result.other_batches.append(s)
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
            if self.batch_apart and s.batch_size != self.space.default.batch_size:
                continue  # another batch trains another way: reported apart
            if o.numerics:
                continue
            by.setdefault(s, []).append(o)
        ranked = sorted(by, key=lambda s: outcomes.score(by[s], self.opts.objective), reverse=True)
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
        why = "; ".join(f"{self.name(s)}: {r}" for s, r in self.result.disqualified.items())
        raise errors.UsageError(f"no trial finished with a valid result ({why or 'see logs'})")

    def name(self, s: space.Setting) -> str:
        return s.describe(self.space.default, self.result.default_batch)


def _value(s: space.Setting, axis: str):
    return (s.intra, s.inter) if axis == "threads" else getattr(s, axis)
