"""`tpubench infer`: prediction throughput, latency and $ per million predictions."""

from __future__ import annotations

from absl import flags

from tpubench.cli import argv_checks, configs, infer_text, model_memory, scenario_text, tflog, train
from tpubench.cli import flag_groups as groups
from tpubench.cli import flags as flags_lib
from tpubench.core import config, errors, safe_text, vocab
from tpubench.data import manifest
from tpubench.hardware import cpu_kernels, memory_cap, placement
from tpubench.model import shipped
from tpubench.run.infer import scenarios
from tpubench.storage import files

FLAGS = flags.FLAGS


def define():
    f = flags
    groups.define_model_flags()
    model_memory.define_trust_code()
    f.DEFINE_list(
        "batch_size",
        [],
        "GLOBAL batch size(s), e.g. 1,8,32,128: one measurement and one run record per value; "
        "default: the model's default batch x replicas.",
    )
    f.DEFINE_integer(
        "num_batches", 100, "Timed batches per batch size (after warm-up).", lower_bound=1
    )
    f.DEFINE_integer(
        "num_warmup_batches",
        5,
        "Untimed batches per batch size before timing (the first traces the step).",
        lower_bound=1,
    )
    f.DEFINE_float(
        "max_seconds",
        None,
        "Also end each batch size's timed section after this many seconds.",
        lower_bound=0.0,
    )
    f.DEFINE_string(
        "checkpoint",
        None,
        "Weights from this checkpoint (a prefix like DIR/checkpoints/ckpt-300, or a "
        "directory holding checkpoints); default: random initial weights.",
    )
    f.DEFINE_string(
        "model_dir",
        None,
        "A training run's model_dir: weights from its latest checkpoint, and the model trained "
        "there (its model.json names the model, --params, --tiny and --model_module).",
    )
    f.DEFINE_enum(
        "fold_batch_norm",
        "auto",
        list(vocab.FOLD_BATCH_NORMS),
        "Fold each batch norm that follows a convolution into that convolution's weights and "
        "bias before measuring (on, off, or auto: on a CPU, where TensorFlow folds them itself "
        "for fp32 but not for bf16: docs/cpu.md).",
    )
    f.DEFINE_bool(
        "check_accuracy",
        True,
        "On real data, one untimed pass over the eval split reports the weights' accuracy.",
    )
    groups.define_eval_steps()
    groups.define_results_dir()
    f.DEFINE_string(
        "run_label",
        None,
        "Free text stored in every run record as run_label (`tpubench study` finds cells by it).",
    )
    groups.define_log_every_secs()
    groups.define_data_flags(synthetic_default=True)
    groups.define_hardware_flags()
    groups.define_pricing()
    _define_scenario_flags()


