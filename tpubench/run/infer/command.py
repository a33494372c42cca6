"""`tpubench infer`: prediction throughput, latency percentiles and $ per million predictions.

`run(cfg, argv, flag_values)` is the whole job, testable without the CLI.  The
model is built once under the strategy (random weights, or a training run's
checkpoint) and measured at every `--batch_size` of the sweep.  Per batch
size: warm-up batches (the first traces the step), then timed batches, each
timed alone with its predictions fetched to the host, so a latency is what a
caller waits for.  Throughput is examples over the wall time of the timed
section.  Every batch size writes its own run record (`kind: "infer"`); an
invocation that fails writes a `failed` record saying why, like `train`.
Building, measuring and writing are `infer_session.InferSession`'s, shared
with the LoadGen scenarios (run/infer/infer_scenario.py).
"""

from __future__ import annotations

from tpubench.core import config, errors
from tpubench.core.config import InferConfig
from tpubench.cost import runs as cost_runs
from tpubench.run import interrupts, session
from tpubench.run.infer import infer_session


def record_early_failure(
    cfg: InferConfig | None,
    results_dir: str,
    model: str,
    argv: list[str],
    flag_values: dict,
    error: errors.TpubenchError,
) -> None:
    """An invocation that failed before TensorFlow loaded still leaves a record.

    CFG is None when the flags could not even be turned into a config (a bad
    --batch_size list); the record then has the flag values only.
    """
    record = infer_session.base_record(cfg, model, argv, flag_values)
    session.write_early_failure(record, error, results_dir)


def check_prices(cfg: InferConfig) -> None:
    """Prices the machines up front (pure Python): a bad --machine fails before TF loads.

    A LoadGen scenario without LoadGen installed fails here too.
    """
    session.check_machine(cfg)  # a GPU machine on a host with none
    cost_runs.prices(cfg.cost)
    if cfg.scenario.name != config.CLOSED_LOOP:
        from tpubench.run.infer import harness

        harness.import_loadgen(cfg.scenario.name)


def check_buckets_early(cfg: InferConfig) -> None:
    """gs:// data and weights readable, results writable: refused before TensorFlow loads."""
    from tpubench.storage import gcs

    for path in (cfg.data.data_dir, cfg.model_dir):
        if path and gcs.is_gcs(path):
            gcs.check_access(path, write=False)
    if cfg.results_dir and gcs.is_gcs(cfg.results_dir):
        gcs.check_access(cfg.results_dir, write=True)


def run(cfg: InferConfig, argv: list[str], flag_values: dict) -> list[dict]:
    """Runs the sweep; returns its records, one per batch size.

    On a multi-host TPU slice every host measures, and only host 0 writes
    records: elsewhere the records have no `record_path`.
    """
    infer = infer_session.InferSession(cfg, argv, flag_values)
    with interrupts.interruptible() as received:
        try:
            built = infer.build()
            if cfg.scenario.name != config.CLOSED_LOOP:
                from tpubench.run.infer import infer_scenario

                infer_scenario.run(infer, built)
            else:
                _closed_loop(infer, built)
        except BaseException as e:
            if interrupts.is_interrupt(e):
                where = f" at batch size {infer.batch}" if infer.batch else ""
                name = received[-1] if received else type(e).__name__
                message = f"interrupted ({name}){where}; batch sizes measured so far "
                message += "kept their records"
                error = errors.InterruptedRun(message)
                error.record_path = infer.fail("interrupted", message)
                raise error from None
            if not isinstance(e, Exception):
                raise
            path = infer.fail(*session.outcome(e), cause=e)
            if isinstance(e, errors.TpubenchError):
                e.record_path = path
            raise
        finally:
            infer.close()
    return infer.records


def _closed_loop(infer: infer_session.InferSession, built: infer_session.Built) -> None:
    """One record per batch size of the sweep, each measured by tpubench's own timing."""
    for index, batch in enumerate(built.batches):
        infer.batch = batch
        record = infer.new_record(batch, built, index)
        results = infer.measure(built, batch)
        if index == 0:
            infer.startup(batch)
            # After the first prediction, so it never counts in time to
            # first prediction; every record of the sweep shares it.
            measured, accuracy = infer.describe(built)
            prices = infer.prices()
        infer.add_host_sections(record)
        if accuracy is not None:
            results["eval"] = accuracy
        elif built.manifest is None:
            results["eval_note"] = "synthetic data: no accuracy is reported"
        record["results"] = results
        record["mfu"] = measured.infer_section(results["examples_per_sec"])
        usage = cost_runs.Usage(
            results["examples_per_sec"],
            results["timed_seconds"],
            session.accelerators_priced(built.placement),
        )
        record["cost"] = cost_runs.infer_costs(prices, usage)
        infer.finish(record)
    infer.done()
