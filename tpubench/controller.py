"""The outer loop: warm-up, timing, eval cadence, checkpoints, records, cost.

`train(cfg, argv, flag_values)` is the whole `tpubench train` job, testable
without the CLI.  Every invocation that reaches it leaves a run record, also
when it fails, produces a NaN, or is interrupted (then the checkpoint under
model_dir lets the same command resume).
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import time

from tpubench import errors, model_api, records
from tpubench.config import CostConfig, DataConfig, TrainConfig

DEFAULT_TRAIN_STEPS = 300


class Interrupted(Exception):
    """SIGINT/SIGTERM during training."""


def _raise_interrupt(signum, frame):
    raise Interrupted(signal.Signals(signum).name)


def _base_record(cfg: TrainConfig, argv: list[str], flag_values: dict) -> tuple[dict, str]:
    run_id = records.new_run_id(cfg.model)
    model_dir = cfg.model_dir or records.path_for(cfg.results_dir, run_id)[: -len(".json")]
    record = {
        "schema_version": records.SCHEMA_VERSION,
        "run_id": run_id,
        "kind": "train",
        "status": "running",
        "started": records.now_iso(),
        "argv": records.redact_argv(argv),
        "flags": records.redact_flags(flag_values),
        "config": cfg.to_dict() | {"model_dir": model_dir},
    }
    if cfg.run_label is not None:
        record["run_label"] = cfg.run_label
    return record, model_dir


def record_early_failure(
    cfg: TrainConfig, argv: list[str], flag_values: dict, error: errors.TpubenchError
) -> None:
    """A run that failed before TensorFlow loaded still leaves a record."""
    record, _ = _base_record(cfg, argv, flag_values)
    record.update(status="failed", error=str(error), finished=records.now_iso())
    error.record_path = records.write(record, cfg.results_dir)


def train(cfg: TrainConfig, argv: list[str], flag_values: dict) -> dict:
    """Runs one training benchmark and returns its (written) record."""
    record, model_dir = _base_record(cfg, argv, flag_values)
    job = _Job(cfg, record, model_dir)
    # Both signals checkpoint and record: SIGINT too, because a process started
    # in the background by a shell inherits SIGINT as ignored.
    handlers = {s: signal.signal(s, _raise_interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        job.run()
        if cfg.data.compare_synthetic and job.is_chief:
            from tpubench import diagnosis

            synthetic = _Job(
                diagnosis.synthetic_config(cfg, model_dir, record["model"]["params"]),
                {},
                model_dir.rstrip("/") + "/compare-synthetic",
                write_records=False,
            )
            synthetic.run()
            synthetic.finish()
            diagnosis.attach(record, synthetic.record)
        record["status"] = "ok"
    except (KeyboardInterrupt, Interrupted) as e:
        record["status"] = "interrupted"
        step = job.save_checkpoint()
        record["error"] = (
            f"interrupted ({e or type(e).__name__}) at step {step}; rerun the same command "
            "(same --model_dir) to resume"
        )
        job.partial_results()
        raise errors.InterruptedRun(record["error"]) from None
    except errors.RunInvalidError as e:
        record["status"] = "invalid"
        record["error"] = str(e)
        raise
    except errors.TpubenchError as e:
        record["status"] = "failed"
        record["error"] = str(e)
        raise
    except Exception as e:
        damaged = job.damaged_shards(e)
        if damaged is not None:  # name the file and offset TensorFlow left out
            record["status"] = "failed"
            record["error"] = str(damaged)
            raise damaged from None
        record["status"] = "failed"
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        record["error"] = f"{type(e).__name__}: {first[:500]}"
        raise
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
        record["finished"] = records.now_iso()
        job.finish()
        if job.is_chief:
            record["record_path"] = records.write(record, cfg.results_dir)
            in_flight = sys.exc_info()[1]
            if isinstance(in_flight, errors.TpubenchError):
                in_flight.record_path = record["record_path"]
    return record


class _Job:
    def __init__(self, cfg: TrainConfig, record: dict, model_dir: str, write_records=True):
        self.cfg = cfg
        self.record = record
        self.model_dir = model_dir
        self.write_records = write_records
        self.manifest = None
        self.step = 0
        self.is_chief = True
        self.runner = None
        self.manager = None
        self.writer = None
        self.progress = None
        self.loops = []
        self.replicas = 1

    # ------------------------------------------------------------ set-up
    def run(self):
        from tpubench import strategy as strategy_lib

        cfg = self.cfg
        t_start = time.perf_counter()
        strategy_lib.configure_host(cfg.hardware)
        from tpubench import registry

        for module in cfg.model_modules:
            registry.load_module(module)
        spec = registry.get(cfg.model)
        params = registry.resolve_params(spec, dict(cfg.params), tiny=cfg.tiny)
        prices = _prices(cfg)  # fail on a bad --machine before any training
        role = strategy_lib.ps_server_role(cfg.hardware)
        if role is not None:  # a worker or ps task: serve until the launcher stops us
            self.is_chief = False
            self.record["role"] = f"{role[0]}:{role[1]}"
            strategy_lib.serve(role)
            return
        strategy, placement = strategy_lib.build(cfg.hardware)
        self.is_chief = placement.is_chief
        if cfg.data.compare_synthetic and placement.num_workers > 1:
            raise errors.UsageError(
                "--compare_synthetic runs on one host; for a cluster, run the cluster twice "
                "(with and without --use_synthetic_data) and compare the records"
            )
        _check_buckets(cfg, self.model_dir, self.is_chief)
        # Under parameter servers each worker steps on its own batch share.
        ps = placement.strategy == "parameter_server"
        replicas = placement.num_workers if ps else placement.num_replicas
        batch = cfg.batch_size or spec.default_batch_size * replicas
        if batch % replicas:
            raise errors.UsageError(
                f"--batch_size={batch} is not divisible by the {replicas} replicas; accepted: a "
                f"multiple of {replicas} (e.g. {max(1, batch // replicas) * replicas})"
            )
        data, manifest = _resolve_data(cfg, spec)
        self.manifest = manifest
        skipped = _readable_records(cfg, manifest) if manifest is not None else None
        params.update(
            batch_size=batch // replicas,
            global_batch_size=batch,
            seed=cfg.seed,
            data_dir=data,
            deterministic=cfg.data.deterministic,
            cache=cfg.data.cache,
            fixed_eval_steps=placement.strategy in ("multi_worker", "tpu"),
        )
        if skipped:
            params["readable_records"] = skipped["readable_records"]
        fitted = {}
        if manifest is not None:  # the head and the vocabulary fit the data it trains on
            for key, value in manifest.fitted_params().items():
                if key in params and key not in dict(cfg.params) and params[key] != value:
                    fitted[key] = f"{params[key]} -> {value}"
                    params[key] = value
            fitted.update(manifest.image_fit(params))
        epoch_examples = (
            model_api.examples_in(spec, manifest, "train", params)
            if manifest
            else spec.examples_per_epoch["train"]
        )
        total_steps = _total_steps(cfg, epoch_examples, batch)
        self.record.update(
            model={
                "name": spec.name,
                "description": spec.description,
                "params": _plain(params),
                "target_metric": spec.target_metric,
                "target_mode": spec.target_mode,
            }
            | ({"fitted_to_data": fitted} if fitted else {}),
            placement=_plain(placement.__dict__),
            data=manifest.identity()
            if manifest
            else {
                "name": "synthetic",
                "element_spec": str(spec.element_spec(params)),
                "examples_per_epoch_assumed": epoch_examples,
                "canonical_dataset": spec.datasets[0] if spec.datasets else None,
            },
            global_batch_size=batch,
            per_replica_batch_size=batch // replicas,
            train_steps=total_steps,
            examples_per_epoch=epoch_examples,
        )
        if skipped:
            self.record["data"]["skipped"] = skipped["summary"]
        from tpubench import probe

        self.record["hardware"] = {
            "cpu": probe.cpu(),
            "accelerators": probe.accelerators(placement),
        }
        self.record["software"] = probe.software()
        if self.is_chief and self.write_records:
            records.write(self.record, cfg.results_dir)  # a "running" record, replaced at the end
        self._train(
            spec,
            params,
            strategy,
            placement,
            total_steps,
            epoch_examples,
            prices,
            manifest,
            t_start,
        )

    # ------------------------------------------------------------ training
    def _train(
        self,
        spec,
        params,
        strategy,
        placement,
        total_steps,
        epoch_examples,
        prices,
        manifest,
        t_start,
    ):
        import tensorflow as tf

        from tpubench import hostcpu, timing, writers
        from tpubench import progress as progress_lib
        from tpubench import runner as runner_lib

        cfg = self.cfg
        batch = params["global_batch_size"]
        ps = placement.strategy == "parameter_server"
        self.replicas = replicas = placement.num_workers if ps else placement.num_replicas
        self.runner = runner = runner_lib.Runner(
            spec,
            params,
            strategy,
            cfg.precision,
            cfg.xla,
            step_batch=params["batch_size"] if ps else None,
        )
        ckpt_dir = self.model_dir.rstrip("/") + "/checkpoints"
        if not self.is_chief:
            ckpt_dir = self.model_dir.rstrip("/") + f"/.worker-{os.getpid()}"
        self.manager = tf.train.CheckpointManager(runner.checkpoint(), ckpt_dir, max_to_keep=2)
        resumed_from = None
        if self.manager.latest_checkpoint:
            runner.checkpoint().restore(self.manager.latest_checkpoint)
            resumed_from = int(runner.global_step.numpy())
            self.record["resumed_from_step"] = resumed_from
            self.record["resumed_from_checkpoint"] = self.manager.latest_checkpoint
        self.step = int(runner.global_step.numpy())
        if self.step >= total_steps:
            raise errors.UsageError(
                f"--model_dir={self.model_dir} already holds a checkpoint at step {self.step} "
                f"and --train_steps is {total_steps}: nothing to train (raise --train_steps, "
                "or give a fresh --model_dir)"
            )
        if self.is_chief:
            tf.io.gfile.makedirs(self.model_dir)
            self.writer = writers.MultiWriter(
                [
                    writers.JsonlWriter(self.model_dir.rstrip("/") + "/metrics.jsonl"),
                    writers.TensorBoardWriter(self.model_dir.rstrip("/") + "/tensorboard"),
                ]
            )
        else:
            self.writer = writers.NullWriter()

        run_loop, evaluate, examples_per_step = self._loops(runner, strategy, placement, manifest)
        eval_steps = cfg.eval_steps
        if params["fixed_eval_steps"] and manifest is not None:
            # Every worker must run the same number of full eval batches.
            full = max(
                1, model_api.examples_in(spec, manifest, manifest.eval_split(), params) // batch
            )
            eval_steps = min(eval_steps or full, full)
        eval_every = cfg.eval_every_steps
        if cfg.target_accuracy is not None and not eval_every:
            eval_every = max(1, math.ceil(epoch_examples / batch))  # once per epoch
        self.progress = progress_lib.Progress(total_steps, cfg.log_every_secs, self.is_chief)
        self.progress.set_batch(batch)

        self.loops = loops = []
        evals: list[dict] = []
        pauses = 0.0
        target = None
        last_loss = mean_loss = math.nan
        t_train = last_flush = time.perf_counter()
        self.record["startup_seconds"] = round(t_train - t_start, 3)
        sampler = hostcpu.Sampler().start()
        while self.step < total_steps:
            n = min(cfg.steps_per_loop, total_steps - self.step)
            # Loops end exactly on eval and checkpoint steps.
            for every in (eval_every, cfg.checkpoint_every_steps):
                if every:
                    n = min(n, every - self.step % every)
            t0 = time.perf_counter()
            last_loss, mean_loss = run_loop(n)  # returns floats: forces completion
            dt = time.perf_counter() - t0
            self.step += n
            loops.append(timing.LoopTime(n, dt, n * examples_per_step))
            if not (math.isfinite(last_loss) and math.isfinite(mean_loss)):
                raise errors.RunInvalidError(
                    f"loss became {last_loss} at step {self.step}: the run is invalid and reports "
                    "no throughput (lower the learning rate via --params, or use --precision=fp32)"
                )
            self.writer.write_scalars(
                self.step,
                {
                    writers.LOSS: mean_loss,
                    writers.EXAMPLES_PER_SEC: n * batch / dt,
                    writers.STEP_TIME: dt / n,
                },
            )
            rate = n * examples_per_step / dt if len(loops) > cfg.warmup_loops else None
            self.progress.update(self.step, rate, mean_loss)
            p0 = time.perf_counter()
            due_eval = evaluate is not None and (
                (eval_every and self.step % eval_every == 0) or self.step >= total_steps
            )
            if due_eval:
                result = evaluate(eval_steps)
                result.update(step=self.step, train_seconds=round(p0 - t_train, 3))
                evals.append(result)
                self.writer.write_scalars(
                    self.step,
                    {
                        writers.EVAL_PREFIX + k: v
                        for k, v in result.items()
                        if k not in ("step", "examples", "train_seconds")
                    },
                )
                value = result.get(spec.target_metric)
                if (
                    target is None
                    and cfg.target_accuracy is not None
                    and value is not None
                    and model_api.reached(spec, value, cfg.target_accuracy)
                ):
                    target = {
                        "metric": spec.target_metric,
                        "mode": spec.target_mode,
                        "value": value,
                        "target": cfg.target_accuracy,
                        "step": self.step,
                        "seconds": round(time.perf_counter() - t_train, 3),
                    }
            if cfg.checkpoint_every_steps and self.step % cfg.checkpoint_every_steps == 0:
                self.save_checkpoint()
            if time.perf_counter() - last_flush >= max(cfg.log_every_secs, 1.0):
                self.writer.flush()
                last_flush = time.perf_counter()
            pauses += time.perf_counter() - p0
            if target and cfg.stop_at_target:
                break
        wall = time.perf_counter() - t_train
        host_cpu = sampler.stop()
        self.progress.close()
        self.save_checkpoint()
        if not self.is_chief:  # its checkpoint copy exists only because collectives need it
            tf.io.gfile.rmtree(ckpt_dir)

        results = timing.summarize(loops, cfg.warmup_loops, replicas)
        results.update(
            final_loss=last_loss,
            final_loss_loop_mean=mean_loss,
            steps_run=sum(x.steps for x in loops),
            final_step=self.step,
            train_wall_seconds=round(wall, 3),
            pause_seconds=round(pauses, 3),
            peak_rss_gib=_peak_rss(),
            host_cpu=host_cpu,
            loops=[[lt.steps, round(lt.seconds, 6)] for lt in loops],
        )
        if evals:
            results["eval"] = evals[-1]
            results["eval_history"] = evals
        elif manifest is None:
            results["eval_note"] = "synthetic data: no accuracy is reported"
        if cfg.target_accuracy is not None:
            results["target"] = target or {
                "metric": spec.target_metric,
                "mode": spec.target_mode,
                "target": cfg.target_accuracy,
                "reached": False,
            }
        self.record["results"] = results
        rnn = _recurrent(runner, placement)
        if rnn is not None:
            self.record["recurrent"] = rnn
        self.record["mfu"] = _mfu(spec, params, results, placement, cfg)
        self.record["cost"] = _costs(prices, results, epoch_examples, wall, target, placement)

    @staticmethod
    def _loops(runner, strategy, placement, manifest):
        """(run_loop(n) -> (last, mean) floats, evaluate(steps) or None, examples per step)."""
        import tensorflow as tf

        from tpubench.model_api import Mode

        seed = runner.params["seed"]
        if placement.strategy == "parameter_server":
            coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
            dataset_fn = runner.ps_dataset(Mode.TRAIN, seed if manifest is None else None)
            iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))
            loop = runner.make_ps_loop()
            workers = placement.num_workers

            def run_ps(n):
                # One wave: every worker runs n steps; the wave's wall time is
                # what n steps of the whole cluster cost.
                values = [
                    coordinator.schedule(loop, args=(iterator, tf.constant(n)))
                    for _ in range(workers)
                ]
                coordinator.join()
                runner.global_step.assign_add(n)  # cluster steps, as in the sync strategies
                outs = [v.fetch() for v in values]
                return float(outs[-1][0]), sum(float(o[1]) for o in outs) / len(outs)

            evaluate = runner.evaluate_inline if manifest is not None else None
            return run_ps, evaluate, runner.params["batch_size"] * workers
        if manifest is None:
            fixed = runner.synthetic_inputs(seed)
            loop = runner.make_train_loop(lambda: fixed)
            evaluate = None
        else:
            iterator = iter(runner.distribute(Mode.TRAIN))
            loop = runner.make_train_loop(lambda: next(iterator))
            eval_data = runner.distribute(Mode.EVAL)

            def evaluate(steps):
                return runner.evaluate(eval_data, steps)

        def run_sync(n):
            last, mean = loop(tf.constant(n, tf.int32))
            return float(last), float(mean)

        return run_sync, evaluate, runner.params["global_batch_size"]

    def damaged_shards(self, e: BaseException):
        """A DataError naming the damaged shard when E is a TFRecord data loss, else None."""
        if self.manifest is None:
            return None
        from tpubench.data import integrity

        if not integrity.is_data_loss(e):
            return None
        damage = integrity.scan(self.manifest)
        if not damage:
            return errors.DataError(f"data loss reading {self.manifest.data_dir}: {e}")
        try:
            integrity.raise_for(damage, self.manifest.data_dir)
        except errors.DataError as found:
            return found

    def save_checkpoint(self) -> int:
        """Saves at the current global step (the truth, even mid-interrupt); returns it."""
        if self.manager is None or self.runner is None:
            return self.step
        step = int(self.runner.global_step.numpy())
        try:
            self.manager.save(checkpoint_number=step)
        except Exception:  # noqa: BLE001 - a failed save must not hide the original error
            self.record.setdefault("warnings", []).append("checkpoint save failed")
        return step

    def partial_results(self) -> None:
        """Throughput of the loops that ran before an interrupt (honestly labelled)."""
        from tpubench import timing

        if self.loops and "results" not in self.record:
            results = timing.summarize(self.loops, self.cfg.warmup_loops, self.replicas)
            results["partial"] = True
            results["final_step"] = (
                int(self.runner.global_step.numpy()) if self.runner is not None else self.step
            )
            self.record["results"] = results

    def finish(self):
        if self.progress is not None:
            self.progress.close()
        if self.writer is not None:
            try:
                self.writer.close()
            except Exception:  # noqa: BLE001
                self.record.setdefault("warnings", []).append("metric writer close failed")


# ----------------------------------------------------------------- helpers
def _total_steps(cfg: TrainConfig, epoch_examples: int, batch: int) -> int:
    if cfg.train_steps is not None and cfg.train_epochs is not None:
        raise errors.UsageError("give --train_steps or --train_epochs, not both")
    if cfg.train_epochs is not None:
        return max(1, math.ceil(cfg.train_epochs * epoch_examples / batch))
    return cfg.train_steps or DEFAULT_TRAIN_STEPS


def _resolve_data(cfg: TrainConfig, spec):
    """(data_dir, manifest), or (None, None) for synthetic data."""
    from tpubench.data import embedded
    from tpubench.data import manifest as manifest_lib

    if cfg.data.use_synthetic_data:
        if cfg.data.data_dir:
            raise errors.UsageError("--use_synthetic_data and --data_dir exclude each other")
        if cfg.target_accuracy is not None:
            raise errors.UsageError(
                f"--target_accuracy={cfg.target_accuracy} needs real data to evaluate on; "
                "synthetic data has no accuracy (drop --use_synthetic_data)"
            )
        return None, None
    dataset = cfg.data.dataset
    if cfg.data.data_dir:
        manifest = manifest_lib.read(cfg.data.data_dir)
        if dataset and manifest.name != dataset:
            raise errors.UsageError(
                f"--dataset={dataset} but {cfg.data.data_dir} holds {manifest.name!r}"
            )
        return cfg.data.data_dir, manifest
    if dataset is None:
        dataset = next((d for d in spec.datasets if d in embedded.NAMES), None)
    elif dataset not in spec.datasets:
        raise errors.UsageError(
            f"--dataset={dataset} does not fit model {spec.name!r}; it trains on: "
            f"{', '.join(spec.datasets) or 'its own data'} (or --use_synthetic_data)"
        )
    if dataset in embedded.NAMES:
        path = embedded.ensure_prepared(dataset)
        return path, manifest_lib.read(path)
    wanted = dataset or (spec.datasets[0] if spec.datasets else "its dataset")
    offline = [d for d in spec.datasets if d in embedded.NAMES]
    raise errors.DataError(
        f"model {spec.name!r} needs --data_dir with prepared {wanted} records, or "
        f"--use_synthetic_data; embedded offline data that fits: {', '.join(offline) or 'none'}"
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


def _readable_records(cfg: TrainConfig, manifest) -> dict | None:
    """Under --skip_corrupt: {file: readable records} of damaged shards, and a summary."""
    if not cfg.data.skip_corrupt:
        return None
    from tpubench.data import integrity

    damage = integrity.scan(manifest)
    summary = {
        "damaged_files": [
            {
                "file": d.file,
                "kind": d.kind,
                "offset": d.offset,
                "readable": d.readable,
                "skipped": d.skipped,
            }
            for d in damage
        ],
        "examples_skipped": sum(d.skipped or 0 for d in damage),
    }
    return {"readable_records": {d.file: d.readable for d in damage}, "summary": summary}


def check_prices(cfg: TrainConfig) -> None:
    """Prices the run's machines up front (pure Python): a bad --machine fails in
    milliseconds, before TensorFlow is imported."""
    _prices(cfg)


def resolve_data(data: DataConfig, spec):
    """(data_dir, manifest) for DATA, or (None, None) for synthetic data; train's rules."""
    return _resolve_data(TrainConfig(data=data), spec)


