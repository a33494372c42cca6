"""`tpubench train`: one training benchmark, from config to run record.

`train(cfg, argv, flag_values)` is the whole job, testable without the CLI.
Every invocation that reaches it leaves a run record, also when it fails,
produces a NaN, or is interrupted (then the checkpoint under model_dir lets
the same command resume).  The session (tpubench/run/session.py) resolves
model, data, strategy and prices; the controller (tpubench/run/controller.py)
runs the loops and its actions; this module wires them and fills the record.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

from tpubench import errors, records
from tpubench.config import TrainConfig
from tpubench.cost import runs as cost_runs
from tpubench.run import efficiency, session

DEFAULT_TRAIN_STEPS = 300
Interrupted = session.Interrupted


def _base_record(cfg: TrainConfig, argv: list[str], flag_values: dict) -> tuple[dict, str]:
    run_id = records.new_run_id(cfg.model)
    model_dir = cfg.model_dir or records.path_for(cfg.results_dir, run_id)[: -len(".json")]
    config = cfg.to_dict() | {"model_dir": model_dir}
    record = session.base_record("train", run_id, config, session.Invocation(argv, flag_values))
    if cfg.run_label is not None:
        record["run_label"] = cfg.run_label
    return record, model_dir


def record_early_failure(
    cfg: TrainConfig, argv: list[str], flag_values: dict, error: errors.TpubenchError
) -> None:
    """A run that failed before TensorFlow loaded still leaves a record."""
    record, _ = _base_record(cfg, argv, flag_values)
    session.write_early_failure(record, error, cfg.results_dir)


def check_prices(cfg: TrainConfig) -> None:
    """Prices the run's machines up front (pure Python): a bad --machine fails in
    milliseconds, before TensorFlow is imported."""
    cost_runs.prices(cfg.cost)


def train(cfg: TrainConfig, argv: list[str], flag_values: dict) -> dict:
    """Runs one training benchmark and returns its (written) record."""
    from tpubench.run import job as job_lib

    record, model_dir = _base_record(cfg, argv, flag_values)
    job = job_lib.Job(cfg, record, model_dir)
    try:
        with session.interruptible():
            try:
                job.run()
                if cfg.data.compare_synthetic and job.is_chief:
                    _compare_synthetic(job)
                record["status"] = "ok"
            except BaseException as e:
                replacement = _settle(job, e)
                if replacement is None:
                    raise
                raise replacement from None
    finally:
        record["finished"] = records.now_iso()
        job.finish()
        if job.is_chief:
            record["record_path"] = records.write(record, cfg.results_dir)
            import sys

            in_flight = sys.exc_info()[1]
            if isinstance(in_flight, errors.TpubenchError):
                in_flight.record_path = record["record_path"]
    return record


def _settle(job, e: BaseException) -> BaseException | None:
    """Sets the record's status for E; returns the error to raise instead, or None."""
    record = job.record
    if session.is_interrupt(e):
        record["status"] = "interrupted"
        step = job.save_checkpoint()
        record["error"] = (
            f"interrupted ({e or type(e).__name__}) at step {step}; rerun the same command "
            "(same --model_dir) to resume"
        )
        job.partial_results()
        return errors.InterruptedRun(record["error"])
    if not isinstance(e, Exception):
        return None
    from tpubench.data import resolve

    damaged = (
        None if isinstance(e, errors.TpubenchError) else resolve.damaged_shards(job.manifest, e)
    )
    if damaged is not None:  # name the file and offset TensorFlow left out
        record.update(status="failed", error=str(damaged))
        return damaged
    record["status"], record["error"] = session.outcome(e)
    return None


def _compare_synthetic(job) -> None:
    """The same run on synthetic batches kept on the device: is the real run input-bound?"""
    from tpubench import diagnosis
    from tpubench.run import job as job_lib

    fitted = session.fitted_from_data(job.params, job.manifest)
    synthetic_cfg = diagnosis.synthetic_config(job.cfg, job.model_dir, fitted)
    synthetic = job_lib.Job(
        synthetic_cfg, {}, job.model_dir.rstrip("/") + "/compare-synthetic", write_records=False
    )
    try:
        synthetic.run()
    finally:
        synthetic.finish()
    diagnosis.attach(job.record, synthetic.record)


