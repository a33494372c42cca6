"""`tpubench infer`: prediction throughput, latency and $ per million predictions."""

from __future__ import annotations

from absl import flags

from tpubench.cli import argv_checks, configs, infer_text, tflog, train
from tpubench.cli import flag_groups as groups
from tpubench.cli import flags as flags_lib
from tpubench.core import errors

FLAGS = flags.FLAGS


def define():
    f = flags
    groups.define_model_flags()
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
        "A training run's model_dir: weights from its latest checkpoint.",
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


def main(args: list[str], full_argv: list[str]) -> int:
    from tpubench.run import infer as infer_lib  # deferred: loads the run session

    argv_checks.no_positional(args, "infer")
    cfg = None
    try:
        cfg = configs.infer_config()
        infer_lib.check_prices(cfg)  # pure Python: a bad --machine fails before TF loads
    except errors.TpubenchError as e:
        infer_lib.record_early_failure(
            cfg, FLAGS.results_dir, FLAGS.model, full_argv, flags_lib.flag_values(), e
        )
        raise
    tflog.import_tensorflow(lambda: train.configure_before_tf(cfg))
    recs = infer_lib.run(cfg, full_argv, flags_lib.flag_values())
    if recs and recs[0].get("record_path"):
        print(infer_text.infer_summary(recs))
    else:
        print("tpubench infer: this host finished; host 0 of the TPU slice writes the run records")
    return 0