def hourly_prices(cost: CostConfig):
    """([HourlyPrice...], note) for COST, as train prices its runs (pure Python)."""
    return _prices(TrainConfig(cost=cost))


def _prices(cfg: TrainConfig):
    from tpubench.cost import catalog, pricing

    if cfg.cost.price_per_hour is not None:
        spec = cfg.cost.machine[0] if cfg.cost.machine else None
        return [pricing.override(cfg.cost.price_per_hour, spec)], None
    cat = catalog.load(cfg.cost.price_catalog)
    machines = list(cfg.cost.machine)
    defaulted = False
    if not machines:
        machines = _default_machines(cat)
        defaulted = True
    out = []
    for spec in machines:
        out.append(pricing.hourly(spec, cat, cfg.cost.pricing))
        if cfg.cost.pricing == "on_demand":
            with contextlib.suppress(errors.TpubenchError):  # no spot price: show on-demand only
                out.append(pricing.hourly(spec, cat, "spot"))
    return out, (
        "priced as cloud VMs with this host's vCPU count (pass --machine to choose)"
        if defaulted
        else None
    )


def _default_machines(cat) -> list[str]:
    """Cloud VMs with this host's vCPU count, for a CPU run given no --machine."""
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    size = next((s for s in (1, 2, 4, 8, 16, 32, 64, 96) if s >= n), 96)
    keys = [f"gcp:n1-standard-{size}", f"gcp:n1-highcpu-{size}", f"gcp:c2-standard-{size}"]
    return [k for k in keys if k in cat]


