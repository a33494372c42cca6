"""`tpubench SUBCOMMAND --help` short, `--helpfull` every flag: both in groups, common first.

absl prints a subcommand's flags in one alphabetical list (train has over 50
flags): a new user looking for "how many steps" or "which price" reads all
of it.  `--help` (also -h, --helpshort) shows the flags a first run needs,
one line each, in groups in the order a first run needs them (model, steps,
data, hardware, precision, cost, output), and ends with the line that leads
to the rest (`all flags: tpubench train --helpfull`).  `--helpfull` shows
every flag of the subcommand with its whole help and default, in the same
groups; a flag no group names lands in "Other flags", so a new flag is never
hidden.  A subcommand with few flags shows them all in both.
"""

from __future__ import annotations

import re
import shutil
import textwrap

from absl import flags as absl_flags

# Where the scenario plug-ins' own flags go in their group (their names are theirs to declare).
SCENARIO_FLAGS = "<scenario plug-ins' flags>"
# (title, flags in the order shown).  Shared by train and infer; a flag the
# subcommand does not define is skipped.
GROUPS = (
    ("Model", ("model", "params", "tiny", "optimizer", "seed", "model_module", "trust_code")),
    (
        "Search (tune)",
        (
            "objective",
            "budget",
            "search",
            "batch_sizes",
            "trial_steps",
            "finalists",
            "repeats",
            "max_repeats",
            "equivalence_margin",
            "batching_windows",
            "serving_min_duration",
            "serving_min_queries",
        ),
    ),
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
            "min_duration",
            "min_query_count",
            "max_batch_size",
            "qsl_samples",
            "user_conf",
            SCENARIO_FLAGS,  # each scenario plug-in's own (cli/scenario_flags.py), here
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
        ("machine", "price_as", "pricing", "price_per_hour", "price_catalog", "peak_flops"),
    ),
    (
        "Output, records and checkpoints",
        (
            "results_dir",
            "model_dir",
            "run_label",
            "log_every_secs",
            "checkpoint_every",
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
# The flags `--help` shows for a subcommand with many; one with at most SHORT_ALL shows all.
COMMON = {
    "train": (
        "model", "model_module", "params", "tiny", "batch_size", "train_steps", "train_epochs",
        "max_seconds", "use_synthetic_data", "data_dir", "dataset", "accelerator", "num_gpus",
        "tpu", "precision", "xla", "machine", "pricing", "results_dir", "model_dir",
        "run_label", "verbose",
    ),
    "infer": (
        "model", "model_module", "trust_code", "params", "tiny", "batch_size", "num_batches",
        "max_seconds", "use_synthetic_data", "data_dir", "model_dir", "checkpoint", "scenario",
        "latency_bound", "target_qps", "accelerator", "precision", "xla", "machine", "pricing",
        "results_dir", "verbose",
    ),
    "tune": (
        "model", "model_module", "trust_code", "tiny", "model_dir", "objective", "budget",
        "search", "batch_sizes", "trial_steps", "use_synthetic_data", "data_dir",
        "latency_bound", "accelerator", "machine", "pricing", "results_dir", "verbose",
    ),
    "data": (
        "model", "model_module", "tiny", "source", "dataset", "data_dir", "output", "split",
        "examples", "batch_size", "batches", "format", "results_dir", "verbose",
    ),
}  # fmt: skip
SHORT_ALL = 16
_NAME_COLUMN = 28


def _describe(flag) -> str:
    """FLAG's help (with its choices, as absl words them) and its default."""
    text = " ".join(flag.help.split())  # absl's own: an enum's help starts with its choices
    if flag.default not in (None, "", []):
        default = str(flag.default).lower() if isinstance(flag.default, bool) else flag.default
        text += f" (default: {default})"
    return text


def _name(flag) -> str:
    return f"--[no]{flag.name}" if flag.flag_type() == "bool" else f"--{flag.name}"


def _sections(names) -> list[tuple[str, list[str]]]:
    """NAMES in GROUPS' order, each once; the rest under "Other flags" (--flagfile apart)."""
    shown: set[str] = set()
    out = []
    groups = [(title, _expand(members)) for title, members in GROUPS]
    rest = sorted(set(names) - {n for _, members in groups for n in members} - {"flagfile"})
    for title, members in [*groups, ("Other flags", rest)]:
        members = [n for n in members if n in names and n not in shown]
        shown.update(members)
        if members:
            out.append((title, members))
    return out


def _expand(members: tuple[str, ...]) -> tuple[str, ...]:
    """MEMBERS with SCENARIO_FLAGS replaced by every scenario plug-in's flag names."""
    if SCENARIO_FLAGS not in members:
        return members
    from tpubench.cli import scenario_flags  # the plug-ins' declarations, read when asked

    i = members.index(SCENARIO_FLAGS)
    return (*members[:i], *scenario_flags.declared_names(), *members[i + 1 :])


def _first_sentence(flag, room: int) -> str:
    """FLAG's help up to its first full stop, cut at a word to ROOM columns."""
    text = re.split(r"(?<=\.)\s(?=[A-Z])", " ".join(flag.help.split()))[0].rstrip(".")
    return (
        text if len(text) <= room else text[: room - 3].rsplit(" ", 1)[0].rstrip(" .,;:(") + "..."
    )


def short(subcommand: str, summary: str, names: frozenset[str], width: int | None = None) -> str:
    """The --help text of SUBCOMMAND (what it does: SUMMARY): its common flags, a line each."""
    width = width or min(shutil.get_terminal_size((100, 24)).columns, 100)
    fv = absl_flags.FLAGS
    common = COMMON.get(subcommand, ())
    wanted = names if len(names - {"flagfile"}) <= SHORT_ALL else names & set(common)
    lines = [f"usage: tpubench {subcommand} [flags]"]
    lines += [*textwrap.wrap(summary, width, initial_indent="  ", subsequent_indent="  "), ""]
    for title, members in _sections(wanted):
        lines.append(f"{title}:")
        for name in members:
            flag = fv[name]
            label = f"  {_name(flag)}".ljust(_NAME_COLUMN - 1) + " "
            lines.append(label + _first_sentence(flag, max(width - len(label), 30)))
        lines.append("")
    lines.append(f"all flags, with their defaults: tpubench {subcommand} --helpfull")
    return "\n".join(lines)


def grouped(subcommand: str, names: frozenset[str], width: int | None = None) -> str:
    """The --helpfull text of SUBCOMMAND, whose flags are NAMES: every one, in GROUPS."""
    width = width or min(shutil.get_terminal_size((100, 24)).columns, 100)
    fv = absl_flags.FLAGS
    lines = [f"usage: tpubench {subcommand} [flags]   (every flag; --help: the common ones)", ""]
    for title, members in _sections(names):
        lines.append(f"{title}:")
        for name in members:
            flag = fv[name]
            lines.append(f"  {_name(flag)}")
            lines += textwrap.wrap(
                _describe(flag), width, initial_indent="      ", subsequent_indent="      "
            )
        lines.append("")
    lines.append("Flags may also come from a file: --flagfile=FILE (one --flag=value a line).")
    return "\n".join(lines)
