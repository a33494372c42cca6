"""`tpubench infer`: prediction throughput, latency and $ per million predictions."""

from __future__ import annotations

from absl import flags

from tpubench.cli import (
    argv_checks,
    configs,
    infer_text,
    model_memory,
    scenario_flags,
    scenario_text,
    tflog,
    train,
)
from tpubench.cli import flag_groups as groups
from tpubench.cli import flags as flags_lib
from tpubench.core import errors, safe_text, vocab
from tpubench.data import manifest
from tpubench.hardware import cpu_kernels, memory_cap, placement
from tpubench.model import shipped
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
    scenario_flags.define()  # --scenario, then every scenario plug-in's own flags


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
        print(safe_text.block(scenario_text.scenario_summary(recs[0], cfg.scenario.plugin)))
    elif recs and recs[0].get("record_path"):
        print(safe_text.block(infer_text.infer_summary(recs)))
    else:
        print("tpubench infer: this host finished; host 0 of the TPU slice writes the run records")
    return 0