def _costs(prices, results, epoch_examples, wall, target, placement):
    from tpubench.cost import pricing

    priced, note = prices
    rate = results.get("examples_per_sec")
    rows = []
    for price in priced:
        rows.append(
            pricing.summarize(
                price,
                examples_per_sec=rate or 0.0,
                examples_per_epoch=epoch_examples,
                run_seconds=wall,
                seconds_to_target=target["seconds"] if target else None,
                num_accelerators=0 if placement.accelerator == "cpu" else placement.num_replicas,
            )
        )
    return {"machines": rows, "note": note, "examples_per_epoch": epoch_examples}


def _mfu(spec, params, results, placement, cfg) -> dict:
    from tpubench import mfu as mfu_lib
    from tpubench import model_info

    out: dict = {}
    try:
        counted = model_info.flops(spec, dict(params))
    except Exception as e:  # noqa: BLE001 - FLOP counting must not fail a finished run
        return {"note": f"FLOPs could not be counted: {type(e).__name__}"}
    out.update(counted)
    rate = results.get("examples_per_sec")
    out.update(
        mfu_lib.hardware_peak(
            placement, cfg.precision, cfg.hardware.num_intra_threads, cfg.cost.machine
        )
    )
    out["mfu"] = mfu_lib.mfu(out["train_flops_per_example"], rate, out.get("peak_flops"))
    return out


def _recurrent(runner, placement) -> dict | None:
    """Which recurrent implementation the traced step used (None: no RNN layers)."""
    from tpubench import recurrent

    try:
        ops = runner.traced_op_types()
    except Exception:  # noqa: BLE001 - inspection must not fail a finished run
        ops = None
    return recurrent.describe(runner.model, ops, placement.accelerator)


def _peak_rss() -> float:
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3)


def _plain(d):
    if isinstance(d, dict):
        return {k: _plain(v) for k, v in d.items()}
    if isinstance(d, (list, tuple)):
        return [_plain(v) for v in d]
    if isinstance(d, (str, int, float, bool)) or d is None:
        return d
    return str(d)
