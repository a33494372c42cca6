"""Periodic work between loops, as actions with `every_steps` / `every_secs`.

Each action says when it is due and, for eval and checkpoints, which step a
loop must end on.  The controller times every action as a pause, apart
from the loops.  Actions reach the world through small callables (save,
evaluate, write, start/stop a profile), so tests can pass fakes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from tpubench.run.train.controller import LoopState
from tpubench.storage import writers


class Periodic:
    """Due every EVERY_STEPS steps, every EVERY_SECS seconds, and/or at the last step."""

    cuts_loops = False

    def __init__(
        self, every_steps: int | None = None, every_secs: float | None = None, at_end: bool = False
    ):
        self.every_steps = every_steps
        self.every_secs = every_secs
        self.at_end = at_end
        self._last: float | None = None

    def before_loop(self, state: LoopState, num_steps: int) -> None:
        if self._last is None:
            self._last = state.start

    def boundary(self, step: int) -> int | None:
        if self.cuts_loops and self.every_steps:
            return self.every_steps - step % self.every_steps
        return None

    def due(self, state: LoopState) -> bool:
        if self.every_steps and state.step % self.every_steps == 0:
            return True
        if (
            self.every_secs is not None
            and state.now - (self._last or state.start) >= self.every_secs
        ):
            return True
        return self.at_end and state.final

    def __call__(self, state: LoopState) -> None:
        self.run(state)
        self._last = state.now

    def run(self, state: LoopState) -> None:
        raise NotImplementedError


class LoopMetrics(Periodic):
    """After every loop: loss, examples/sec, step time and EXTRAS' scalars to the writers.

    EXTRAS (optional) returns further scalars read at the loop's end (the
    learning rate, host CPU); None values are left out.
    """

    def __init__(
        self,
        writer: writers.MetricWriter,
        global_batch_size: int,
        extras: Callable[[], dict] | None = None,
    ):
        super().__init__(every_steps=1)
        self.writer = writer
        self.global_batch_size = global_batch_size
        self.extras = extras

    def run(self, state: LoopState) -> None:
        loop = state.last_loop
        scalars = {
            writers.LOSS: state.output.mean_loss,
            writers.EXAMPLES_PER_SEC: loop.steps * self.global_batch_size / loop.seconds,
            writers.STEP_TIME: loop.seconds / loop.steps,
        }
        extra = self.extras() if self.extras is not None else {}
        scalars.update({k: v for k, v in extra.items() if v is not None})
        self.writer.write_scalars(state.step, scalars)


class ShowProgress(Periodic):
    """After every loop: the progress line (no rate during warm-up loops).

    Its rate is the mean since warm-up (the table's measure, over the loops so
    far: the table leaves out loops before the steady state too), never one
    loop's, and the line says so.
    """

    def __init__(self, progress):
        super().__init__(every_steps=1)
        self.progress = progress

    def run(self, state: LoopState) -> None:
        after = [lt for lt in state.loops[state.schedule.warmup_loops :] if not lt.profiled]
        seconds = sum(lt.seconds for lt in after)
        rate = sum(lt.examples for lt in after) / seconds if after and seconds > 0 else None
        self.progress.update(state.step, rate, state.output.mean_loss, rate_is="mean since warm-up")


class Evaluate(Periodic):
    """Every EVERY_STEPS steps and at the last: an eval, written as eval/* scalars."""

    cuts_loops = True

    def __init__(self, evaluate: Callable[[], dict], writer, every_steps: int | None):
        super().__init__(every_steps=every_steps, at_end=True)
        self.evaluate = evaluate
        self.writer = writer

    def run(self, state: LoopState) -> None:
        seconds = state.now - state.start
        result = self.evaluate()
        result.update(step=state.step, train_seconds=round(seconds, 3))
        state.evals.append(result)
        state.new_eval = result
        hidden = ("step", "examples", "train_seconds")
        scalars = {writers.EVAL_PREFIX + k: v for k, v in result.items() if k not in hidden}
        self.writer.write_scalars(state.step, scalars)


@dataclasses.dataclass(frozen=True)
class Target:
    """The headline metric, its direction and the value to reach."""

    metric: str
    mode: str  # "max" or "min"
    value: float
    stop: bool = True  # end the run once reached


class TargetReached(Periodic):
    """After each eval: whether the target is reached (step and seconds), and stop if asked."""

    def __init__(self, target: Target, clock: Callable[[], float]):
        super().__init__()
        self.target = target
        self.clock = clock

    def due(self, state: LoopState) -> bool:
        return state.new_eval is not None and state.target is None

    def run(self, state: LoopState) -> None:
        value = state.new_eval.get(self.target.metric)
        if value is None or not _reached(self.target, value):
            return
        state.target = {
            "metric": self.target.metric,
            "mode": self.target.mode,
            "value": value,
            "target": self.target.value,
            "step": state.step,
            "seconds": round(self.clock() - state.start, 3),
        }
        state.stop = self.target.stop


class Checkpoint(Periodic):
    """Every EVERY_STEPS steps (loops end on those steps) and/or at the first loop end
    EVERY_SECS seconds after the last save: SAVE.

    The time-based save (the default, --checkpoint_every) bounds what a kill
    or a preemption loses to about EVERY_SECS plus one loop; any save (by
    steps or by time) starts the clock again.

    The metric WRITER is flushed first, and that flush waited for when it
    runs in the background, so the metrics on disk never lag behind a
    checkpoint: a run killed after the save resumes with every step up to
    it logged once.
    """

    cuts_loops = True

    def __init__(
        self,
        save: Callable[[], object],
        every_steps: int | None,
        writer=None,
        every_secs: float | None = None,
    ):
        super().__init__(every_steps=every_steps, every_secs=every_secs)
        self.save = save
        self.writer = writer

    def run(self, state: LoopState) -> None:
        if self.writer is not None:
            self.writer.flush(wait=True)
        self.save()


class Flush(Periodic):
    """Every EVERY_SECS seconds: flush the metric writers (in the background: ask for a
    flush), then REPORT (optional) the errors the background writes met."""

    def __init__(self, writer, every_secs: float, report: Callable[[], None] | None = None):
        super().__init__(every_secs=every_secs)
        self.writer = writer
        self.report = report

    def run(self, state: LoopState) -> None:
        self.writer.flush()
        if self.report is not None:
            self.report()


class Heartbeat(Periodic):
    """Every EVERY_SECS seconds: BEAT (the run's record and lock say it is alive)."""

    def __init__(self, beat: Callable[[], None], every_secs: float):
        super().__init__(every_secs=every_secs)
        self.beat = beat

    def run(self, state: LoopState) -> None:
        self.beat()


class StopOnSignal(Periodic):
    """After every loop: raise CHECK's error when a signal came or stdout was closed.

    A signal raises at once from its handler, but TensorFlow may swallow or
    rewrite that exception; this makes sure the run stops at the next loop.
    """

    def __init__(self, check: Callable[[], None]):
        super().__init__(every_steps=1)
        self.check = check

    def run(self, state: LoopState) -> None:
        self.check()


def _reached(target: Target, value: float) -> bool:
    return value <= target.value if target.mode == "min" else value >= target.value
