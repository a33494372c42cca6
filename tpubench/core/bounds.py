"""Every number a user or a file gives has a range from what it means.

A positive but absurd value passes a `> 0` check and then exhausts the host
(a target rate of 1e-9 queries/sec, a batch of 10**12, a week of steps per
loop).  `FLAGS` holds each numeric flag's range and why; `check_flag` is
the one check every subcommand's parsed flags pass through (cli/main.py),
and `tpubench rerun` checks a record's flags against the same ranges
(cli/flags.kinds).  `MAX_DURATION_SECONDS` bounds every duration flag and
`check_memory` refuses work whose memory is known before it is allocated.
Pure Python (docs/security.md lists the ranges).
"""

from __future__ import annotations

import math

from tpubench.core import errors

DAY = 86400.0
MAX_DURATION_SECONDS = 7 * DAY  # no benchmark flag means a run of more than a week

# flag -> (lowest, highest, what the number is).  Ranges reach far past any real
# run and stop well short of what would exhaust a host before work starts.
FLAGS: dict[str, tuple[float, float, str]] = {
    "batch_size": (1, 1 << 20, "examples per step"),
    "max_batch_size": (1, 1 << 20, "examples per batch"),
    "batches": (1, 10**7, "batches"),
    "warmup_batches": (0, 10**6, "batches"),
    "num_batches": (1, 10**7, "batches"),
    "num_warmup_batches": (1, 10**6, "batches"),
    "examples": (8, 10**8, "examples"),
    "image_size": (8, 4096, "pixels a side"),
    "train_steps": (1, 10**9, "steps"),
    "trial_steps": (10, 10**7, "steps"),
    "eval_steps": (1, 10**7, "steps"),
    "eval_every_steps": (1, 10**9, "steps"),
    "checkpoint_every_steps": (1, 10**9, "steps"),
    "steps_per_loop": (1, 10**6, "steps"),
    "warmup_loops": (1, 10**4, "loops"),
    "train_epochs": (0, 10**5, "epochs"),
    "epochs": (0, 10**5, "epochs"),
    "finalists": (1, 1000, "configurations"),
    "repeats": (1, 1000, "runs"),
    "offline_runs": (1, 100, "LoadGen runs"),
    "qps_search_runs": (1, 100, "LoadGen runs"),
    "min_query_count": (1, 10**7, "queries"),
    "qsl_samples": (1, 10**7, "samples"),
    "samples_per_query": (1, 10**6, "samples"),
    "target_qps": (0.1, 1e7, "queries per second"),
    "qps": (0.001, 1e9, "queries per second"),
    "num_gpus": (1, 256, "GPUs"),
    "num_intra_threads": (0, 4096, "threads"),
    "num_inter_threads": (0, 4096, "threads"),
    "log_every_secs": (0, DAY, "seconds"),
    "shutdown_grace_secs": (0, 3600, "seconds"),
    "storage_deadline_secs": (0.1, DAY, "seconds"),
    "storage_stall_secs": (0.1, DAY, "seconds"),
    "max_seconds": (0, MAX_DURATION_SECONDS, "seconds"),
    "max_age_days": (0, 36500, "days"),
    "peak_flops": (1, 1e21, "FLOP/s"),
    "price_per_hour": (0, 1e5, "USD per hour"),
    "budget": (0.01, 1e9, "USD"),
    "read_mb_per_s": (0.1, 1e6, "MB/s"),
}


def _shown(value) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else f"{value:g}"


def check_flag(name: str, value) -> None:
    """UsageError when NAME (a flag with a range) holds a VALUE outside it; lists: each item."""
    if name not in FLAGS or value is None or isinstance(value, bool):
        return
    low, high, what = FLAGS[name]
    items = value if isinstance(value, (list, tuple)) else [value]
    for item in items:
        try:
            number = float(item)
        except (TypeError, ValueError):
            continue  # not a number: the flag's own parser says so
        if not math.isfinite(number) or not low <= number <= high:
            raise errors.UsageError(
                f"--{name}={item} is out of range; accepted: {_shown(low)} to {_shown(high)} "
                f"({what})"
            )


def check_duration(seconds: float, flag: str) -> float:
    """SECONDS when at most MAX_DURATION_SECONDS, else a UsageError naming FLAG."""
    if not seconds <= MAX_DURATION_SECONDS:
        raise errors.UsageError(
            f"{flag}={seconds:,.0f}s is out of range; accepted: a duration of at most 7d"
        )
    return seconds


def available_memory() -> int | None:
    """Bytes the kernel says a new allocation can have (MemAvailable), or None where unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_memory(estimate: float, what: str, fix: str) -> None:
    """Refuses WHAT when its ESTIMATE (bytes, known before allocation) exceeds available memory."""
    free = available_memory()
    if free is not None and estimate > free:
        raise errors.UsageError(
            f"{what} would take about {estimate / 2**30:,.1f} GiB; this host has "
            f"{free / 2**30:,.1f} GiB available; refused before allocating ({fix})"
        )
