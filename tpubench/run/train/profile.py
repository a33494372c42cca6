"""`--profile_steps=START,END`: a TensorBoard profile of those steps.

The profile (host and device traces) goes under `<model_dir>/tensorboard`,
where TensorBoard's profile plugin finds it
(`plugins/profile/<run>/<host>.xplane.pb`).  Steps count from 1.  With
`--steps_per_loop` > 1 whole loops are profiled: the loops that cover the
range, and the record says which steps they were.  Profiled loops are slow
and never enter examples/sec.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from tpubench.core import errors
from tpubench.run.train.actions import Periodic
from tpubench.run.train.controller import LoopState


@dataclasses.dataclass(frozen=True)
class StepRange:
    """Steps START..END (inclusive, counted from 1)."""

    start: int
    end: int


def parse(text: str | None, flag: str = "--profile_steps") -> StepRange | None:
    """StepRange of 'START,END' (None for an empty value); bad values are a UsageError."""
    if text is None or not str(text).strip():
        return None
    parts = [p.strip() for p in str(text).split(",")]
    accepted = "accepted: START,END with whole numbers 1 <= START <= END, e.g. 10,20"
    try:
        start, end = (int(p) for p in parts) if len(parts) == 2 else (None, None)
    except ValueError:
        start = end = None
    if start is None:
        raise errors.UsageError(f"{flag}={text}: not two whole numbers; {accepted}")
    if start < 1 or end < start:
        raise errors.UsageError(f"{flag}={text}: {start},{end} is not a range of steps; {accepted}")
    return StepRange(start, end)


@dataclasses.dataclass(frozen=True)
class Tracer:
    """Starts and stops a trace written under a log directory."""

    start: Callable[[str], None]
    stop: Callable[[], None]


def tensorflow_tracer() -> Tracer:
    """tf.profiler with host (level 2) and device traces, no Python tracer."""
    import tensorflow as tf

    def start(logdir: str) -> None:
        options = tf.profiler.experimental.ProfilerOptions(
            host_tracer_level=2, python_tracer_level=0, device_tracer_level=1
        )
        tf.profiler.experimental.start(logdir, options=options)

    return Tracer(start, tf.profiler.experimental.stop)


class Profile(Periodic):
    """Traces the loops that cover STEPS into LOGDIR."""

    def __init__(self, steps: StepRange, logdir: str, tracer: Tracer):
        super().__init__()
        self.steps = steps
        self.logdir = logdir
        self.tracer = tracer
        self.active = False
        self.covered: list[int] | None = None  # [first step, last step] traced
        self.loops = 0

    def before_loop(self, state: LoopState, num_steps: int) -> None:
        first, last = state.step + 1, state.step + num_steps
        if self.active:
            self.loops += 1
        elif self.covered is None and last >= self.steps.start and first <= self.steps.end:
            self.tracer.start(self.logdir)
            self.active = True
            self.covered = [first, first]
            self.loops = 1
        state.profiling = self.active

    def due(self, state: LoopState) -> bool:
        if self.active:
            self.covered[1] = state.step
        return self.active and (state.step >= self.steps.end or state.final or state.stop)

    def run(self, state: LoopState) -> None:
        self.close()
        state.profiling = False

    def close(self) -> None:
        """Stops a trace still running (the run ended or failed inside the range)."""
        if self.active:
            self.active = False
            self.tracer.stop()

    def section(self) -> dict:
        """The record's `results.profile`."""
        out = {"requested_steps": [self.steps.start, self.steps.end]}
        if self.covered is None:
            out["note"] = "the run never reached these steps: nothing was profiled"
            return out
        out.update(
            profiled_steps=list(self.covered),
            loops=self.loops,
            logdir=self.logdir,
            note="profiled loops are left out of examples/sec",
        )
        if self.covered != out["requested_steps"]:
            out["note"] += "; whole loops were profiled, covering steps " + (
                f"{self.covered[0]}-{self.covered[1]}"
            )
        return out
