"""Parsed flags -> frozen configs, once, at the edge; nothing below the CLI reads FLAGS."""

from __future__ import annotations

from absl import flags

from tpubench.cli import scenario_flags, values
from tpubench.core import basis, config, errors, precision

FLAGS = flags.FLAGS


def train_config() -> config.TrainConfig:
    """Reads the parsed train flags into a frozen TrainConfig."""
    _check_price_override()
    if FLAGS.compare_synthetic and FLAGS.use_synthetic_data:
        raise errors.UsageError(
            "--compare_synthetic runs real data against synthetic; drop --use_synthetic_data"
        )
    if FLAGS.batch_size is not None and FLAGS.per_replica_batch_size is not None:
        raise errors.UsageError(
            f"--batch_size={FLAGS.batch_size} with --per_replica_batch_size="
            f"{FLAGS.per_replica_batch_size}: give one (--batch_size is the global batch, "
            "--per_replica_batch_size one replica's)"
        )
    if FLAGS.train_epochs is not None and FLAGS.train_epochs <= 0:
        raise errors.UsageError(f"--train_epochs={FLAGS.train_epochs} must be > 0")
    return config.TrainConfig(
        model=FLAGS.model,
        model_modules=tuple(FLAGS.model_module),
        params=values.parse_params(FLAGS.params),
        tiny=FLAGS.tiny,
        global_batch_size=FLAGS.batch_size,
        per_replica_batch_size=FLAGS.per_replica_batch_size,
        train_steps=FLAGS.train_steps,
        train_epochs=FLAGS.train_epochs,
        steps_per_loop=FLAGS.steps_per_loop,
        warmup_loops=FLAGS.warmup_loops,
        eval_every_steps=FLAGS.eval_every_steps,
        eval_steps=FLAGS.eval_steps,
        target_accuracy=FLAGS.target_accuracy,
        stop_at_target=FLAGS.stop_at_target,
        precision=precision.parse(FLAGS.precision),
        optimizer=FLAGS.optimizer,
        xla=FLAGS.xla,
        xla_given=FLAGS["xla"].present,
        data_format=FLAGS.data_format,
        pointwise_weight_grad=FLAGS.pointwise_weight_grad,
        batch_norm_kernel=FLAGS.batch_norm_kernel,
        seed=FLAGS.seed,
        model_dir=FLAGS.model_dir,
        results_dir=FLAGS.results_dir,
        run_label=FLAGS.run_label,
        checkpoint_every_steps=FLAGS.checkpoint_every_steps,
        checkpoint_every_secs=values.parse_every(FLAGS.checkpoint_every, "--checkpoint_every"),
        async_remote_writes=FLAGS.async_remote_writes,
        wait_for_lock=FLAGS.wait_for_lock,
        shutdown_grace_secs=FLAGS.shutdown_grace_secs,
        storage_stall_secs=FLAGS.storage_stall_secs,
        storage_deadline_secs=FLAGS.storage_deadline_secs,
        profile_steps=_profile_steps(),
        log_every_secs=FLAGS.log_every_secs,
        hardware=_hardware_config(),
        data=_data_config(
            skip_corrupt=FLAGS.skip_corrupt, compare_synthetic=FLAGS.compare_synthetic
        ),
        cost=_cost_config(),
    )


def _profile_steps() -> tuple[int, int] | None:
    from tpubench.run.train import profile

    steps = profile.parse(FLAGS.profile_steps)
    return (steps.start, steps.end) if steps else None


def _check_price_override() -> None:
    if FLAGS.price_per_hour is not None and FLAGS.price_per_hour <= 0:
        raise errors.UsageError(f"--price_per_hour={FLAGS.price_per_hour} must be > 0 (USD/hour)")


def _hardware_config() -> config.HardwareConfig:
    return config.HardwareConfig(
        accelerator=FLAGS.accelerator,
        strategy=FLAGS.strategy,
        all_reduce=FLAGS.all_reduce,
        parameter_device=FLAGS.parameter_device,
        num_gpus=FLAGS.num_gpus,
        tpu=FLAGS.tpu,
        num_cpu_devices=FLAGS.num_cpu_devices,
        num_intra_threads=FLAGS.num_intra_threads,
        num_inter_threads=FLAGS.num_inter_threads,
        cpu_kernels=FLAGS.cpu_kernels,
    )


def _data_config(**train_only) -> config.DataConfig:
    synthetic = FLAGS.use_synthetic_data
    if not FLAGS["use_synthetic_data"].present and (FLAGS.dataset or FLAGS.data_dir):
        synthetic = False  # infer's synthetic default gives way to data named on the line
    return config.DataConfig(
        dataset=FLAGS.dataset,
        data_dir=FLAGS.data_dir,
        use_synthetic_data=synthetic,
        deterministic=FLAGS.deterministic_input,
        cache=FLAGS.cache_input,
        read_mb_per_s=_read_rate(synthetic),
        **train_only,
    )


def _read_rate(synthetic: bool) -> float | None:
    if FLAGS.read_mb_per_s and synthetic:
        raise errors.UsageError(
            f"--read_mb_per_s={FLAGS.read_mb_per_s:g} emulates a disk the records are read "
            "from; synthetic data reads none (give --data_dir or --nouse_synthetic_data)"
        )
    return FLAGS.read_mb_per_s


