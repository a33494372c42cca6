"""A train run's controller, wired: trainer, evaluator, writers and actions.

`build` turns a Wiring (the Plan, the parts a job built, its calls back)
into a Controller with the actions the flags ask for; `results` turns the
controller's LoopResult into the record's `results` section.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from tpubench.core import timing
from tpubench.core.config import TrainConfig
from tpubench.run import efficiency
from tpubench.run.train import actions
from tpubench.run.train import controller as controller_lib
from tpubench.storage import liveness
from tpubench.storage.run_dir import RunDir

if TYPE_CHECKING:
    from tpubench.run.progress import Progress
    from tpubench.run.runner import Runner
    from tpubench.run.train.planning import Plan
    from tpubench.run.train.profile import Profile
    from tpubench.storage.writers import MetricWriter


@dataclasses.dataclass(frozen=True)
class Wiring:
    """What the controller is built from: the config, the session's plan, the parts a
    job built (runner, writer, progress) and the calls the actions make back into it."""

    cfg: TrainConfig
    plan: Plan
    runner: Runner
    writer: MetricWriter  # a TimedWriter on the chief, a NullWriter elsewhere
    progress: Progress
    is_chief: bool
    tensorboard_dir: str  # where the profiler writes (RunDir.tensorboard)
    check_signals: Callable[[], None]  # raises Interrupted when the run was asked to stop
    save_checkpoint: Callable[[], int]  # a periodic save; an async one stays in flight
    write_errors: Callable[[], None]  # reports background metric-write errors
    heartbeat: Callable[[], None]  # the running record and lock say the run is alive
    loop_scalars: Callable[[], dict]  # learning rate and host CPU at a loop's end


@dataclasses.dataclass(frozen=True)
class Built:
    controller: controller_lib.Controller
    profile: Profile | None  # under --profile_steps, on the chief


def writer(
    run_dir: RunDir,
    is_chief: bool,
    run_id: str | None = None,
    start_step: int = 0,
    background: bool = False,
):
    """metrics.jsonl and TensorBoard events under RUN_DIR on the chief; nothing elsewhere.

    RUN_ID goes on every metrics line.  What an earlier attempt wrote past
    START_STEP (the step this run starts from) is dropped from both: those
    steps are trained again, and the curves must not run back in time.
    BACKGROUND: written on a background thread, otherwise inline; either way
    the writer is a TimedWriter that counts the caller's time.
    """
    import tensorflow as tf

    from tpubench.storage import background_writer, writers

    if not is_chief:
        return writers.NullWriter()
    tf.io.gfile.makedirs(run_dir.path)
    inner = writers.MultiWriter(
        [
            writers.JsonlWriter(run_dir.metrics, run_id, start_step),
            writers.TensorBoardWriter(run_dir.tensorboard, start_step),
        ]
    )
    return background_writer.TimedWriter(inner, background, where=run_dir.path)


def loop_scalars(runner, sampler) -> dict:
    """RUNNER's learning rate and SAMPLER's latest host CPU sample, read at a loop's end."""
    from tpubench.storage import writers

    out = {}
    opt = getattr(runner, "optimizer", None)
    opt = getattr(opt, "inner_optimizer", opt)  # under a loss-scale wrapper
    # No optimizer (or no scalar rate): nothing to plot.
    with contextlib.suppress(AttributeError, TypeError, ValueError):
        out[writers.LEARNING_RATE] = float(opt.learning_rate)
    samples = getattr(sampler, "system", None)
    if samples:
        out[writers.HOST_CPU] = samples[-1]
    return out


def hparams(cfg: TrainConfig, p: Plan, record: dict) -> dict:
    """The run's configuration for TensorBoard's HParams dashboard (scalar values only)."""
    hw = cfg.hardware
    return {
        "model": p.spec.name,
        "tiny": bool(cfg.tiny),
        "dataset": str((record.get("data") or {}).get("name", "?")),
        "global_batch_size": p.batch.global_size,
        "per_replica_batch_size": p.batch.per_replica,
        "precision": cfg.precision,
        "xla": bool(p.xla),
        "data_format": p.data_format,
        "steps_per_loop": int(cfg.steps_per_loop),
        "train_steps": int(p.total_steps),
        "accelerator": p.placement.accelerator,
        "strategy": p.placement.strategy,
        "replicas": int(p.placement.num_replicas),
        "workers": int(p.placement.num_workers),
        "intra_threads": int(hw.num_intra_threads),
        "inter_threads": int(hw.num_inter_threads),
        "machine": ",".join(cfg.cost.machine) or "this host",
    }


def write_mfu(writer, results: dict, mfu: dict, global_batch_size: int, start_step: int) -> None:
    """MFU per loop, once the peak is known (after training): its rate x FLOPs / peak.

    TensorBoard only: metrics.jsonl holds one line per step, written as the
    steps ran, and the record holds the run's MFU.
    """
    from tpubench.storage import writers

    flops, peak = mfu.get("train_flops_per_example"), mfu.get("peak_flops")
    if not flops or not peak or mfu.get("mfu") is None:  # no figure: the record says why
        return
    boards = [
        w for w in getattr(writer, "writers", [writer]) if isinstance(w, writers.TensorBoardWriter)
    ]
    call = getattr(writer, "call", lambda fn, *args: fn(*args))  # in order with the rest
    step = start_step
    for steps, seconds in results.get("loops") or []:
        step += steps
        if seconds > 0:
            value = 100.0 * steps * global_batch_size / seconds * flops / peak
            for board in boards:
                call(board.write_scalars, step, {writers.MFU: value})


