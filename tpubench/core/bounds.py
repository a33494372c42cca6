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
    # One replica's batch: also refused where its global batch (x replicas) passes
    # batch_size's cap (check_global_batch, once the replicas are known).
    "per_replica_batch_size": (1, 1 << 20, "examples per replica"),
    "batch_sizes": (1, 1 << 20, "examples per step"),  # tune's list: each item
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
    # A duration (cli/values.parse_every: 1s to 7d); a bare number is seconds, 0 turns it off.
    "checkpoint_every": (0, MAX_DURATION_SECONDS, "seconds between checkpoints; 0: off"),
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
    "seed": (0, 2**31 - 1, "a random seed"),
    "num_cpu_devices": (1, 256, "logical CPU devices"),
    "target_accuracy": (0, 1, "a fraction"),
    "num_shards": (1, 10**5, "shards per split"),
    "validation_fraction": (0, 0.9, "a fraction"),
    "equivalence_margin": (0.1, 50, "percent"),
    "latency_percentile": (50, 99.99, "percent"),
    "max_cells": (1, 10**7, "cells"),
    "max_repeats": (1, 1000, "rounds"),
    "serving_min_queries": (1, 10**7, "queries"),
    # Numbers of study files (study/spec/file_rules.py) and sweep files (launch/sweep/grid.py).
    "batch_per_device": (1, 1 << 20, "examples per device"),
    "devices": (1, 4096, "devices"),
    "vcpus": (1, 4096, "vCPUs"),
    "threads": (1, 4096, "threads"),
    "jpeg_examples": (8, 10**7, "examples"),
    "seconds": (1, MAX_DURATION_SECONDS, "seconds"),
    # tpubench-launch's numbers (launch/cli.py checks its parsed arguments here), and a
    # sweep's workers and ps.
    "workers": (1, 1024, "worker tasks"),
    "ps": (0, 1024, "parameter servers"),
    "gpus": (0, 16, "GPUs per task"),
    "gpus_per_worker": (0, 16, "GPUs per worker"),
    "cpus": (1, 1024, "whole cores per pod"),
    "memory": (1, 65536, "GiB per pod"),
    "timeout": (1, MAX_DURATION_SECONDS, "seconds"),
    "grace": (0.1, 3600, "seconds"),
    "poll": (0.1, 3600, "seconds"),
    "ttl": (1, MAX_DURATION_SECONDS, "seconds"),
    "max_restarts": (0, 1000, "restarts"),
    "max_cost": (0, 1e9, "USD"),
    "max_configs": (1, 10**7, "configurations"),
}


def _shown(value) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else f"{value:g}"


def check_flag(name: str, value, spelled: str | None = None) -> None:
    """UsageError when NAME (a flag with a range) holds a VALUE outside it; lists: each item.

    SPELLED: the flag as the user wrote it (default --NAME; the launcher's --max-cost)."""
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
                f"{spelled or '--' + name}={item} is out of range; accepted: {_shown(low)} to "
                f"{_shown(high)} "
                f"({what})"
            )


def check_global_batch(per_replica: int, replicas: int) -> None:
    """Refuses a --per_replica_batch_size whose global batch passes --batch_size's cap."""
    high = FLAGS["batch_size"][1]
    if per_replica * replicas > high:
        raise errors.UsageError(
            f"--per_replica_batch_size={per_replica:,} on {replicas:,} replicas is a global "
            f"batch of {per_replica * replicas:,}; accepted: 1 to {high // replicas:,} per "
            f"replica here (a global batch of at most {high:,} examples, --batch_size's cap)"
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
