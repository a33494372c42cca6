"""The outer loop's timing rules, in-process, with a fake trainer and a fake clock.

The clock only moves when the fake trainer or a fake action says so, so every
expected figure is computed here from the durations the test chose.
"""

from __future__ import annotations

import math

import pytest

from tpubench.core import errors, timing
from tpubench.run.train import actions, profile
from tpubench.run.train.controller import Controller, LoopOutput, Schedule

BATCH = 32


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


class Trainer:
    """Each loop takes seconds_for(loop index, steps); the loss is loss_for(step after)."""

    def __init__(self, clock, seconds_for, loss_for=lambda step: 1.0 / step):
        self.clock, self.seconds_for, self.loss_for = clock, seconds_for, loss_for
        self.step = 0
        self.calls: list[int] = []

    def train(self, num_steps: int) -> LoopOutput:
        self.clock.advance(self.seconds_for(len(self.calls), num_steps))
        self.calls.append(num_steps)
        self.step += num_steps
        loss = self.loss_for(self.step)
        return LoopOutput(loss, loss)


class Writer:
    def __init__(self, clock=None, flush_seconds=0.0):
        self.rows: list[tuple[int, dict]] = []
        self.flushes = 0
        self.clock, self.flush_seconds = clock, flush_seconds

    def write_scalars(self, step, scalars):
        self.rows.append((step, dict(scalars)))

    def flush(self, wait=False):
        self.flushes += 1
        if self.clock:
            self.clock.advance(self.flush_seconds)


class Progress:
    def __init__(self):
        self.rates: list = []
        self.rate_is: list = []

    def update(self, step, rate, loss, phase="train", rate_is=""):
        self.rates.append(rate)
        self.rate_is.append(rate_is)


def _compile_then(steady: float, first: float = 3.0):
    return lambda i, n: first if i == 0 else steady * n


def test_eval_checkpoint_and_flush_pauses_never_enter_examples_per_sec():
    clock = Clock()
    trainer = Trainer(clock, _compile_then(0.01))
    writer = Writer(clock, flush_seconds=0.5)
    evals, saves = [], []

    def evaluate():
        clock.advance(7.0)
        evals.append(trainer.step)
        return {"accuracy": 0.5}

    def save():
        clock.advance(2.0)
        saves.append(trainer.step)

    acts = [
        actions.LoopMetrics(writer, BATCH),
        actions.Evaluate(evaluate, writer, every_steps=5),
        actions.Checkpoint(save, every_steps=4),
        actions.Flush(writer, every_secs=1.0),
    ]
    schedule = Schedule(total_steps=20, examples_per_step=BATCH, steps_per_loop=3)
    result = Controller(trainer=trainer, schedule=schedule, actions=acts, clock=clock).run()

    # Loops end exactly on eval and checkpoint steps.
    ends = [sum(trainer.calls[: i + 1]) for i in range(len(trainer.calls))]
    assert ends == [3, 4, 5, 8, 10, 12, 15, 16, 19, 20]
    assert evals == [5, 10, 15, 20] and saves == [4, 8, 12, 16, 20]
    assert writer.flushes >= 4  # every pause is > 1 s here, so most loops flush

    summary = timing.summarize(result.loops, 1, 1)
    assert summary["examples_per_sec"] == pytest.approx(BATCH / 0.01)
    assert summary["measured_steps"] == 17
    loop_seconds = 3.0 + 0.01 * 17
    assert result.wall_seconds == pytest.approx(loop_seconds + result.pause_seconds)
    assert result.pause_seconds == pytest.approx(4 * 7.0 + 5 * 2.0 + 0.5 * writer.flushes)
    # The per-loop scalars are the loop's own rate, pauses excluded.
    assert writer.rows[2] == (
        5,
        {
            "train/loss": 0.2,
            "train/examples_per_sec": pytest.approx(3200.0),
            "train/step_time_sec": pytest.approx(0.01),
        },
    )


def test_warmup_loops_are_reported_apart_and_show_no_rate():
    clock = Clock()
    seconds = [3.0, 1.0] + [0.02] * 8
    trainer = Trainer(clock, lambda i, n: seconds[i])
    progress = Progress()
    schedule = Schedule(total_steps=10, examples_per_step=BATCH, warmup_loops=2)
    acts = [actions.ShowProgress(progress)]
    result = Controller(trainer=trainer, schedule=schedule, actions=acts, clock=clock).run()
    summary = timing.summarize(result.loops, 2, 1)
    assert progress.rates[:2] == [None, None]
    assert progress.rates[2:] == [pytest.approx(BATCH / 0.02)] * 8
    assert set(progress.rate_is) == {"mean since warm-up"}  # the line says what its rate is
    assert summary["time_to_first_loop"] == 3.0
    assert summary["warmup_seconds"] == 4.0
    assert summary["examples_per_sec"] == pytest.approx(BATCH / 0.02)
    assert summary["compile_seconds"] == pytest.approx(4.0 - 2 * 0.02)


