"""The outer loop, in Orbit's shape: a trainer, a clock, and actions.

The controller owns cadence and timing, nothing else.  It asks the trainer
for loops of `steps_per_loop` steps, times each loop with the clock (the
trainer returns host floats, so a loop's time includes its completion),
and between loops runs the actions that are due (eval, target check,
checkpoint, flush, progress, profiler).  Time spent in actions is a pause:
it never enters a loop's time, so it never enters examples/sec.  Loops
that ran under the profiler are marked and left out of throughput.

Nothing here imports TensorFlow: tests drive it with a fake trainer and a
fake clock.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from tpubench.core import errors, timing


@dataclasses.dataclass(frozen=True)
class LoopOutput:
    """What one loop of the trainer returns (host floats)."""

    last_loss: float
    mean_loss: float


class Trainer(Protocol):
    def train(self, num_steps: int) -> LoopOutput:
        """Runs NUM_STEPS steps and returns once they are complete."""


class Evaluator(Protocol):
    def evaluate(self, num_steps: int | None) -> dict:
        """Metrics over NUM_STEPS eval batches (None: the whole split)."""


@dataclasses.dataclass(frozen=True)
class Schedule:
    """How many steps, in loops of how many, and what a step is worth."""

    total_steps: int
    examples_per_step: int
    steps_per_loop: int = 1
    warmup_loops: int = 1
    start_step: int = 0  # a resumed run starts at its checkpoint's step


@dataclasses.dataclass
class LoopState:
    """What actions see and change between loops."""

    schedule: Schedule
    step: int
    start: float  # clock time when the first loop started
    now: float = 0.0
    loops: list = dataclasses.field(default_factory=list)  # [timing.LoopTime]
    output: LoopOutput | None = None
    evals: list = dataclasses.field(default_factory=list)
    new_eval: dict | None = None  # the eval result of this pause, if one ran
    target: dict | None = None
    profiling: bool = False  # the next loop runs under the profiler
    stop: bool = False

    @property
    def final(self) -> bool:
        return self.step >= self.schedule.total_steps

    @property
    def last_loop(self) -> timing.LoopTime:
        return self.loops[-1]


class Action(Protocol):
    """Periodic work between loops (see tpubench/run/train/actions.py)."""

    def before_loop(self, state: LoopState, num_steps: int) -> None: ...

    def boundary(self, step: int) -> int | None:
        """Steps until this action wants a loop to end (None: it does not cut loops)."""

    def due(self, state: LoopState) -> bool: ...

    def __call__(self, state: LoopState) -> None: ...


@dataclasses.dataclass(frozen=True)
class LoopResult:
    """The loops that ran, the pauses between them, and the eval/target outcome."""

    loops: list
    pause_seconds: float
    wall_seconds: float
    final_step: int
    output: LoopOutput | None
    evals: list
    target: dict | None


class Controller:
    """Runs a trainer for a schedule, with actions between loops."""

    def __init__(
        self,
        *,
        trainer: Trainer,
        schedule: Schedule,
        actions: Sequence[Action] = (),
        clock: Callable[[], float] = time.perf_counter,
    ):
        self.trainer = trainer
        self.schedule = schedule
        self.actions = list(actions)
        self.clock = clock
        self.state: LoopState | None = None
        self.pauses = 0.0

    def run(self) -> LoopResult:
        """Trains until the schedule's last step or an action stops the loop.

        Raises:
          RunInvalidError: a loop's loss was NaN or infinite.
        """
        start = self.clock()
        self.state = state = LoopState(self.schedule, self.schedule.start_step, start)
        while not state.final and not state.stop:
            self._one_loop(state)
        return LoopResult(
            loops=state.loops,
            pause_seconds=self.pauses,
            wall_seconds=self.clock() - start,
            final_step=state.step,
            output=state.output,
            evals=state.evals,
            target=state.target,
        )

    def _one_loop(self, state: LoopState) -> None:
        n = self._loop_steps(state.step)
        self._pause(lambda: [a.before_loop(state, n) for a in self.actions])
        profiled = state.profiling
        t0 = self.clock()
        out = self.trainer.train(n)
        seconds = self.clock() - t0
        state.step += n
        state.output = out
        state.loops.append(
            timing.LoopTime(n, seconds, n * self.schedule.examples_per_step, profiled)
        )
        if not (math.isfinite(out.last_loss) and math.isfinite(out.mean_loss)):
            raise errors.RunInvalidError(
                f"loss became {out.last_loss} at step {state.step}: the run is invalid and "
                "reports no throughput (lower the learning rate via --params, or use "
                "--precision=fp32)"
            )
        self._pause(lambda: self._after_loop(state))

    def _after_loop(self, state: LoopState) -> None:
        state.new_eval = None
        for action in self.actions:
            state.now = self.clock()
            if action.due(state):
                action(state)

    def _pause(self, work: Callable[[], object]) -> None:
        p0 = self.clock()
        work()
        self.pauses += self.clock() - p0

    def _loop_steps(self, step: int) -> int:
        """Steps of the next loop: steps_per_loop, cut to end on eval and checkpoint steps."""
        n = min(self.schedule.steps_per_loop, self.schedule.total_steps - step)
        for action in self.actions:
            until = action.boundary(step)
            if until:
                n = min(n, until)
        return n
