"""`tpubench train`: train a model and record throughput, accuracy, MFU and cost."""

from __future__ import annotations

from absl import flags

from tpubench.cli import argv_checks, configs, report_text, tflog
from tpubench.cli import flag_groups as groups
from tpubench.cli import flags as flags_lib
from tpubench.core import config, errors, safe_text, vocab
from tpubench.data import manifest, resolve
from tpubench.hardware import cpu_kernels, memory_cap, placement
from tpubench.model import shipped
from tpubench.storage import files

FLAGS = flags.FLAGS


def define():
    f = flags
    groups.define_model_flags()
    f.DEFINE_integer(
        "batch_size",
        None,
        "GLOBAL batch size (split over replicas); default: the model's default batch x replicas.",
        lower_bound=1,
    )
    f.DEFINE_enum(
        "optimizer",
        "model",
        list(vocab.OPTIMIZERS),
        "model: the model's own optimizer; sgd (plain, tf_cnn_benchmarks' default), momentum "
        "(0.9), rmsprop or adam at the model's learning rate (and its schedule).",
    )
    f.DEFINE_enum(
        "pointwise_weight_grad",
        "auto",
        list(vocab.POINTWISE_WEIGHT_GRADS),
        "How 1x1 convolutions (channels-last) take their weight gradient: matmul (one matrix "
        "product over the batch's pixels), convolution (the framework's own kernel), or auto: "
        "matmul on a CPU, where oneDNN's bf16 weight-gradient convolution is 2-3x slower than "
        "the product (docs/cpu.md), convolution elsewhere.",
    )
    f.DEFINE_enum(
        "batch_norm_kernel",
        "auto",
        list(vocab.BATCH_NORM_KERNELS),
        "What trains batch norms, with the residual addition and ReLU after them: tpubench "
        "(tpubench's own CPU kernel, one pass each way, built with this machine's C++ compiler "
        "on first use), tensorflow (TensorFlow's fused batch norm, AddV2 and Relu), or auto: "
        "tpubench on a CPU without --xla or parameter servers where it builds, else tensorflow "
        "(docs/cpu.md). The same choice runs the bf16 bias and ReLU gradient of convolutions "
        "and dense layers, and fp32 Adadelta and RMSprop (without momentum) updates, through "
        "tpubench's kernels; in bf16 those updates also keep bf16 copies of the weights, "
        "which the next step reads instead of casting them.",
    )
    f.DEFINE_integer(
        "per_replica_batch_size",
        None,
        "Batch size PER REPLICA (per GPU, TPU core or CPU device; tf_cnn_benchmarks' "
        "--batch_size): the global batch is this x replicas.  Not with --batch_size.",
        lower_bound=1,
    )
    f.DEFINE_integer(
        "train_steps", None, "Training steps (default 300 unless --train_epochs).", lower_bound=1
    )
    f.DEFINE_float(
        "train_epochs", None, "Training epochs of the dataset (instead of steps).", lower_bound=0.0
    )
    f.DEFINE_integer(
        "steps_per_loop",
        1,
        "Steps per host call (TPUEstimator's iterations_per_loop).",
        lower_bound=1,
    )
    f.DEFINE_integer(
        "warmup_loops",
        1,
        "Leading loops excluded from throughput (tracing, compile).",
        lower_bound=1,
    )
    f.DEFINE_integer(
        "eval_every_steps", None, "Evaluate every N steps (and always at the end).", lower_bound=1
    )
    groups.define_eval_steps()
    f.DEFINE_float(
        "target_accuracy",
        None,
        "Report time, steps and $ to reach this eval accuracy (0-1).",
        lower_bound=0.0,
        upper_bound=1.0,
    )
    f.DEFINE_bool("stop_at_target", True, "Stop once --target_accuracy is reached.")
    f.DEFINE_string(
        "model_dir",
        None,
        "Checkpoints, TensorBoard and metrics.jsonl (local or "
        "gs://); default RESULTS_DIR/RUN_ID.  An existing checkpoint resumes.",
    )
    groups.define_results_dir()
    f.DEFINE_string(
        "run_label",
        None,
        "Free text stored in the run record as run_label (tpubench-launch tags its runs with it).",
    )
    f.DEFINE_string(
        "checkpoint_every",
        config.CHECKPOINT_EVERY_DEFAULT,
        "Checkpoint at the first loop end this long after the last checkpoint (e.g. 10m, 30s, "
        "1h), so a kill or a preemption loses at most about this much training; 0 or off: only "
        "at the end and on an interrupt.  The record's `checkpoints` says what they cost.",
    )
    f.DEFINE_integer(
        "checkpoint_every_steps", None, "Also checkpoint every N steps.", lower_bound=1
    )
    f.DEFINE_bool(
        "async_remote_writes",
        True,
        "With a gs:// --model_dir, write metrics and checkpoints on background threads "
        "(the run still waits for the last ones before it ends); false: between loops.",
    )
    f.DEFINE_bool(
        "wait_for_lock",
        False,
        "When another live run holds --model_dir, wait for it instead of stopping.",
    )
    f.DEFINE_float(
        "shutdown_grace_secs",
        25.0,
        "After SIGTERM/SIGINT/SIGHUP, end within this many seconds however slow the bucket: "
        "a checkpoint save still in flight then is abandoned (the last whole one stays).",
        lower_bound=0.0,
    )
    f.DEFINE_float(
        "storage_stall_secs",
        60.0,
        "Warn, naming the bucket and the operation, when a gs:// call has not returned "
        "for this many seconds.",
        lower_bound=0.1,
    )
    f.DEFINE_float(
        "storage_deadline_secs",
        600.0,
        "Stop the run (status failed, the record written locally if need be) when a gs:// "
        "call has not returned for this many seconds.",
        lower_bound=0.1,
    )
    f.DEFINE_string(
        "profile_steps",
        None,
        "START,END: write a TensorBoard profile (host and device traces) of steps START..END "
        "(from 1) under <model_dir>/tensorboard; profiled steps are left out of examples/sec.",
    )
    groups.define_log_every_secs()
    groups.define_data_flags(synthetic_default=False)
    f.DEFINE_bool(
        "skip_corrupt",
        False,
        "Train on the readable records of corrupted/truncated shards and count the rest.",
    )
    f.DEFINE_bool(
        "compare_synthetic",
        False,
        "Also run the same configuration on synthetic data; report the real/synthetic ratio, "
        "host CPU use and an input-bound verdict.",
    )
    groups.define_hardware_flags()
    groups.define_pricing()