@pytest.mark.parametrize("stop", [True, False])
def test_time_and_steps_to_target(stop):
    clock = Clock()
    trainer = Trainer(clock, _compile_then(0.1, first=2.0))

    def evaluate():
        clock.advance(5.0)
        return {"accuracy": trainer.step / 20}

    target = actions.Target("accuracy", "max", 0.5, stop=stop)
    acts = [
        actions.Evaluate(evaluate, Writer(), every_steps=2),
        actions.TargetReached(target, clock),
    ]
    schedule = Schedule(total_steps=20, examples_per_step=BATCH, steps_per_loop=4)
    result = Controller(trainer=trainer, schedule=schedule, actions=acts, clock=clock).run()
    # Reached at the eval of step 10: 10 steps (first loop 2 s, 8 steps at 0.1 s)
    # and the 5 evals of steps 2..10 (5 s each).
    assert result.target == {
        "metric": "accuracy",
        "mode": "max",
        "value": 0.5,
        "target": 0.5,
        "step": 10,
        "seconds": pytest.approx(2.0 + 0.8 + 5 * 5.0),
    }
    assert result.final_step == (10 if stop else 20)
    assert [e["step"] for e in result.evals][-1] == (10 if stop else 20)


def test_a_min_target_is_reached_going_down():
    clock = Clock()
    trainer = Trainer(clock, lambda i, n: 1.0)
    acts = [
        actions.Evaluate(lambda: {"loss": 10.0 / trainer.step}, Writer(), every_steps=1),
        actions.TargetReached(actions.Target("loss", "min", 2.5), clock),
    ]
    schedule = Schedule(total_steps=10, examples_per_step=BATCH)
    result = Controller(trainer=trainer, schedule=schedule, actions=acts, clock=clock).run()
    assert result.target["step"] == 4 and result.final_step == 4


def test_steady_state_starts_after_the_slow_loops():
    clock = Clock()
    seconds = [4.0] + [0.05] * 6 + [0.01] * 30
    trainer = Trainer(clock, lambda i, n: seconds[i])
    schedule = Schedule(total_steps=len(seconds), examples_per_step=BATCH)
    result = Controller(trainer=trainer, schedule=schedule, clock=clock).run()
    summary = timing.summarize(result.loops, 1, 1)
    # 36 measured loops in chunks of 3: the third chunk is the first at the steady rate.
    assert summary["steady_state_after_loops"] == 1 + 6
    assert summary["examples_per_sec"] == pytest.approx(BATCH / 0.01)
    assert summary["measured_steps"] == 30


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_a_non_finite_loss_makes_the_run_invalid(bad):
    clock = Clock()
    trainer = Trainer(clock, lambda i, n: 0.1, loss_for=lambda step: bad if step >= 6 else 1.0)
    schedule = Schedule(total_steps=20, examples_per_step=BATCH, steps_per_loop=2)
    controller = Controller(trainer=trainer, schedule=schedule, clock=clock)
    with pytest.raises(errors.RunInvalidError, match=f"loss became {bad} at step 6"):
        controller.run()
    assert [lt.steps for lt in controller.state.loops] == [2, 2, 2]


def test_a_resumed_run_counts_from_its_checkpoint():
    clock = Clock()
    trainer = Trainer(clock, lambda i, n: 0.1 * n)
    saves = []
    acts = [actions.Checkpoint(lambda: saves.append(clock()), every_steps=5)]
    schedule = Schedule(total_steps=20, examples_per_step=BATCH, steps_per_loop=4, start_step=12)
    result = Controller(trainer=trainer, schedule=schedule, actions=acts, clock=clock).run()
    assert trainer.calls == [3, 4, 1] and len(saves) == 2 and result.final_step == 20


class Tracer:
    def __init__(self, clock):
        self.clock, self.events = clock, []

    def tracer(self):
        return profile.Tracer(
            lambda logdir: self.events.append(("start", logdir)),
            lambda: self.events.append(("stop",)),
        )


def test_profiled_loops_are_left_out_of_examples_per_sec():
    clock = Clock()
    tracer = Tracer(clock)
    prof = profile.Profile(profile.StepRange(3, 5), "md/tensorboard", tracer.tracer())
    # Loops under the profiler are 50x slower.
    trainer = Trainer(clock, lambda i, n: 0.5 * n if prof.active else 0.01 * n)
    schedule = Schedule(total_steps=12, examples_per_step=BATCH, steps_per_loop=2)
    result = Controller(trainer=trainer, schedule=schedule, actions=[prof], clock=clock).run()
    assert tracer.events == [("start", "md/tensorboard"), ("stop",)]
    assert [lt.profiled for lt in result.loops] == [False, True, True, False, False, False]
    summary = timing.summarize(result.loops, 1, 1)
    assert summary["examples_per_sec"] == pytest.approx(BATCH / 0.01)
    assert summary["measured_steps"] == 6
    section = prof.section()
    assert section["profiled_steps"] == [3, 6] and section["loops"] == 2
    assert "whole loops" in section["note"] and "3-6" in section["note"]


