"""`tpubench train --help` (and infer's): the flags in groups, the common ones first.

absl prints a subcommand's flags in one alphabetical list (train has over 50
flags, 170 lines): a new user looking for "how many steps" or "which price"
reads all of it.  Here each flag belongs to one group, in the order a first
run needs them (model, steps, data, hardware, precision, cost, output), and
inside a group the common flags come first.  A flag no group names lands in
"Other flags", so a new flag is never hidden.  `--helpfull` stays absl's
whole list.
"""

from __future__ import annotations

import shutil
import textwrap

from absl import flags as absl_flags

# (title, flags in the order shown).  Shared by train and infer; a flag the
# subcommand does not define is skipped.
GROUPS = (
    ("Model", ("model", "params", "tiny", "optimizer", "seed", "model_module", "trust_code")),
    (
        "Steps, batches and evaluation",
        (
            "batch_size",
            "per_replica_batch_size",
            "train_steps",
            "train_epochs",
            "steps_per_loop",
            "warmup_loops",
            "num_batches",
            "num_warmup_batches",
            "max_seconds",
            "eval_every_steps",
            "eval_steps",
            "target_accuracy",
            "stop_at_target",
        ),
    ),
    (
        "Data",
        (
            "use_synthetic_data",
            "data_dir",
            "dataset",
            "compare_synthetic",
            "cache_input",
            "deterministic_input",
            "read_mb_per_s",
            "skip_corrupt",
        ),
    ),
    (
        "Hardware and distribution",
        (
            "accelerator",
            "num_gpus",
            "num_cpu_devices",
            "tpu",
            "strategy",
            "all_reduce",
            "parameter_device",
            "num_intra_threads",
            "num_inter_threads",
            "cpu_kernels",
            "memory_limit",
        ),
    ),
    (
        "Serving: MLPerf LoadGen scenarios (infer)",
        (
            "scenario",
            "latency_bound",
            "latency_percentile",
            "target_qps",
            "min_duration",
            "min_query_count",
            "max_batch_size",
            "batching_window",
            "samples_per_query",
            "qsl_samples",
            "qps_search_runs",
            "offline_runs",
            "user_conf",
            "check_accuracy",
            "checkpoint",
        ),
    ),
    (
        "Precision and speed",
        (
            "precision",
            "xla",
            "data_format",
            "pointwise_weight_grad",
            "batch_norm_kernel",
            "fold_batch_norm",
            "profile_steps",
        ),
    ),
    (
        "Cost",
        ("machine", "pricing", "price_per_hour", "price_catalog", "peak_flops"),
    ),
    (
        "Output, records and checkpoints",
        (
            "results_dir",
            "model_dir",
            "run_label",
            "log_every_secs",
            "checkpoint_every_steps",
            "async_remote_writes",
            "wait_for_lock",
            "verbose",
        ),
    ),
    (
        "Signals and storage deadlines",
        ("shutdown_grace_secs", "storage_stall_secs", "storage_deadline_secs"),
    ),
)
GROUPED = ("train", "infer")  # the subcommands whose --help is grouped


def _describe(flag) -> str:
    """FLAG's help (with its choices, as absl words them) and its default."""
    text = " ".join(flag.help.split())  # absl's own: an enum's help starts with its choices
    if flag.default not in (None, "", []):
        default = str(flag.default).lower() if isinstance(flag.default, bool) else flag.default
        text += f" (default: {default})"
    return text


def _name(flag) -> str:
    return f"--[no]{flag.name}" if flag.flag_type() == "bool" else f"--{flag.name}"


def grouped(subcommand: str, names: frozenset[str], width: int | None = None) -> str:
    """The --help text of SUBCOMMAND, whose flags are NAMES, in GROUPS."""
    width = width or min(shutil.get_terminal_size((100, 24)).columns, 100)
    fv = absl_flags.FLAGS
    lines = [
        f"usage: tpubench {subcommand} [flags]   (--helpfull: every flag, absl's list)",
        "",
    ]
    shown: set[str] = set()
    sections = [(title, [n for n in members if n in names]) for title, members in GROUPS]
    rest = sorted(names - {n for _, members in GROUPS for n in members} - {"flagfile"})
    sections.append(("Other flags", rest))
    for title, members in sections:
        members = [n for n in members if n not in shown]
        if not members:
            continue
        lines.append(f"{title}:")
        for name in members:
            shown.add(name)
            flag = fv[name]
            lines.append(f"  {_name(flag)}")
            lines += textwrap.wrap(
                _describe(flag), width, initial_indent="      ", subsequent_indent="      "
            )
        lines.append("")
    lines.append("Flags may also come from a file: --flagfile=FILE (one --flag=value a line).")
    return "\n".join(lines)
