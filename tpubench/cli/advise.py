"""`tpubench advise`: the cheapest configuration for a deadline, or the fastest for a budget."""

from __future__ import annotations

from absl import flags

from tpubench.cli import configs
from tpubench.cli import flag_groups as groups
from tpubench.core import columns, safe_text
from tpubench.report import advise, serving

FLAGS = flags.FLAGS


def define():
    flags.DEFINE_string("model", None, "Model to advise on (as recorded, e.g. mnist_mlp).")
    flags.DEFINE_string("deadline", None, "Finish within this time: 90m, 2h, 1h30m, 3600s, 1d.")
    flags.DEFINE_float("budget", None, "Spend at most this many USD (instead of --deadline).")
    flags.DEFINE_float(
        "qps",
        None,
        "Serving: the cheapest machine(s) for this many queries/sec, from server-scenario "
        "records (instead of --deadline or --budget).",
    )
    flags.DEFINE_string(
        "latency_bound", None, "With --qps: the latency bound at --latency_percentile, e.g. 50ms."
    )
    flags.DEFINE_float(
        "latency_percentile", 99.0, "With --qps: the percentile of the bound.", 50.0, 99.99
    )
    flags.DEFINE_bool(
        "allow_busy",
        False,
        "With --qps: size from server records measured on a busy host too (other processes "
        "used more than a quarter of its cores while LoadGen ran); without it they are refused.",
    )
    flags.DEFINE_float("epochs", 1.0, "Size of the job in epochs of the recorded dataset.")
    flags.DEFINE_bool(
        "to_target",
        False,
        "Size the job as the recorded time to --target_accuracy instead of --epochs.",
    )
    flags.DEFINE_string("price_catalog", None, "A price catalog CSV replacing the shipped one.")
    groups.define_basis()
    flags.DEFINE_float(
        "max_age_days", 180.0, "Warn about records older than this many days.", lower_bound=0.0
    )
    flags.DEFINE_string(
        "tf_version",
        None,
        "Warn about records from other TensorFlow versions (default: installed).",
    )


def main(args: list[str], full_argv: list[str]) -> int:
    cfg = configs.advise_config(args)
    text = serving.advise(cfg) if cfg.qps is not None else advise.advise(cfg)
    print(columns.fold(safe_text.block(text)), end="")
    return 0
