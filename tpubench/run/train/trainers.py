"""The trainer and evaluator the controller drives, built from a Runner.

`Runner` (run/runner.py) owns the tf.functions; these adapters give
the controller its seam: `train(n)` returns host floats (so a loop's time
includes its completion) and `evaluate(steps)` a dict of metrics.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from tpubench.run.train.controller import LoopOutput


@dataclasses.dataclass(frozen=True)
class Parts:
    """A trainer, an evaluator (None on synthetic data), and the examples one step is worth."""

    trainer: object
    evaluate: Callable[[int | None], dict] | None
    examples_per_step: int


class _SyncTrainer:
    def __init__(self, loop):
        self.loop = loop

    def train(self, num_steps: int) -> LoopOutput:
        import tensorflow as tf

        last, mean = self.loop(tf.constant(num_steps, tf.int32))
        return LoopOutput(float(last), float(mean))


class _PsTrainer:
    """One wave: every worker runs n steps; the wave's wall time is what n steps cost."""

    def __init__(self, runner, coordinator, iterator, workers: int):
        self.runner = runner
        self.coordinator = coordinator
        self.iterator = iterator
        self.workers = workers
        self.loop = runner.make_ps_loop()

    def train(self, num_steps: int) -> LoopOutput:
        import tensorflow as tf

        values = [
            self.coordinator.schedule(self.loop, args=(self.iterator, tf.constant(num_steps)))
            for _ in range(self.workers)
        ]
        self.coordinator.join()
        self.runner.global_step.assign_add(num_steps)  # cluster steps, as in the sync strategies
        outs = [v.fetch() for v in values]
        return LoopOutput(float(outs[-1][0]), sum(float(o[1]) for o in outs) / len(outs))


def build(runner, strategy, placement, manifest) -> Parts:
    """The trainer and evaluator for RUNNER under PLACEMENT, on MANIFEST's data or synthetic."""
    from tpubench.model.model_api import Mode

    seed = runner.params["seed"]
    if placement.strategy == "parameter_server":
        import tensorflow as tf

        from tpubench.run import ps_data

        coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
        synthetic_seed = seed if manifest is None else None
        make_dataset = ps_data.datasets(runner.spec, runner.params, Mode.TRAIN, synthetic_seed)
        iterator = ps_data.per_worker_iterator(coordinator, make_dataset)
        workers = placement.num_workers
        trainer = _PsTrainer(runner, coordinator, iterator, workers)
        evaluate = runner.evaluate_inline if manifest is not None else None
        return Parts(trainer, evaluate, runner.params["per_replica_batch_size"] * workers)
    if manifest is None:
        fixed = runner.synthetic_inputs(seed)
        return Parts(
            _SyncTrainer(runner.make_train_loop(lambda: fixed)),
            None,
            runner.params["global_batch_size"],
        )
    iterator = iter(runner.distribute(Mode.TRAIN))
    eval_data = runner.distribute(Mode.EVAL)

    def evaluate(steps):
        return runner.evaluate(eval_data, steps)

    loop = runner.make_train_loop(lambda: next(iterator))
    return Parts(_SyncTrainer(loop), evaluate, runner.params["global_batch_size"])
