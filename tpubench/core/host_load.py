"""Whether a run's host was busy: what other processes used of its cores while it ran.

A run's `host_cpu` (hardware/hostcpu.Sampler: the whole host's CPU use and
this process's, in percent of all cores) says how much the others took.
More than BUSY_PERCENT of the cores is a busy host: the figure is lower
than the machine gives quiet, and the answers built on it (a serving fleet,
a tune's ranking) say so or refuse it.  Pure Python: records and reports
use it without TensorFlow.
"""

from __future__ import annotations

BUSY_PERCENT = 25.0


def _get(host_cpu, key: str):
    value = host_cpu.get(key) if isinstance(host_cpu, dict) else getattr(host_cpu, key, None)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def others_percent(host_cpu) -> float | None:
    """Percent of all cores that other processes used (None: not recorded)."""
    if host_cpu is None:
        return None
    system, mine = _get(host_cpu, "system_percent_mean"), _get(host_cpu, "process_percent_mean")
    if system is None or mine is None:
        return None
    return max(0.0, system - mine)


def busy(host_cpu) -> str:
    """'other processes used 62% of the 2 cores' when they took more than BUSY_PERCENT; ''."""
    others = others_percent(host_cpu)
    if others is None or others <= BUSY_PERCENT:
        return ""
    cores = _get(host_cpu, "cores")
    return (
        f"other processes used {others:.0f}% of the {cores:.0f} cores"
        if cores
        else (f"other processes used {others:.0f}% of the cores")
    )
