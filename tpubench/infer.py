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

import signal
import time

from tpubench import controller, errors, records
from tpubench.config import InferConfig

UNSUPPORTED_STRATEGIES = ("multi_worker", "parameter_server")


class _Interrupted(Exception):
    """SIGINT/SIGTERM during the sweep."""


_received: list[str] = []  # signal names, kept apart from the exception: raised while
# TensorFlow traces a step, its message comes back rewritten as a stack of user code.


def _raise_interrupt(signum, frame):
    _received.append(signal.Signals(signum).name)
    raise _Interrupted(_received[-1])


def _base_record(cfg: InferConfig | None, model: str, argv, flag_values) -> dict:
    return {
        "schema_version": records.SCHEMA_VERSION,
        "run_id": records.new_run_id(f"{model}-infer"),
        "kind": "infer",
        "status": "running",
        "started": records.now_iso(),
        "argv": records.redact_argv(argv),
        "flags": records.redact_flags(flag_values),
        "config": cfg.to_dict() if cfg is not None else None,
    }


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
    record = _base_record(cfg, model, argv, flag_values)
    record.update(status="failed", error=str(error), finished=records.now_iso())
    error.record_path = records.write(record, results_dir)


def check_prices(cfg: InferConfig) -> None:
    """Prices the machines up front (pure Python): a bad --machine fails before TF loads."""
    controller.hourly_prices(cfg.cost)