def eval_cadence(cfg: TrainConfig, p: Plan) -> int | None:
    """Eval every --eval_every_steps; with a target and no cadence, once per epoch."""
    if cfg.target_accuracy is not None and not cfg.eval_every_steps:
        return max(1, math.ceil(p.epoch_examples / p.batch.global_size))
    return cfg.eval_every_steps


def eval_steps(cfg: TrainConfig, p: Plan) -> int | None:
    """--eval_steps; where every worker must run the same full batches, at most those."""
    from tpubench.run import session

    if p.params["fixed_eval_steps"] and p.manifest is not None:
        batch = p.batch.global_size
        return session.full_eval_batches(p.spec, p.manifest, p.params, batch, cfg.eval_steps)
    return cfg.eval_steps


def build(w: Wiring, start_step: int, clock=time.perf_counter) -> Built:
    """The controller for a train run, its actions in the order they run between loops."""
    from tpubench.run.train import trainers

    cfg, p = w.cfg, w.plan
    parts = trainers.build(w.runner, p.strategy, p.placement, p.manifest)
    batch = p.batch.global_size
    acts: list = [
        actions.StopOnSignal(w.check_signals),
        actions.LoopMetrics(w.writer, batch, w.loop_scalars),
        actions.ShowProgress(w.progress),
    ]
    if parts.evaluate is not None:
        steps = eval_steps(cfg, p)
        acts.append(actions.Evaluate(lambda: parts.evaluate(steps), w.writer, eval_cadence(cfg, p)))
        if cfg.target_accuracy is not None:
            target = actions.Target(
                p.spec.target_metric, p.spec.target_mode, cfg.target_accuracy, cfg.stop_at_target
            )
            acts.append(actions.TargetReached(target, clock))
    acts.append(
        actions.Checkpoint(
            w.save_checkpoint, cfg.checkpoint_every_steps, w.writer, cfg.checkpoint_every_secs
        )
    )
    acts.append(actions.Flush(w.writer, max(cfg.log_every_secs, 1.0), w.write_errors))
    acts.append(actions.Heartbeat(w.heartbeat, liveness.HEARTBEAT_SECS))
    profile = None
    if cfg.profile_steps is not None and w.is_chief:
        from tpubench.run.train import profile as profile_lib

        steps_range = profile_lib.StepRange(*cfg.profile_steps)
        tracer = profile_lib.tensorflow_tracer()
        profile = profile_lib.Profile(steps_range, w.tensorboard_dir, tracer)
        acts.append(profile)
    schedule = controller_lib.Schedule(
        total_steps=p.total_steps,
        examples_per_step=parts.examples_per_step,
        steps_per_loop=cfg.steps_per_loop,
        warmup_loops=cfg.warmup_loops,
        start_step=start_step,
    )
    ctl = controller_lib.Controller(
        trainer=parts.trainer, schedule=schedule, actions=acts, clock=clock
    )
    return Built(ctl, profile)


def run(built: Built, sampler, progress: Progress) -> tuple[controller_lib.LoopResult, dict]:
    """Runs BUILT's loops with SAMPLER sampling the host CPU; (their result, the samples).
    PROGRESS and the profiler are closed once the loops end."""
    sampler.start()
    result = built.controller.run()
    host_cpu = sampler.stop()
    progress.close()
    if built.profile is not None:
        built.profile.close()
    return result, host_cpu


def partial(loops: list, cfg: TrainConfig, replicas: int, final_step: int) -> dict:
    """The record's `results` after an interrupt: the loops that ran, honestly labelled."""
    out = timing.summarize(loops, cfg.warmup_loops, replicas)
    out.update(partial=True, final_step=final_step)
    return out


def results(cfg: TrainConfig, p: Plan, result: controller_lib.LoopResult, host_cpu: dict) -> dict:
    """The record's `results`: throughput from the steady loops, losses, evals, target."""
    loops = result.loops
    out = timing.summarize(loops, cfg.warmup_loops, p.replicas)
    last = result.output
    out.update(
        final_loss=last.last_loss if last else math.nan,
        final_loss_loop_mean=last.mean_loss if last else math.nan,
        steps_run=sum(x.steps for x in loops),
        final_step=result.final_step,
        train_wall_seconds=round(result.wall_seconds, 3),
        pause_seconds=round(result.pause_seconds, 3),
        peak_rss_gib=efficiency.peak_rss_gib(),
        host_cpu=host_cpu,
        loops=[[lt.steps, round(lt.seconds, 6)] for lt in loops],
    )
    if result.evals:
        out["eval"] = result.evals[-1]
        out["eval_history"] = result.evals
    elif p.manifest is None:
        out["eval_note"] = "synthetic data: no accuracy is reported"
    if cfg.target_accuracy is not None:
        out["target"] = result.target or {
            "metric": p.spec.target_metric,
            "mode": p.spec.target_mode,
            "target": cfg.target_accuracy,
            "reached": False,
        }
    return out
