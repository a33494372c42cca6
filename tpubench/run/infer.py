"""`tpubench infer`: prediction throughput, latency percentiles and $ per million predictions.

`run(cfg, argv, flag_values)` is the whole job, testable without the CLI.  The
model is built once under the strategy (random weights, or a training run's
checkpoint) and measured at every `--batch_size` of the sweep.  Per batch
size: warm-up batches (the first traces the step), then timed batches, each
timed alone with its predictions fetched to the host, so a latency is what a
caller waits for.  Throughput is examples over the wall time of the timed
section.  Every batch size writes its own run record (`kind: "infer"`); an
invocation that fails writes a `failed` record saying why, like `train`.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from tpubench.core import errors, vocab
from tpubench.core.config import InferConfig
from tpubench.cost import runs as cost_runs
from tpubench.run import efficiency, infer_timing, interrupts, layout, session, weights
from tpubench.storage import records

UNSUPPORTED_STRATEGIES = vocab.CLUSTER_STRATEGIES
_SERVING_STRATEGIES = [s for s in vocab.STRATEGIES if s not in UNSUPPORTED_STRATEGIES + ("auto",)]


def _base_record(cfg: InferConfig | None, model: str, argv, flag_values) -> dict:
    config = cfg.to_dict() if cfg is not None else None
    invocation = session.Invocation(argv, flag_values)
    record = session.base_record("infer", records.new_run_id(f"{model}-infer"), config, invocation)
    if cfg is not None and cfg.run_label is not None:
        record["run_label"] = cfg.run_label  # every batch size's record copies the base
    return record


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
    session.write_early_failure(_base_record(cfg, model, argv, flag_values), error, results_dir)


def check_prices(cfg: InferConfig) -> None:
    """Prices the machines up front (pure Python): a bad --machine fails before TF loads.

    A LoadGen scenario without LoadGen installed fails here too.
    """
    cost_runs.prices(cfg.cost)
    if cfg.scenario.name != "closed_loop":
        from tpubench.run import scenarios

        scenarios.import_loadgen(cfg.scenario.name)


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
    sweep = _Sweep(cfg, argv, flag_values)
    with interrupts.interruptible() as received:
        try:
            sweep.run()
        except BaseException as e:
            if interrupts.is_interrupt(e):
                where = f" at batch size {sweep.batch}" if sweep.batch else ""
                name = received[-1] if received else type(e).__name__
                message = f"interrupted ({name}){where}; batch sizes measured so far "
                message += "kept their records"
                error = errors.InterruptedRun(message)
                error.record_path = sweep.fail("interrupted", message)
                raise error from None
            if not isinstance(e, Exception):
                raise
            if sweep.current is not None:
                session.mark_refused(sweep.current, e)
            path = sweep.fail(*session.outcome(e))
            if isinstance(e, errors.TpubenchError):
                e.record_path = path
            raise
        finally:
            sweep.close()
    return sweep.records


@dataclasses.dataclass(frozen=True)
class _Built:
    """Everything before the first prediction."""

    spec: Any
    params: dict
    runner: Any
    placement: Any
    batches: tuple
    manifest: Any
    prices: cost_runs.Prices
    unfitted: dict  # the params fitting to the data changed, before the fit


class _Sweep:
    def __init__(self, cfg: InferConfig, argv, flag_values):
        self.cfg = cfg
        self.base = _base_record(cfg, cfg.model, argv, flag_values)
        self.current = self.base  # the record a failure is written to
        self.records: list[dict] = []
        self.batch = None
        self.progress = None
        self.first_prediction = None  # (wall clock, perf_counter) of the first result
        self.is_chief = True

    def fail(self, status: str, error: str) -> str | None:
        """Writes the record in flight as failed or interrupted; returns its path."""
        record = self.current
        if record is None:  # every batch size already has its finished record
            return None
        record.update(status=status, error=error, finished=records.now_iso())
        record["record_path"] = self._write(record)
        return record["record_path"]

    def _write(self, record) -> str | None:
        """Writes RECORD; on a multi-host TPU slice only host 0 does."""
        return records.write(record, self.cfg.results_dir) if self.is_chief else None

    def close(self):
        if self.progress is not None:
            self.progress.close()

    # ------------------------------------------------------------ set-up
    def run(self):
        t_setup = time.perf_counter()
        built = self._build()
        model_ready = time.perf_counter() - t_setup
        if self.cfg.scenario.name != "closed_loop":
            from tpubench.run import infer_scenario

            infer_scenario.run(self, built, t_setup, model_ready)
            return
        for index, batch in enumerate(built.batches):
            self.batch = batch
            record = self._new_record(batch, built, index)
            results = self._measure(built.runner, batch, built.manifest)
            if index == 0:
                self._startup(t_setup, model_ready, batch)
                # After the first prediction, so it never counts in time to
                # first prediction; every record of the sweep shares it.
                measured, accuracy = self._describe(built)
                # Price what ran: with no --machine, the probed accelerators choose it.
                prices = cost_runs.prices(self.cfg.cost, self.base["hardware"]["accelerators"])
            for key in ("startup", "hardware", "software"):
                record[key] = self.base[key]
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
            record.update(status="ok", finished=records.now_iso())
            record["record_path"] = self._write(record)
            self.records.append(record)
        self.batch = None
        self.current = None

    def _startup(self, t_setup: float, model_ready: float, batch: int) -> None:
        import psutil

        wall, perf = self.first_prediction
        self.base["startup"] = {
            "time_to_first_prediction": wall - psutil.Process().create_time(),
            "time_to_first_prediction_from": "process start",
            "setup_to_first_prediction": perf - t_setup,
            "model_ready_seconds": model_ready,
            "batch_size": batch,
        }

    def _build(self) -> _Built:
        """Strategy, model and weights: everything before the first prediction."""
        from tpubench.data import resolve
        from tpubench.hardware import strategy as strategy_lib
        from tpubench.run import runner as runner_lib

        cfg = self.cfg
        strategy_lib.configure_host(cfg.hardware)
        ref = session.ModelRef.of(cfg)
        spec, params = session.load_spec(ref)
        layout.check(cfg.data_format, spec)
        prices = cost_runs.prices(cfg.cost)
        accelerator = strategy_lib.resolve_accelerator(cfg.hardware)
        name = strategy_lib.resolve_strategy(cfg.hardware, accelerator)
        if name in UNSUPPORTED_STRATEGIES:
            raise errors.UsageError(
                f"tpubench infer does not run under the {name} strategy; accepted: "
                f"{', '.join(_SERVING_STRATEGIES)} (or auto without a multi-task TF_CONFIG)"
            )
        strategy, placement = session.build_strategy(cfg.hardware)
        self.is_chief = placement.is_chief
        data_format = layout.resolve(cfg.data_format, spec, placement.accelerator, cfg.precision)
        layout.check_host(data_format, placement.accelerator, cfg.data_format)
        replicas = placement.num_replicas
        batches = cfg.global_batch_sizes or (spec.default_batch_size * replicas,)
        session.check_batches(batches, replicas)
        data_dir, manifest = resolve.resolve(cfg.data, spec)
        feed = session.Feed(batches[0], replicas, cfg.seed, cfg.data)
        fitted = session.fit_params(params, ref, manifest, feed, data_dir)
        changes = session.fitted_changes(params, fitted, manifest)
        unfitted = session.unfitted(params, fitted, manifest)
        params = fitted
        self.base.update(
            model={
                "name": spec.name,
                "description": spec.description,
                "params": session.recorded_params(params),
                "data_format": data_format,
            }
            | ({"fitted_to_data": changes} if changes else {}),
            placement=placement.__dict__,
            data=session.data_section(spec, manifest, params),
        )
        runner = runner_lib.Runner(
            spec, params, strategy, cfg.precision, cfg.xla, train=False, data_format=data_format
        )
        self.base["weights"] = weights.load(runner, spec, cfg)
        return _Built(spec, params, runner, placement, tuple(batches), manifest, prices, unfitted)

    def _describe(self, built: _Built):
        """Host probes, FLOPs, peak and accuracy: (Efficiency, accuracy or None)."""
        cfg = self.cfg
        self.base.update(session.probe(built.placement))
        view = efficiency.PeakView.of(cfg, train=False)
        measured = efficiency.measure(
            built.spec, built.params, built.placement, view, built.unfitted
        )
        accuracy = None
        if built.manifest is not None and cfg.check_accuracy:
            accuracy = self._accuracy(built, built.runner.global_batch_size)
        return measured, accuracy

    def _new_record(self, batch, built: _Built, index) -> dict:
        replicas = built.placement.num_replicas
        record = {k: v for k, v in self.base.items() if k not in ("run_id", "started")}
        record.update(
            run_id=records.new_run_id(f"{self.cfg.model}-infer-b{batch}"),
            started=records.now_iso(),
            global_batch_size=batch,
            per_replica_batch_size=batch // replicas,
            sweep={"id": self.base["run_id"], "batch_sizes": list(built.batches), "index": index},
        )
        self.current = record
        self._write(record)  # "running", replaced when measured
        return record

    # ------------------------------------------------------------ measuring
    def _measure(self, runner, batch, manifest) -> dict:
        from tpubench.run import progress as progress_lib

        cfg = self.cfg
        total = cfg.num_warmup_batches + cfg.num_batches
        self.progress = progress_lib.Progress(total, cfg.log_every_secs, unit="batch")
        self.progress.set_batch(batch)
        predict = infer_timing.predictor(runner, batch, manifest, cfg.seed)
        sweep = infer_timing.Timed(
            cfg.num_warmup_batches, cfg.num_batches, cfg.max_seconds, batch, f"infer b={batch}"
        )
        results = infer_timing.measure(predict, sweep, self.progress, self._first_prediction)
        results["examples_per_sec_per_replica"] = (
            results["examples_per_sec"] / runner.strategy.num_replicas_in_sync
        )
        return results

    def _first_prediction(self) -> None:
        if self.first_prediction is None:
            self.first_prediction = (time.time(), time.perf_counter())

    def _accuracy(self, built: _Built, batch: int) -> dict:
        """One untimed pass over the eval split with the weights being measured."""
        from tpubench.model.model_api import Mode

        # Under TPU every batch must be full (static shapes): whole batches only.
        fixed = built.placement.strategy == "tpu"
        steps = self.cfg.eval_steps
        if fixed:
            steps = session.full_eval_batches(
                built.spec, built.manifest, built.params, batch, steps
            )
        runner = built.runner
        result = runner.evaluate(runner.distribute(Mode.EVAL, fixed_eval_steps=fixed), steps)
        result["split"] = built.manifest.eval_split()
        result["note"] = "one untimed pass over the eval split, after the first batch size"
        return result
