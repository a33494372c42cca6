"""Scaling: throughput against a count (devices, workers, threads), beside the ideal line.

A series holds one model's configurations that differ only in the count and
what follows it; each point's efficiency is its rate over the smallest
count's rate scaled linearly, with an interval from both rates' intervals.
The numbers come from compare.py's summaries; series_tables.py and
series_plots.py show them.
"""

from __future__ import annotations

import dataclasses

from tpubench.report import compare

# Count dimensions a scaling chart can run along, in order of preference.
DIMS = (("replicas", "devices (replicas)"), ("workers", "workers"), ("threads", "threads"))


@dataclasses.dataclass
class ScalingPoint:
    count: int
    summary: compare.Summary
    ideal: float  # examples/sec if the smallest count's rate scaled linearly
    speedup: float
    efficiency: float  # percent of ideal
    # The efficiency's interval from both rates' intervals (slow end over fast base and the
    # reverse); None when either rate is one trial: then no interval, nothing significant.
    efficiency_low: float | None = None
    efficiency_high: float | None = None

    @property
    def significant(self) -> bool:
        """The interval leaves out 100%: the distance from ideal is more than noise."""
        lo, hi = self.efficiency_low, self.efficiency_high
        return lo is not None and hi is not None and not lo <= 100.0 <= hi


@dataclasses.dataclass
class ScalingSeries:
    name: str
    dim: str
    axis_label: str
    points: list[ScalingPoint]


def scaling(summaries: list[compare.Summary]) -> list[ScalingSeries]:
    """Per model, throughput against the first count dimension that varies.

    A series holds configurations equal in everything but the count and what
    follows it (a vCPU sweep prices each thread count as its own machine;
    one device runs one_device and several mirrored).  The ideal is the
    smallest count's median rate times count / that count.
    """
    out = []
    for model in dict.fromkeys(s.group.model for s in summaries):
        mine = [s for s in summaries if s.group.model == model]
        for dim, axis in DIMS:
            if len({_count(s, dim) for s in mine}) < 2:
                continue
            loose = {dim, *_FOLLOWERS}
            for part in compare.partition(mine, loose).values():
                drop = {dim} | {d for d in _FOLLOWERS if _follows(part, dim, d)}
                out += _series(compare.partition(part, drop).values(), dim, axis)
            break
    return out


def _series(candidates, dim: str, axis: str) -> list[ScalingSeries]:
    out = []
    for members in candidates:
        if len({_count(s, dim) for s in members}) < 2:
            continue
        members = sorted(members, key=lambda s: _count(s, dim))
        c0, base = _count(members[0], dim), members[0].rate
        r0 = base.median
        points = []
        for s in members:
            scale = _count(s, dim) / c0
            ideal, low, high = r0 * scale, None, None
            if s is not members[0] and s.rate.has_interval and base.has_interval:
                low = 100.0 * s.rate.low / (base.high * scale)
                high = 100.0 * s.rate.high / (base.low * scale)
            eff = 100.0 * s.rate.median / ideal
            points.append(
                ScalingPoint(_count(s, dim), s, ideal, s.rate.median / r0, eff, low, high)
            )
        out.append(ScalingSeries(compare.series_name(members, dim), dim, axis, points))
    return out


def _count(s: compare.Summary, dim: str) -> int:
    value = s.group.dims[dim]
    if dim == "threads" and not value:  # 0: TensorFlow's default, every core of the host
        return s.group.runs[0].host_cores or 1
    return int(value)


# Dimensions that may change together with a count: a vCPU sweep prices each
# thread count as its own machine, one device runs one_device and several
# mirrored, and the global batch grows with replicas.
_FOLLOWERS = (
    "machine",
    "threads",
    "inter_threads",
    "replicas",
    "workers",
    "strategy",
    "all_reduce",
    "batch",
    "per_replica_batch",
)


def _follows(mine: list[compare.Summary], dim: str, other: str) -> bool:
    """True when each count of DIM comes with a single value of OTHER."""
    values: dict[int, set] = {}
    for s in mine:
        values.setdefault(_count(s, dim), set()).add(repr(s.group.dims[other]))
    return all(len(v) == 1 for v in values.values())