def test_a_profile_still_running_at_the_end_is_stopped():
    clock = Clock()
    tracer = Tracer(clock)
    prof = profile.Profile(profile.StepRange(4, 100), "tb", tracer.tracer())
    trainer = Trainer(clock, lambda i, n: 0.01)
    schedule = Schedule(total_steps=6, examples_per_step=BATCH)
    Controller(trainer=trainer, schedule=schedule, actions=[prof], clock=clock).run()
    assert tracer.events == [("start", "tb"), ("stop",)]
    assert prof.section()["profiled_steps"] == [4, 6]


def test_a_range_the_run_never_reaches_profiles_nothing():
    clock = Clock()
    tracer = Tracer(clock)
    prof = profile.Profile(profile.StepRange(50, 60), "tb", tracer.tracer())
    schedule = Schedule(total_steps=6, examples_per_step=BATCH)
    Controller(
        trainer=Trainer(clock, lambda i, n: 0.01), schedule=schedule, actions=[prof], clock=clock
    ).run()
    assert tracer.events == []
    assert "never reached" in prof.section()["note"]


@pytest.mark.parametrize(
    "text, expected",
    [("3,5", (3, 5)), (" 1 , 1 ", (1, 1)), ("", None), (None, None)],
)
def test_profile_steps_parse(text, expected):
    steps = profile.parse(text)
    assert (None if steps is None else (steps.start, steps.end)) == expected


@pytest.mark.parametrize("text", ["5,3", "0,2", "-1,4", "a,b", "2.5,3", "4", "1,2,3"])
def test_bad_profile_steps_name_the_value(text):
    with pytest.raises(errors.UsageError, match=f"--profile_steps={text}:.*START,END"):
        profile.parse(text)


# Moved here from tests/run/test_train_e2e.py, where each ran a real training subprocess.
def test_loops_split_at_steps_per_loop_and_each_writes_a_row():
    clock = Clock()
    trainer = Trainer(clock, lambda i, n: 0.01 * n)
    writer = Writer()
    schedule = Schedule(total_steps=95, examples_per_step=BATCH, steps_per_loop=10)
    acts = [actions.LoopMetrics(writer, BATCH)]
    result = Controller(trainer=trainer, schedule=schedule, actions=acts, clock=clock).run()
    assert [lt.steps for lt in result.loops] == [10] * 9 + [5]
    assert result.final_step == 95
    assert [step for step, _ in writer.rows] == [10, 20, 30, 40, 50, 60, 70, 80, 90, 95]
    assert writer.rows[-1][1]["train/loss"] == pytest.approx(1 / 95)


def test_a_reached_target_is_priced_and_shown():
    from tpubench.cli import report_text
    from tpubench.cost import pricing, runs

    clock = Clock()
    trainer = Trainer(clock, lambda i, n: 0.5 * n)

    def evaluate():
        clock.advance(1.0)
        return {"accuracy": min(1.0, trainer.step / 50)}

    target = actions.Target("accuracy", "max", 0.8, stop=True)
    acts = [
        actions.Evaluate(evaluate, Writer(), every_steps=20),
        actions.TargetReached(target, clock),
    ]
    schedule = Schedule(total_steps=100, examples_per_step=BATCH, steps_per_loop=20)
    result = Controller(trainer=trainer, schedule=schedule, actions=acts, clock=clock).run()
    # Evals at 20 (0.4) and 40 (0.8): stops at step 40 after 40 steps of 0.5 s and 2 evals.
    assert [e["step"] for e in result.evals] == [20, 40] and result.final_step == 40
    assert result.target["step"] == 40 and result.target["seconds"] == pytest.approx(22.0)

    usage = runs.Usage(BATCH / 0.5, result.wall_seconds, 1, 1437, result.target["seconds"])
    (row,) = runs.train_costs(runs.Prices((pricing.override(3.5),)), usage)["machines"]
    assert row["usd_to_target"] == pytest.approx(22.0 / 3600 * 3.5)
    assert row["usd_per_epoch"] == pytest.approx(1437 / (BATCH / 0.5) / 3600 * 3.5)
    record = {"model": {"name": "m"}, "results": {"target": result.target}, "cost": {}}
    assert "accuracy >= 0.8: reached at step 40 after 22.00 s" in report_text.train_summary(record)
