"""`tpubench train`: one training benchmark, from config to run record.

`train(cfg, argv, flag_values)` is the whole job, testable without the CLI.
Every invocation that reaches it leaves a run record, also when it fails,
produces a NaN, or is interrupted (then the checkpoint under model_dir lets
the same command resume).  The session (tpubench/run/session.py) resolves
model, data, strategy and prices; the controller (tpubench/run/controller.py)
runs the loops and its actions; this module wires them and fills the record.
"""

from __future__ import annotations

from tpubench import errors, records
from tpubench.config import TrainConfig
from tpubench.cost import runs as cost_runs
from tpubench.run import planning, session

# What a train run plans before it builds the model: in planning.py, importable from here.
DEFAULT_TRAIN_STEPS = planning.DEFAULT_TRAIN_STEPS
Plan = planning.Plan
plan = planning.plan
total_steps = planning.total_steps

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