def _cost_config() -> config.CostConfig:
    return config.CostConfig(
        machine=tuple(FLAGS.machine),
        price_as=tuple(FLAGS.price_as) if "price_as" in FLAGS else (),
        pricing=basis.parse(FLAGS.pricing),
        price_per_hour=FLAGS.price_per_hour,
        price_catalog=FLAGS.price_catalog,
        peak_flops=FLAGS["peak_flops"].value if "peak_flops" in FLAGS else None,
    )


def infer_config() -> config.InferConfig:
    """Reads the parsed infer flags into a frozen InferConfig."""
    _check_price_override()
    if FLAGS.checkpoint and FLAGS.model_dir:
        raise errors.UsageError(
            f"give --checkpoint={FLAGS.checkpoint} or --model_dir={FLAGS.model_dir}, not both"
        )
    if FLAGS.max_seconds is not None and FLAGS.max_seconds <= 0:
        raise errors.UsageError(f"--max_seconds={FLAGS.max_seconds} must be > 0")
    return config.InferConfig(
        model=FLAGS.model,
        model_modules=tuple(FLAGS.model_module),
        params=values.parse_params(FLAGS.params),
        tiny=FLAGS.tiny,
        global_batch_sizes=values.parse_batch_sizes(FLAGS.batch_size),
        num_batches=FLAGS.num_batches,
        num_warmup_batches=FLAGS.num_warmup_batches,
        max_seconds=FLAGS.max_seconds,
        precision=precision.parse(FLAGS.precision),
        xla=FLAGS.xla,
        data_format=FLAGS.data_format,
        seed=FLAGS.seed,
        checkpoint=FLAGS.checkpoint,
        model_dir=FLAGS.model_dir,
        fold_batch_norm=FLAGS.fold_batch_norm,
        check_accuracy=FLAGS.check_accuracy,
        eval_steps=FLAGS.eval_steps,
        results_dir=FLAGS.results_dir,
        run_label=FLAGS.run_label,
        log_every_secs=FLAGS.log_every_secs,
        hardware=_hardware_config(),
        data=_data_config(),
        cost=_cost_config(),
        scenario=scenario_flags.scenario_config(),
    )


def report_config(args: list[str]) -> config.ReportConfig:
    return config.ReportConfig(
        inputs=tuple(args),
        output=FLAGS.output,
        baseline=FLAGS.baseline,
        published=tuple(FLAGS.published),
        allow_mixed=tuple(FLAGS.allow_mixed),
        format=FLAGS.format,
        title=FLAGS.title,
        pricing=basis.parse(FLAGS.pricing),
    )


def advise_config(args: list[str]) -> config.AdviseConfig:
    if not FLAGS.model:
        raise errors.UsageError("--model is required, e.g. --model=mnist_mlp")
    asked = [x for x in (FLAGS.deadline, FLAGS.budget, FLAGS.qps) if x is not None]
    if len(asked) != 1:
        raise errors.UsageError(
            "give exactly one of --deadline (e.g. 2h), --budget (USD) and --qps (serving, "
            "with --latency_bound)"
        )
    if FLAGS.qps is not None and not FLAGS.qps > 0:
        raise errors.UsageError(f"--qps={FLAGS.qps:g} must be > 0 (queries/sec)")
    if FLAGS.qps is not None and FLAGS.latency_bound is None:
        raise errors.UsageError("--qps needs --latency_bound, e.g. --qps=500 --latency_bound=50ms")
    bound = FLAGS.latency_bound
    if FLAGS.budget is not None and not FLAGS.budget > 0:
        raise errors.UsageError(f"--budget={FLAGS.budget} must be > 0 (USD)")
    if not FLAGS.epochs > 0:
        raise errors.UsageError(f"--epochs={FLAGS.epochs} must be > 0")
    return config.AdviseConfig(
        inputs=tuple(args),
        model=FLAGS.model,
        deadline_seconds=None if FLAGS.deadline is None else values.parse_duration(FLAGS.deadline),
        budget_usd=FLAGS.budget,
        epochs=FLAGS.epochs,
        to_target=FLAGS.to_target,
        price_catalog=FLAGS.price_catalog,
        max_age_days=FLAGS.max_age_days,
        tf_version=FLAGS.tf_version,
        qps=FLAGS.qps,
        latency_bound_seconds=(
            None if bound is None else values.parse_duration(bound, "--latency_bound")
        ),
        latency_percentile=FLAGS.latency_percentile,
        pricing=basis.parse(FLAGS.pricing),
        allow_busy=FLAGS.allow_busy,
    )


def data_options():
    from tpubench.data import source_api

    return source_api.Options(
        format=FLAGS.record_format,
        image_size=FLAGS.image_size,
        examples=FLAGS.examples,
        source_dir=FLAGS.source,
        manual_dir=FLAGS.manual_dir,
        validation_fraction=FLAGS.validation_fraction,
        seed=FLAGS.seed,
    )


def data_bench_config() -> config.DataBenchConfig:
    return config.DataBenchConfig(
        model=FLAGS.model,
        model_modules=tuple(FLAGS.model_module),
        params=values.parse_params(FLAGS.params),
        tiny=FLAGS.tiny,
        data_dir=FLAGS.data_dir,
        batch_size=FLAGS.batch_size,
        batches=FLAGS.batches,
        warmup=FLAGS.warmup_batches,
        split=FLAGS.split,
        seed=FLAGS.seed,
        deterministic=FLAGS.deterministic_input,
        cache=FLAGS.cache_input,
        read_mb_per_s=FLAGS.read_mb_per_s,
        format=FLAGS.format,
        results_dir=FLAGS.results_dir,
        run_label=FLAGS.run_label,
    )
