"""`tpubench train`: one training benchmark, from config to run record.

`train(cfg, argv, flag_values)` is the whole job, testable without the CLI.
Every invocation that reaches it leaves a run record, also when it fails,
produces a NaN, or is interrupted (then the checkpoint under model_dir lets
the same command resume).  The session (tpubench/run/session.py) resolves
model, data, strategy and prices; the controller (tpubench/run/train/controller.py)
runs the loops and its actions; this module wires them and fills the record.
"""

from __future__ import annotations

import contextlib
import shlex
import sys

from tpubench.core import errors
from tpubench.core.config import TrainConfig
from tpubench.cost import runs as cost_runs
from tpubench.model import remembered
from tpubench.run import interrupts, session
from tpubench.storage import records
from tpubench.storage.run_dir import RunDir


def _base_record(
    cfg: TrainConfig, argv: list[str], flag_values: dict, model_dir: str | None = None
) -> tuple[dict, RunDir]:
    """The record a run starts from, and its model_dir: --model_dir, else MODEL_DIR (a
    killed run's, resumed), else RESULTS_DIR/RUN_ID."""
    run_id = records.new_run_id(cfg.model)
    run_dir = RunDir.for_run(cfg.model_dir or model_dir, cfg.results_dir, run_id)
    config = cfg.to_dict() | {"model_dir": run_dir.path}
    record = session.base_record("train", run_id, config, session.Invocation(argv, flag_values))
    if cfg.run_label is not None:
        record["run_label"] = cfg.run_label
    if cfg.model_modules:  # path and SHA-256 of each: rerun checks the file is unchanged
        record["model_code"] = remembered.code(cfg.model_modules)
    return record, run_dir


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
    from tpubench.run.train import job as job_lib
    from tpubench.run.train import saver, unsent

    finished = unsent.recover(cfg.model_dir, cfg.results_dir, session.say)
    if finished is not None:  # the same command, run again after its record failed
        return finished
    from tpubench.run.train import deadlines, resume

    killed = None if cfg.model_dir else resume.killed_run(cfg.results_dir, argv)
    if killed is not None:  # the same command, run again after a kill -9 or a preemption
        session.say(resume.note(killed))
    record, run_dir = _base_record(cfg, argv, flag_values, killed and killed.model_dir)
    if killed is not None:
        record["resumes_run"] = killed.run_id
    job = job_lib.Job(cfg, record, run_dir)
    watchdog = deadlines.watch(job, cfg)
    try:
        with interrupts.interruptible() as received:
            job.signals = received
            try:
                job.run()
                if cfg.data.compare_synthetic and job.is_chief:
                    _compare_synthetic(job)
                record["status"] = "ok"
            except BaseException as e:
                replacement = _settle(job, e, received)
                if replacement is None:
                    raise
                raise replacement from None
    finally:
        record["finished"] = records.now_iso()
        try:
            job.finish()
            if job.saver is not None:  # what checkpoints cost (docs/reliability.md)
                record["checkpoints"] = saver.section(
                    job.saver, cfg.checkpoint_every_secs, cfg.checkpoint_every_steps
                )
            if job.is_chief:
                watchdog.claim_end()
                _write_final(record, cfg.results_dir)
        finally:
            watchdog.stop()
    return record


def _write_final(record: dict, results_dir: str) -> None:
    """Writes the final record (retried; saved to the cache if it cannot be written).

    The error in flight (an interrupt, a failure) learns the record's path;
    when the record cannot be written, RecordNotWritten replaces it, its
    message carrying the status and the fallback's path.
    """

    from tpubench.run.train import unsent

    in_flight = sys.exc_info()[1]
    try:
        record["record_path"] = unsent.write_final(record, results_dir)
    except unsent.RecordNotWritten as e:
        if isinstance(in_flight, errors.TpubenchError) and not getattr(
            in_flight, "record_path", None
        ):
            # The run's own error (a missing bucket, bad data) stays the one line
            # and its exit code; it says where the record went instead.
            where = f"saved to {e.fallback}" if e.fallback else "not saved"
            in_flight.args = (f"{errors.one_line(in_flight)} (its run record was {where})",)
            return
        if record.get("error"):
            e.args = (f"{e.args[0]}; the run {record['status']}: {record['error']}",)
        raise
    if isinstance(in_flight, errors.TpubenchError):
        in_flight.record_path = record["record_path"]


def _settle(job, e: BaseException, received=()) -> BaseException | None:
    """Sets the record's status for E; returns the error to raise instead, or None.

    A signal received counts as the cause even when TensorFlow rewrote the
    exception it raised.  The checkpoint is saved with further signals
    ignored (a second Ctrl-C must not abort it), and the record claims it
    only once it is saved.
    """
    record = job.record
    if interrupts.is_interrupt(e) or received:
        cause = received[0] if received else (str(e) or type(e).__name__)
        record["status"] = "interrupted"
        quiet = received.quiet() if hasattr(received, "quiet") else contextlib.nullcontext()
        with quiet:
            step, failure = job.save_checkpoint_reporting()
        if failure is None:
            saved = f"checkpoint saved; {_resume_hint(job)}"
        else:
            saved = (
                f"the checkpoint could not be saved ({failure}); a rerun resumes from the last "
                "checkpoint saved before"
            )
        record["error"] = f"interrupted ({cause}) at step {step}; {saved}"
        last = job.saver.last_whole if job.saver is not None else None
        record["interrupted"] = {
            "cause": cause,
            "step": step,
            "checkpoint_saved": failure is None,
            "last_checkpoint": step if failure is None else last,
        }
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
    session.mark_refused(record, e)
    return None


def _resume_hint(job) -> str:
    """How to resume: the same command where --model_dir was given, else that command with
    the --model_dir this run wrote (a plain rerun would start a new run at step 0)."""
    if job.cfg.model_dir:
        return "rerun the same command (same --model_dir) to resume"
    argv = ["tpubench", *job.record.get("argv", [])[1:], f"--model_dir={job.run_dir.path}"]
    return f"rerun the same command to resume, or resume with: {shlex.join(argv)}"


def _compare_synthetic(job) -> None:
    """The same run on synthetic batches kept on the device: is the real run input-bound?"""
    from tpubench.run.train import diagnosis
    from tpubench.run.train import job as job_lib

    fitted = session.fitted_from_data(job.params, job.manifest)
    synthetic_cfg = diagnosis.synthetic_config(job.cfg, job.run_dir, fitted)
    synthetic = job_lib.Job(synthetic_cfg, {}, job.run_dir.compare_synthetic, write_records=False)
    try:
        synthetic.run()
    finally:
        synthetic.finish()
    diagnosis.attach(job.record, synthetic.record)