def main(args: list[str], full_argv: list[str]) -> int:
    # Deferred: tpubench.run imports TensorFlow-free modules only, but the
    # session below it loads TensorFlow; keep `--help` and flag errors instant.
    from tpubench.run import session
    from tpubench.run.train import command as train_lib
    from tpubench.run.train import planning, unsent

    argv_checks.no_positional(args, "train")
    cfg = configs.train_config()
    shipped.check_name(cfg.model)  # a refusal: no run record (its name is a path)
    placement.check_gpu(cfg.hardware.accelerator)  # no GPU to see: no record, no TensorFlow
    # Refused in one line before TensorFlow loads, with no record and no folder: a TPU,
    # a data directory or a results directory that cannot be there (docs/security.md).
    placement.check_tpu(cfg.hardware.accelerator, cfg.hardware.tpu)
    manifest.check_local(cfg.data.data_dir)
    files.check_writable_dir(cfg.results_dir, "--results_dir")
    files.check_writable_dir(cfg.model_dir, "--model_dir")
    session.check_machine(cfg)  # a GPU machine on a host with none: no record either
    cpu_kernels.apply(cfg.hardware.cpu_kernels)  # no plug-in: no record; read as TF loads
    try:
        # Before TensorFlow loads: a bad --machine in milliseconds, a missing
        # bucket or permission in about a second.  The failed record goes to
        # results_dir when it can be written there, and the error line says
        # where; when results_dir is the missing bucket, there is none.
        shipped.check_known(cfg.model, cfg.model_modules)  # not after TF's start-up
        train_lib.check_prices(cfg)
        placement.check_early(cfg.hardware, cfg.global_batch_size)  # flag combinations
        resolve.check_target(cfg.data, cfg.target_accuracy)
        planning.check_buckets_early(cfg)
    except errors.TpubenchError as e:
        train_lib.record_early_failure(cfg, full_argv, flags_lib.flag_values(), e)
        raise
    try:  # a --memory_limit too small for TensorFlow itself still leaves a failed record
        memory_cap.loading(lambda: tflog.import_tensorflow(lambda: configure_before_tf(cfg)))
    except memory_cap.CapReached as e:
        train_lib.record_early_failure(cfg, full_argv, flags_lib.flag_values(), e)
        raise
    try:
        record = train_lib.train(cfg, full_argv, flags_lib.flag_values())
    except unsent.RecordNotWritten as e:
        if e.record.get("status") == "ok":  # the results first, then the one-line error
            print(safe_text.block(report_text.train_summary(e.record)), flush=True)
        raise
    if record.get("record_path"):
        print(safe_text.block(report_text.train_summary(record)))
    else:
        print(
            f"tpubench train: {record.get('role', 'worker')} finished; the chief task writes "
            "the run record"
        )
    return 0


def configure_before_tf(cfg) -> None:
    """Thread pools and logical devices must be set before the first op runs."""
    from tpubench.hardware import strategy

    strategy.configure_host(cfg.hardware)