def _define_scenario_flags():
    """MLPerf LoadGen scenarios (the `loadgen` extra); see docs/inference.md."""
    f = flags
    f.DEFINE_enum(
        "scenario",
        config.CLOSED_LOOP,
        list(scenarios.choices()),  # the closed loop, then every scenario plug-in
        "closed_loop: tpubench's own timing, one batch in flight (no LoadGen); the others run "
        "the model through MLPerf's LoadGen as that scenario.",
    )
    f.DEFINE_float(
        "target_qps",
        None,
        "server: Poisson arrivals at this many queries/sec; default: search for the highest "
        "QPS whose LoadGen run is VALID.",
    )
    f.DEFINE_string(
        "latency_bound",
        None,
        "server: the latency bound at --latency_percentile, e.g. 50ms (or the --user_conf's "
        "target_latency).",
    )
    f.DEFINE_float(
        "latency_percentile",
        None,
        "server: the percentile the bound applies to; default: the --user_conf's, else "
        "mlperf.conf's (99).",
        50.0,
        99.99,
    )
    f.DEFINE_integer(
        "max_batch_size",
        None,
        "server and offline: largest batch the SUT runs; default: the largest --batch_size.",
        lower_bound=1,
    )
    f.DEFINE_string(
        "batching_window", "2ms", "server: how long a batch waits for more queries to join it."
    )
    f.DEFINE_integer(
        "samples_per_query",
        None,
        "multi_stream: samples in each query; default: the --user_conf's, else mlperf.conf's (8).",
        lower_bound=1,
    )
    f.DEFINE_string(
        "min_duration",
        None,
        "LoadGen's minimum run duration; default: mlperf.conf's (600s). Shorter runs are "
        "marked as below mlperf.conf's minimums.",
    )
    f.DEFINE_integer(
        "min_query_count",
        None,
        "LoadGen's minimum query count; default: mlperf.conf's for the model and scenario.",
        lower_bound=1,
    )
    f.DEFINE_integer(
        "qsl_samples",
        None,
        "Samples the query sample library loads before timing (performance_sample_count); "
        "default: mlperf.conf's for the model, else 1024.",
        lower_bound=1,
    )
    f.DEFINE_string(
        "user_conf",
        None,
        "An MLPerf user.conf ('model.scenario.key = value' lines) read by LoadGen over the "
        "mlperf.conf built into it; the flags above, where given, win over both. A key "
        "tpubench cannot honour is refused before any run (docs/inference.md).",
    )
    f.DEFINE_integer(
        "offline_runs",
        3,
        "offline: LoadGen results the record's median and spread are taken over.",
        lower_bound=1,
    )
    f.DEFINE_integer(
        "qps_search_runs",
        6,
        "server without --target_qps: LoadGen runs the search for the highest VALID QPS may spend.",
        lower_bound=1,
    )


def main(args: list[str], full_argv: list[str]) -> int:
    from tpubench.run.infer import command as infer_lib  # deferred: loads the run session

    argv_checks.no_positional(args, "infer")
    cfg = None
    model_memory.apply("infer")  # the model trained in --model_dir, before TF (a refusal)
    shipped.check_name(FLAGS.model)  # a refusal: no run record (its name is a path)
    try:
        cfg = configs.infer_config()
        shipped.check_known(cfg.model, cfg.model_modules)  # not after TF's start-up
        infer_lib.check_prices(cfg)  # pure Python: a bad --machine fails before TF loads
        placement.check_early(cfg.hardware, None)  # device flags for another accelerator
        infer_lib.check_buckets_early(cfg)  # a missing bucket, before TF (see cli/train.py)
    except errors.TpubenchError as e:
        infer_lib.record_early_failure(
            cfg, FLAGS.results_dir, FLAGS.model, full_argv, flags_lib.flag_values(), e
        )
        raise
    placement.check_gpu(cfg.hardware.accelerator)  # a refusal: no record, no TensorFlow
    # Refused in one line before TensorFlow loads, with no record and no folder: a TPU,
    # a data directory or a results directory that cannot be there (docs/security.md).
    placement.check_tpu(cfg.hardware.accelerator, cfg.hardware.tpu)
    manifest.check_local(cfg.data.data_dir)
    files.check_writable_dir(cfg.results_dir, "--results_dir")
    cpu_kernels.apply(cfg.hardware.cpu_kernels)  # no plug-in: no record; read as TF loads
    try:  # a --memory_limit too small for TensorFlow itself still leaves a failed record
        memory_cap.loading(lambda: tflog.import_tensorflow(lambda: train.configure_before_tf(cfg)))
    except memory_cap.CapReached as e:
        infer_lib.record_early_failure(
            cfg, FLAGS.results_dir, FLAGS.model, full_argv, flags_lib.flag_values(), e
        )
        raise
    recs = infer_lib.run(cfg, full_argv, flags_lib.flag_values())
    if recs and recs[0].get("record_path") and recs[0].get("scenario"):
        print(safe_text.block(scenario_text.scenario_summary(recs[0])))
    elif recs and recs[0].get("record_path"):
        print(safe_text.block(infer_text.infer_summary(recs)))
    else:
        print("tpubench infer: this host finished; host 0 of the TPU slice writes the run records")
    return 0