def run(cfg: InferConfig, argv: list[str], flag_values: dict) -> list[dict]:
    """Runs the sweep; returns its records, one per batch size.

    On a multi-host TPU slice every host measures, and only host 0 writes
    records: elsewhere the records have no `record_path`.
    """
    sweep = _Sweep(cfg, argv, flag_values)
    _received.clear()
    handlers = {s: signal.signal(s, _raise_interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        sweep.run()
    except (KeyboardInterrupt, _Interrupted) as e:
        where = f" at batch size {sweep.batch}" if sweep.batch else ""
        name = _received[-1] if _received else type(e).__name__
        message = f"interrupted ({name}){where}; batch sizes measured so far "
        message += "kept their records"
        error = errors.InterruptedRun(message)
        error.record_path = sweep.fail("interrupted", message)
        raise error from None
    except errors.TpubenchError as e:
        e.record_path = sweep.fail("failed", str(e))
        raise
    except Exception as e:
        sweep.fail("failed", errors.describe(e))
        raise
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
        sweep.close()
    return sweep.records


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
        import psutil

        t_setup = time.perf_counter()
        spec, params, runner, placement, batches, manifest, prices = self._build()
        model_ready = time.perf_counter() - t_setup
        for index, batch in enumerate(batches):
            self.batch = batch
            record = self._new_record(batch, placement.num_replicas, batches, index)
            results = self._measure(runner, batch, manifest)
            if index == 0:
                wall, perf = self.first_prediction
                self.base["startup"] = {
                    "time_to_first_prediction": wall - psutil.Process().create_time(),
                    "time_to_first_prediction_from": "process start",
                    "setup_to_first_prediction": perf - t_setup,
                    "model_ready_seconds": model_ready,
                    "batch_size": batch,
                }
                # After the first prediction, so it never counts in time to
                # first prediction; every record of the sweep shares it.
                counted, peak, accuracy = self._describe(spec, params, runner, placement, manifest)
            for key in ("startup", "hardware", "software"):
                record[key] = self.base[key]
            if accuracy is not None:
                results["eval"] = accuracy
            elif manifest is None:
                results["eval_note"] = "synthetic data: no accuracy is reported"
            record["results"] = results
            record["mfu"] = _mfu(counted, peak, results["examples_per_sec"])
            record["cost"] = _costs(prices, results, placement)
            record.update(status="ok", finished=records.now_iso())
            record["record_path"] = self._write(record)
            self.records.append(record)
        self.batch = None
        self.current = None

    def _build(self):
        """Strategy, model and weights: everything before the first prediction."""
        from tpubench import registry
        from tpubench import runner as runner_lib
        from tpubench import strategy as strategy_lib

        cfg = self.cfg
        strategy_lib.configure_host(cfg.hardware)
        for module in cfg.model_modules:
            registry.load_module(module)
        spec = registry.get(cfg.model)
        params = registry.resolve_params(spec, dict(cfg.params), tiny=cfg.tiny)
        prices = controller.hourly_prices(cfg.cost)
        accelerator = strategy_lib.resolve_accelerator(cfg.hardware)
        name = strategy_lib.resolve_strategy(cfg.hardware, accelerator)
        if name in UNSUPPORTED_STRATEGIES:
            raise errors.UsageError(
                f"tpubench infer does not run under the {name} strategy; accepted: one_device, "
                "mirrored, tpu (or auto without a multi-task TF_CONFIG)"
            )
        strategy, placement = strategy_lib.build(cfg.hardware)
        self.is_chief = placement.is_chief
        replicas = placement.num_replicas
        batches = cfg.batch_sizes or (spec.default_batch_size * replicas,)
        bad = [b for b in batches if b % replicas]
        if bad:
            raise errors.UsageError(
                f"--batch_size={','.join(map(str, batches))}: {', '.join(map(str, bad))} not "
                f"divisible by the {replicas} replicas; accepted: multiples of {replicas}"
            )
        data_dir, manifest = controller.resolve_data(cfg.data, spec)
        params.update(
            batch_size=batches[0] // replicas,
            global_batch_size=batches[0],
            seed=cfg.seed,
            data_dir=data_dir,
            deterministic=cfg.data.deterministic,
            cache=cfg.data.cache,
            fixed_eval_steps=False,
        )
        own_classes = "num_classes" in dict(cfg.params)
        if manifest is not None and "num_classes" in params and not own_classes:
            params["num_classes"] = manifest.num_classes  # the head fits the data it predicts
        self.base.update(
            model={"name": spec.name, "description": spec.description, "params": params},
            placement=placement.__dict__,
            data=manifest.identity()
            if manifest
            else {"name": "synthetic", "element_spec": str(spec.element_spec(params))},
        )
        runner = runner_lib.Runner(spec, params, strategy, cfg.precision, cfg.xla, train=False)
        self.base["weights"] = self._load_weights(runner, spec)
        return spec, params, runner, placement, batches, manifest, prices

    def _describe(self, spec, params, runner, placement, manifest):
        """Host probes, FLOPs, peak and accuracy: (counted FLOPs, peak, accuracy or None)."""
        from tpubench import mfu, model_info, probe

        cfg = self.cfg
        self.base["hardware"] = {"cpu": probe.cpu(), "accelerators": probe.accelerators(placement)}
        self.base["software"] = probe.software()
        try:
            counted = model_info.flops(spec, dict(params))
        except Exception as e:  # noqa: BLE001 - FLOP counting must not fail a benchmark
            counted = {"note": f"FLOPs could not be counted: {type(e).__name__}"}
        peak = mfu.hardware_peak(
            placement, cfg.precision, cfg.hardware.num_intra_threads, cfg.cost.machine
        )
        accuracy = None
        if manifest is not None and cfg.check_accuracy:
            accuracy = self._accuracy(runner, placement, manifest, runner.global_batch)
        return counted, peak, accuracy

    def _new_record(self, batch, replicas, batches, index) -> dict:
        record = {k: v for k, v in self.base.items() if k not in ("run_id", "started")}
        record.update(
            run_id=records.new_run_id(f"{self.cfg.model}-infer-b{batch}"),
            started=records.now_iso(),
            global_batch_size=batch,
            per_replica_batch_size=batch // replicas,
            sweep={"id": self.base["run_id"], "batch_sizes": list(batches), "index": index},
        )
        self.current = record
        self._write(record)  # "running", replaced when measured
        return record

    def _load_weights(self, runner, spec) -> dict:
        cfg = self.cfg
        if not (cfg.checkpoint or cfg.model_dir):
            return {
                "source": "random_init",
                "seed": cfg.seed,
                "note": "random initial weights: timings are valid, predictions are not",
            }
        flag = "--checkpoint" if cfg.checkpoint else "--model_dir"
        path = _find_checkpoint(cfg.checkpoint or cfg.model_dir, flag)
        try:
            status = runner.checkpoint().restore(path)
            status.assert_existing_objects_matched()
            status.expect_partial()  # the optimizer's slots are not needed to predict
        except Exception as e:  # noqa: BLE001 - shape mismatches, missing variables, bad files
            first = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
            raise errors.UsageError(
                f"{flag}: checkpoint {path} does not fit model {spec.name!r} with these "
                f"--params/--tiny ({first}); give the training run's --model, --tiny and --params"
            ) from None
        return {"source": "checkpoint", "path": path, "step": int(runner.global_step.numpy())}

    # ------------------------------------------------------------ measuring
    def _measure(self, runner, batch, manifest) -> dict:
        import tensorflow as tf

        from tpubench import progress as progress_lib
        from tpubench import timing
        from tpubench.model_api import Mode

        cfg = self.cfg
        runner.set_global_batch(batch)
        if manifest is None:
            fixed = runner.synthetic_inputs(cfg.seed)
            step = runner.make_predict_step(lambda: fixed)
        else:  # an endless stream of full eval batches
            iterator = iter(runner.distribute(Mode.EVAL, fixed_eval_steps=True))
            step = runner.make_predict_step(lambda: next(iterator))

        def predict():
            return tf.nest.map_structure(lambda t: t.numpy(), step())  # the host has the result

        total = cfg.num_warmup_batches + cfg.num_batches
        self.progress = progress_lib.Progress(total, cfg.log_every_secs, unit="batch")
        self.progress.set_batch(batch)
        phase = f"infer b={batch}"
        warmup = []
        for i in range(cfg.num_warmup_batches):
            t0 = time.perf_counter()
            out = predict()
            warmup.append(time.perf_counter() - t0)
            if self.first_prediction is None:
                self.first_prediction = (time.time(), time.perf_counter())
            self.progress.update(i + 1, None, None, phase)
        checksum = _checksum(out)  # of the last warm-up batch: outside the timed section
        latencies = []
        start = last_shown = time.perf_counter()
        for _ in range(cfg.num_batches):
            t0 = time.perf_counter()
            predict()
            t1 = time.perf_counter()
            latencies.append(t1 - t0)
            if t1 - last_shown >= 0.5 and len(latencies) < cfg.num_batches:
                rate = batch * len(latencies) / (t1 - start)
                self.progress.update(len(warmup) + len(latencies), rate, None, phase)
                last_shown = t1
            if cfg.max_seconds is not None and t1 - start >= cfg.max_seconds:
                break
        wall = time.perf_counter() - start
        results = timing.latency_summary(latencies, batch, wall)
        self.progress.update(len(warmup) + len(latencies), results["examples_per_sec"], None, phase)
        self.progress.close()
        replicas = runner.strategy.num_replicas_in_sync
        results.update(
            examples_per_sec_per_replica=results["examples_per_sec"] / replicas,
            warmup_batches=len(warmup),
            warmup_seconds=sum(warmup),
            first_batch_seconds=warmup[0],
            output_checksum=checksum,
            peak_rss_gib=_peak_rss(),
            latencies=[round(x, 7) for x in latencies],
            warmup_latencies=[round(x, 7) for x in warmup],
        )
        return results

    def _accuracy(self, runner, placement, manifest, batch) -> dict:
        """One untimed pass over the eval split with the weights being measured."""
        from tpubench.model_api import Mode

        # Under TPU every batch must be full (static shapes): whole batches only.
        fixed = placement.strategy == "tpu"
        steps = self.cfg.eval_steps
        if fixed:
            full = max(1, manifest.split(manifest.eval_split()).examples // batch)
            steps = min(steps or full, full)
        result = runner.evaluate(runner.distribute(Mode.EVAL, fixed_eval_steps=fixed), steps)
        result["split"] = manifest.eval_split()
        result["note"] = "one untimed pass over the eval split, after the first batch size"
        return result


# ----------------------------------------------------------------- helpers
def _find_checkpoint(path: str, flag: str) -> str:
    """A checkpoint prefix from a prefix, a checkpoint directory or a training model_dir."""
    import tensorflow as tf

    if tf.io.gfile.exists(path + ".index"):
        return path
    for directory in (path.rstrip("/") + "/checkpoints", path):
        if tf.io.gfile.isdir(directory):
            latest = tf.train.latest_checkpoint(directory)
            if latest:
                return latest
    raise errors.DataError(
        f"{flag}={path} holds no checkpoint (expected a prefix like DIR/checkpoints/ckpt-300, a "
        "directory with a `checkpoint` file, or a training run's model_dir); drop it for random "
        "weights"
    )


def _checksum(out) -> float:
    """Sum of |value| over every prediction of a batch: equal outputs, equal sums."""
    import numpy as np
    import tensorflow as tf

    return float(sum(np.abs(np.asarray(x, np.float64)).sum() for x in tf.nest.flatten(out)))


def _mfu(counted: dict, peak: dict, rate) -> dict:
    from tpubench import mfu as mfu_lib

    out = dict(counted) | peak
    out["mfu"] = mfu_lib.mfu(out.get("forward_flops_per_example"), rate, out.get("peak_flops"))
    out["flops_counted"] = "forward pass only (inference)"
    return out


def _costs(prices, results, placement) -> dict:
    from tpubench.cost import pricing

    priced, note = prices
    rows = [
        pricing.summarize_inference(
            price,
            predictions_per_sec=results["examples_per_sec"] or 0.0,
            run_seconds=results["timed_seconds"],
            num_accelerators=0 if placement.accelerator == "cpu" else placement.num_replicas,
        )
        for price in priced
    ]
    return {"machines": rows, "note": note}


def _peak_rss() -> float:
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3)