def total_steps(cfg: TrainConfig, epoch_examples: int, batch: int) -> int:
    """--train_steps, or --train_epochs over the epoch's examples, or the default."""
    if cfg.train_steps is not None and cfg.train_epochs is not None:
        raise errors.UsageError("give --train_steps or --train_epochs, not both")
    if cfg.train_epochs is not None:
        return max(1, math.ceil(cfg.train_epochs * epoch_examples / batch))
    return cfg.train_steps or DEFAULT_TRAIN_STEPS


@dataclasses.dataclass(frozen=True)
class Plan:
    """What the session resolved for a train run, before the model is built."""

    spec: Any
    params: dict
    strategy: Any
    placement: Any
    manifest: Any
    total_steps: int
    epoch_examples: int
    prices: cost_runs.Prices
    started: float  # perf_counter when set-up began
    skipped: dict | None = None  # under --skip_corrupt: the damaged shards' summary
    fitted: dict = dataclasses.field(default_factory=dict)  # what the data changed

    @property
    def replicas(self) -> int:
        """Replicas the batch is split over (workers under parameter servers)."""
        ps = self.placement.strategy == "parameter_server"
        return self.placement.num_workers if ps else self.placement.num_replicas


def plan(cfg: TrainConfig, model_dir: str, started: float | None = None):
    """Plan of CFG, or None for a worker/ps task (it has served until stopped)."""
    from tpubench.data import resolve
    from tpubench.hardware import strategy as strategy_lib

    started = time.perf_counter() if started is None else started
    strategy_lib.configure_host(cfg.hardware)
    ref = session.ModelRef.of(cfg)
    spec, params = session.load_spec(ref)
    prices = cost_runs.prices(cfg.cost)  # fail on a bad --machine before any training
    role = strategy_lib.ps_server_role(cfg.hardware)
    if role is not None:
        return role
    strategy, placement = session.build_strategy(cfg.hardware)
    if cfg.data.compare_synthetic and placement.num_workers > 1:
        raise errors.UsageError(
            "--compare_synthetic runs on one host; for a cluster, run the cluster twice "
            "(with and without --use_synthetic_data) and compare the records"
        )
    _check_buckets(cfg, model_dir, placement.is_chief)
    ps = placement.strategy == "parameter_server"
    replicas = placement.num_workers if ps else placement.num_replicas
    batch = cfg.batch_size or spec.default_batch_size * replicas
    session.check_batch(batch, replicas)
    data_dir, manifest = resolve.resolve(cfg.data, spec, cfg.target_accuracy)
    fixed = placement.strategy in ("multi_worker", "tpu")
    feed = session.Feed(batch, replicas, cfg.seed, cfg.data, fixed_eval_steps=fixed)
    fitted = session.fit_params(params, ref, manifest, feed, data_dir)
    changes = session.fitted_changes(params, fitted, manifest)
    params = fitted
    skipped = None
    if manifest is not None and cfg.data.skip_corrupt:
        readable = resolve.readable_records(manifest)
        params["readable_records"] = readable["readable_records"]
        skipped = readable["summary"]
    epochs = session.examples_per_epoch(spec, manifest, params)
    steps = total_steps(cfg, epochs, batch)
    return Plan(
        spec,
        params,
        strategy,
        placement,
        manifest,
        steps,
        epochs,
        prices,
        started,
        skipped,
        changes,
    )


def _check_buckets(cfg: TrainConfig, model_dir: str, is_chief: bool) -> None:
    """Fails before training when a gs:// location cannot be read or written."""
    from tpubench import gcs

    if gcs.is_gcs(cfg.data.data_dir):
        gcs.check_access(cfg.data.data_dir, write=False)
    if not is_chief:
        return
    for path in {model_dir, cfg.results_dir}:
        if gcs.is_gcs(path):
            gcs.check_access(path, write=True)


def cost_section(p: Plan, results: dict, prices: cost_runs.Prices | None = None) -> dict:
    """The record's `cost` section; PRICES (of what ran) replace the up-front ones."""
    target = results.get("target") or {}
    usage = cost_runs.Usage(
        results.get("examples_per_sec"),
        results["train_wall_seconds"],
        session.accelerators_priced(p.placement),
        examples_per_epoch=p.epoch_examples,
        seconds_to_target=target.get("seconds"),
    )
    return cost_runs.train_costs(prices or p.prices, usage)


def mfu_section(cfg: TrainConfig, p: Plan, results: dict) -> dict:
    view = efficiency.PeakView.of(cfg, train=True)
    measured = efficiency.measure(p.spec, p.params, p.placement, view)
    return measured.train_section(results.get("examples_per_sec"))
