"""Throughput from loop timings.  Pure Python: no TensorFlow.

The controller records one `LoopTime` per host call (steps_per_loop steps,
timed after forcing completion).  Warm-up loops (tracing, XLA/TPU compile)
never enter throughput; pauses for eval and checkpoints are timed apart.
"""

from __future__ import annotations

import dataclasses
import math
import statistics


@dataclasses.dataclass(frozen=True)
class LoopTime:
    steps: int
    seconds: float
    examples: int
    profiled: bool = False  # ran under the profiler: slow, never in throughput


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100), numpy's default method."""
    if not values:
        return math.nan
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def steady_state_start(step_times: list[float], tolerance: float = 0.20) -> int:
    """Index of the first loop from which the rate has settled.

    The loops are cut into chunks of max(2, n // 10); the run has settled
    from the first chunk whose median lies within TOLERANCE of the median of
    the run's second half.  Warm-up transients (autotuning, caches, page
    faults) come first and are large; chunk medians keep single noisy loops
    from deciding.  Returns 0 for runs too short to tell (fewer than 4 loops).
    """
    n = len(step_times)
    if n < 4:
        return 0
    reference = statistics.median(step_times[n // 2 :])
    size = max(2, n // 10)
    for start in range(0, n, size):
        chunk = step_times[start : start + size]
        if abs(statistics.median(chunk) - reference) <= tolerance * reference:
            return start
    return 0


def summarize(loops: list[LoopTime], warmup_loops: int, num_replicas: int) -> dict:
    """Throughput and step-time figures from the loops after warm-up.

    Loops that ran under the profiler are left out (they are slow).
    Returns a dict with examples_per_sec (global), examples_per_sec_per_replica,
    step_time_p50/p90/p99 (seconds, each loop's mean step time) over
    step_time_samples loops, steady-state
    loop index, compile/time-to-first-loop, measured steps and seconds.
    """
    first = loops[:warmup_loops]
    kept = [i for i in range(len(first), len(loops)) if not loops[i].profiled]
    measured = [loops[i] for i in kept]
    out: dict = {
        "warmup_loops": len(first),
        "warmup_seconds": sum(lt.seconds for lt in first),
        "time_to_first_loop": first[0].seconds if first else None,
    }
    if not measured:
        out.update(
            examples_per_sec=None,
            examples_per_sec_per_replica=None,
            measured_steps=0,
            measured_seconds=0.0,
            note="only warm-up loops ran; raise --train_steps for a throughput figure",
        )
        return out
    per_step = [lt.seconds / lt.steps for lt in measured]
    settle = steady_state_start(per_step)
    steady = measured[settle:]
    seconds = sum(lt.seconds for lt in steady)
    examples = sum(lt.examples for lt in steady)
    rate = examples / seconds if seconds > 0 else None
    steady_step = statistics.median(per_step[settle:])
    out.update(
        examples_per_sec=rate,
        examples_per_sec_per_replica=rate / num_replicas if rate else None,
        step_time_p50=percentile(per_step[settle:], 50),
        step_time_p90=percentile(per_step[settle:], 90),
        step_time_p99=percentile(per_step[settle:], 99),
        step_time_mean=seconds / sum(lt.steps for lt in steady),
        step_time_samples=len(steady),
        steady_state_after_loops=kept[settle],
        measured_steps=sum(lt.steps for lt in steady),
        measured_seconds=seconds,
        compile_seconds=max(0.0, sum(lt.seconds - lt.steps * steady_step for lt in first)),
    )
    return out


def latency_summary(latencies: list[float], examples_per_batch: int, wall_seconds: float) -> dict:
    """Inference figures from individually timed batches (seconds each).

    Throughput is examples over the wall time of the whole timed section
    (host work between batches included), not over the sum of latencies.
    Percentiles are over every timed batch; `steady_state_after_batches`
    says how many of them came before the latency settled (0: all steady).
    """
    if not latencies:
        return {"examples_per_sec": None, "timed_batches": 0, "timed_seconds": wall_seconds}
    examples = examples_per_batch * len(latencies)
    return {
        "examples_per_sec": examples / wall_seconds if wall_seconds > 0 else None,
        "latency_p50": percentile(latencies, 50),
        "latency_p90": percentile(latencies, 90),
        "latency_p99": percentile(latencies, 99),
        "latency_mean": statistics.fmean(latencies),
        "latency_min": min(latencies),
        "latency_max": max(latencies),
        "steady_state_after_batches": steady_state_start(latencies),
        "timed_batches": len(latencies),
        "timed_examples": examples,
        "timed_seconds": wall_seconds,
    }
