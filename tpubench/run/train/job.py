"""One train run's moving parts: runner, checkpoints, writers, the controller.

`Job.run` takes the session's Plan (tpubench/run/train/command.py), builds the
Runner, restores a checkpoint, wires the actions into the controller and
fills the record's results.  `save_checkpoint`, `partial_results` and
`finish` are what an interrupt or a failure still needs.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

from tpubench.core.config import TrainConfig
from tpubench.cost import runs as cost_runs
from tpubench.model import remembered
from tpubench.run import interrupts, restoring, session
from tpubench.run.train import assemble, describe, io_time, lock, planning, saver
from tpubench.storage import inflight, records
from tpubench.storage.run_dir import RunDir


class Job:
    def __init__(self, cfg: TrainConfig, record: dict, run_dir: RunDir, write_records=True):
        self.cfg = cfg
        self.record = record
        self.run_dir = RunDir.of(run_dir)  # the model_dir: checkpoints, metrics, TensorBoard
        self.write_records = write_records
        self.plan: planning.Plan | None = None  # once the session has resolved the run
        self.is_chief = True
        self.runner = self.manager = self.writer = None
        self.progress = self.profile = self.controller = None
        self.step = 0
        self.lock = None  # the model_dir's lock, held by the chief
        self.signals: list = []  # names of the signals received (interrupts.Signals)
        self.agree = None  # all-reduces a stop flag in a multi-worker cluster (stopping.py)
        self.saver = None  # saver.Saver: sync, or async on gs://
        self.heartbeat_seconds = 0.0  # the Heartbeat action's record and lock writes
        self.path_start: float | None = None  # when the loops began (the I/O shares' span)
        self.final_io_seconds = 0.0  # the end's wait for the last checkpoint and metrics
        self.stop_step: int | None = None  # the step of the last save asked for

    @property
    def manifest(self):
        """The data manifest of the plan (None on synthetic data, or before the plan)."""
        return self.plan.manifest if self.plan is not None else None

    @property
    def params(self) -> dict:
        """The plan's params, fitted to the data ({} before the plan)."""
        return self.plan.params if self.plan is not None else {}

    @property
    def replicas(self) -> int:
        """Replicas the batch is split over (1 before the plan)."""
        return self.plan.replicas if self.plan is not None else 1

    # ------------------------------------------------------------ set-up
    def run(self) -> None:
        from tpubench.hardware import clusters

        p = planning.plan(self.cfg, self.run_dir.path, time.perf_counter())
        if not isinstance(p, planning.Plan):  # a worker or ps task: serve until stopped
            self.is_chief = False
            self.record["role"] = f"{p[0]}:{p[1]}"
            clusters.serve(p)
            return
        self.is_chief = p.placement.is_chief
        self.plan = p
        prices = describe.planned(self.record, self.cfg, p)
        if self.is_chief and self.write_records:
            self.lock = lock.for_run(
                self.run_dir.path,
                self.record,
                self.cfg.results_dir,
                self.cfg.wait_for_lock,
                session.say,
            )
            remembered.write(self.run_dir.path, self.cfg)  # infer, tune, rerun need no model flags
            records.write(self.record, self.cfg.results_dir)  # "running", replaced at the end
        self._train(p, prices)

    def check_signals(self) -> None:
        """The StopOnSignal action: a signal TensorFlow swallowed, or stdout closed, stops here.

        In a multi-worker cluster every worker stops here when any one was
        asked to, after the same loop (stopping.py).
        """
        if self.agree is not None:
            closed = self.is_chief and interrupts.stdout_closed()
            if not self.agree(bool(self.signals) or closed):
                return
            if closed and not self.signals:
                self.signals.append("stdout closed")
            raise interrupts.Interrupted(
                self.signals[-1] if self.signals else "another worker was stopped"
            )
        if self.signals:
            raise interrupts.Interrupted(self.signals[-1])
        if self.is_chief and interrupts.stdout_closed():
            self.signals.append("stdout closed")
            raise interrupts.Interrupted("stdout closed")

    def heartbeat(self) -> None:
        """The Heartbeat action: the `running` record and the lock say this run is alive."""
        from tpubench.storage import liveness

        if self.lock is None:
            return
        self.record["heartbeat"] = liveness.now_iso()
        t0 = time.perf_counter()
        try:
            with inflight.op("heartbeat record write", self.cfg.results_dir):
                records.write(self.record, self.cfg.results_dir)
            with inflight.op("model_dir lock refresh", self.run_dir.path):
                self.lock.refresh()
        except Exception:  # noqa: BLE001 - a missed heartbeat must not stop training
            pass
        self.heartbeat_seconds += time.perf_counter() - t0

    # ------------------------------------------------------------ training
    def _train(self, p: planning.Plan, prices: cost_runs.Prices) -> None:
        from tpubench.hardware import hostcpu
        from tpubench.run import progress as progress_lib
        from tpubench.run import stopping
        from tpubench.run.train import loop

        cfg = self.cfg
        self.runner = assemble.runner(cfg, p)
        describe.built(self.record, cfg, p, self.runner, self.warn)
        if stopping.needed(p.placement):
            self.agree = stopping.agreement(p.strategy)
        self._restore(p.total_steps)
        background = assemble.background_writes(cfg, p, self.run_dir)
        self.saver = saver.Saver(
            self.manager, background, last_whole=self.record.get("resumed_from_step")
        )
        self.writer = assemble.writer(p, self.run_dir, self.record, self.step, background)
        self.writer.write_hparams(loop.hparams(cfg, p, self.record), self.record.get("run_id", ""))
        sampler = hostcpu.Sampler()
        start_step = self.step
        self.progress = progress_lib.Progress(p.total_steps, cfg.log_every_secs, self.is_chief)
        self.progress.set_batch(p.batch.global_size)
        built = loop.build(self._wiring(p, sampler), self.step)
        self.controller, self.profile = built.controller, built.profile
        self.record["startup_seconds"] = round(time.perf_counter() - p.started, 3)
        self.path_start = time.perf_counter()
        result, host_cpu = loop.run(built, sampler, self.progress)
        self.step = result.final_step
        t0 = time.perf_counter()
        # Metrics on storage before the checkpoint that ends them; a failure here is
        # tried again, and reported, when the writer closes.
        with contextlib.suppress(Exception):
            self.writer.flush(wait=True)
        self.save_checkpoint()
        self.final_io_seconds += time.perf_counter() - t0
        ended = describe.Ended(result, host_cpu, self.profile, self.runner)
        results = describe.measured(self.record, cfg, p, ended, prices)
        batch = p.batch.global_size
        loop.write_mfu(self.writer, results, self.record["mfu"], batch, start_step)

    def _wiring(self, p: planning.Plan, sampler):
        """What the loop is built from: parts of this job, and the calls back into it;
        SAMPLER: the host CPU sampler whose latest sample each loop's scalars carry."""
        from tpubench.run.train import loop

        return loop.Wiring(
            cfg=self.cfg,
            plan=p,
            runner=self.runner,
            writer=self.writer,
            progress=self.progress,
            is_chief=self.is_chief,
            tensorboard_dir=self.run_dir.tensorboard,
            check_signals=self.check_signals,
            save_checkpoint=lambda: self.save_checkpoint(final=False),  # async stays in flight
            write_errors=self.metric_write_errors,
            heartbeat=self.heartbeat,
            loop_scalars=lambda: loop.loop_scalars(self.runner, sampler),
        )

    def _ckpt_dir(self) -> str:
        if self.is_chief:
            return self.run_dir.checkpoints
        return self.run_dir.worker_scratch(os.getpid())

    def _restore(self, total_steps: int) -> None:
        self.manager, restored = restoring.restore(
            self.runner, self.run_dir.path, self._ckpt_dir(), self.is_chief, self.warn
        )
        self.record.update(restored)
        self.step = int(self.runner.global_step.numpy())
        restoring.check_steps_left(self.step, total_steps, str(self.run_dir))

    # ------------------------------------------------------------ interrupts and the end
    def save_checkpoint(self, final: bool = True) -> int:
        """Saves at the current global step (the truth, even mid-interrupt); returns it.

        Not FINAL (the periodic Checkpoint action): an async save is left in flight."""
        return self.save_checkpoint_reporting(final)[0]

    def save_checkpoint_reporting(self, final: bool = True) -> tuple[int, str | None]:
        """(step, None) once saved; (step, why) when the save failed (warned, recorded)."""
        if self.manager is None or self.runner is None:
            return self.step, "no checkpoint was set up yet"
        step = int(self.runner.global_step.numpy())
        self.stop_step = step  # what an abandoned save (run/train/deadlines.py) reports
        if self.saver is None:
            self.saver = saver.Saver(self.manager, False)
        failures = saver.Failures(self.record, self._ckpt_dir(), self.warn)
        why = None
        for failure in self.saver.save(step, final):  # an earlier async save's failure too
            reason = failures.note(failure)
            why = reason if failure.step == step else why
        return step, why

    def warn(self, message: str, console: bool = True) -> None:
        """A warning in the record's `warnings` and, from the chief, on the console."""
        self.record.setdefault("warnings", []).append(message)
        if self.is_chief and console:
            print(f"tpubench train: warning: {message}", file=sys.stderr, flush=True)

    def partial_results(self) -> None:
        """Throughput of the loops that ran before an interrupt (honestly labelled)."""
        from tpubench.run.train import loop

        state = self.controller.state if self.controller is not None else None
        if state is None or not state.loops or "results" in self.record:
            return
        step = int(self.runner.global_step.numpy()) if self.runner is not None else state.step
        self.record["results"] = loop.partial(state.loops, self.cfg, self.replicas, step)

    def finish(self) -> None:
        if not self.is_chief and self.manager is not None:
            # A worker's checkpoint copy exists only because collectives need it.
            import tensorflow as tf

            with contextlib.suppress(Exception):  # a leftover copy must not fail the run
                tf.io.gfile.rmtree(self._ckpt_dir())
        if self.lock is not None:
            try:
                with inflight.op("model_dir lock release", self.run_dir.path):
                    self.lock.release()
            except Exception:  # noqa: BLE001 - a stale lock is taken over by the next run
                self.record.setdefault("warnings", []).append("model_dir lock not released")
            self.lock = None
        if self.profile is not None:
            self.profile.close()
        if self.progress is not None:
            self.progress.close()
        if self.saver is not None:  # an async save still in flight (a failure on the way out)
            failures = saver.Failures(self.record, self._ckpt_dir(), self.warn)
            for failure in self.saver.sync():
                failures.note(failure)
        if self.writer is not None:
            self._close_writer()

    def _close_writer(self) -> None:
        """The last metrics, waited for; the writes' errors and the I/O time in the record."""
        waited, late = io_time.close_writer(self.writer)
        self.final_io_seconds += waited
        self.metric_write_errors()
        if late:
            self.warn(f"{late} (under {self.run_dir})")
        results = self.record.get("results")
        if isinstance(results, dict) and self.path_start is not None:
            span = time.perf_counter() - self.path_start
            spent = io_time.Spent(self.heartbeat_seconds, self.final_io_seconds, span)
            results.update(io_time.results_fields(self.writer, self.saver, spent))

    def metric_write_errors(self) -> None:
        """The Flush action's report: background write errors, warned (the first) and
        recorded (each)."""
        for error in io_time.take_errors(self.writer):
            first = not self.record.get("metric_write_errors")
            self.record.setdefault("metric_write_errors", []).append(error)
            if first:
                self.warn(io_time.write_error_warning(self.run_dir, error))
