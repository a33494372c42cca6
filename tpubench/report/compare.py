"""The numbers behind every table and plot, computed once from the groups.

Each figure of a group is the median over its trials of a per-trial value,
with the order-statistic interval of stats.py.  Tables, plots, the HTML
page and the tests all read these structures, so a plotted bar is the
number in the table.
"""

from __future__ import annotations

import dataclasses

from tpubench.report import group as group_lib
from tpubench.report import stats


@dataclasses.dataclass
class Summary:
    """One configuration's figures (medians with intervals over its trials)."""

    group: group_lib.Group
    rate: stats.Interval  # examples/sec
    step_ms: stats.Interval | None
    epoch_seconds: stats.Interval | None
    usd_per_hour: stats.Interval | None
    usd_per_epoch: stats.Interval | None
    usd_per_million: stats.Interval | None
    accuracy: stats.Interval | None
    target_seconds: stats.Interval | None
    usd_to_target: stats.Interval | None
    target_reached: str  # "k/n" or "" when no target was set
    tf_versions: tuple[str, ...]
    price_dates: tuple[str, ...]
    pricing: str
    input_verdicts: tuple[str, ...]
    # Per GPU or TPU chip (accelerator machines only), so a 4-chip and an 8-chip
    # machine compare: examples/sec per chip and $ per chip-hour.
    rate_per_chip: stats.Interval | None = None
    usd_per_chip_hour: stats.Interval | None = None
    busy: int = 0  # its runs on a busy host (load.Run.busy): their rates are low

    @property
    def label(self) -> str:
        return self.group.label


def summarize(g: group_lib.Group) -> Summary:
    runs = g.runs
    targets = [r for r in runs if r.target is not None]
    return Summary(
        group=g,
        rate=stats.median_interval([r.examples_per_sec for r in runs]),
        step_ms=stats.median_interval(
            [r.step_time_p50 * 1e3 for r in runs if r.step_time_p50 is not None]
        ),
        epoch_seconds=stats.median_interval([r.seconds_per_epoch for r in runs]),
        usd_per_hour=stats.median_interval([r.usd_per_hour for r in runs]),
        usd_per_epoch=stats.median_interval([r.usd_per_epoch for r in runs]),
        usd_per_million=stats.median_interval([r.usd_per_million for r in runs]),
        accuracy=stats.median_interval([r.accuracy for r in runs]),
        target_seconds=stats.median_interval([r.target_seconds for r in targets]),
        usd_to_target=stats.median_interval(
            [
                r.target_seconds / 3600 * r.usd_per_hour
                for r in targets
                if r.target_seconds is not None and r.usd_per_hour is not None
            ]
        ),
        target_reached=(
            f"{sum(r.target_seconds is not None for r in targets)}/{len(targets)}"
            if targets
            else ""
        ),
        tf_versions=tuple(sorted({r.tf_version or "?" for r in runs})),
        price_dates=tuple(sorted({d for r in runs for d in r.price_dates})),
        pricing=", ".join(sorted({r.pricing for r in runs if r.pricing})) or "n/a",
        input_verdicts=tuple(sorted({r.input_verdict for r in runs if r.input_verdict})),
        rate_per_chip=stats.median_interval(
            [r.examples_per_sec / r.chips for r in runs if r.chips]
        ),
        usd_per_chip_hour=stats.median_interval(
            [r.usd_per_hour / r.chips for r in runs if r.chips and r.usd_per_hour is not None]
        ),
        busy=sum(bool(r.busy) for r in runs),
    )


@dataclasses.dataclass
class Relative:
    """Time and cost per example of one configuration over its model's baseline."""

    summary: Summary
    baseline: Summary
    time: float  # median seconds per example / baseline's
    time_low: float
    time_high: float
    cost: float | None  # median $ per example / baseline's
    cost_low: float | None
    cost_high: float | None


def relative(summaries: list[Summary], baselines: dict[str, group_lib.Group]) -> list[Relative]:
    """Per model, each configuration against the model's baseline group.

    Time is seconds per million examples (epoch sizes may differ between
    real and synthetic data); cost is $ per million examples.  The interval
    is the configuration's own interval over the baseline's median.
    """
    by_group = {id(s.group): s for s in summaries}
    out = []
    for s in summaries:
        base_group = baselines.get(s.group.model)
        if base_group is None:
            continue
        b = by_group[id(base_group)]
        # seconds per example is 1/rate, so the rate's high end is the time's low end
        time = b.rate.median / s.rate.median
        cost = lo = hi = None
        if s.usd_per_million and b.usd_per_million:
            m = b.usd_per_million.median
            cost, lo, hi = (
                s.usd_per_million.median / m,
                s.usd_per_million.low / m,
                s.usd_per_million.high / m,
            )
        out.append(
            Relative(
                s, b, time, b.rate.median / s.rate.high, b.rate.median / s.rate.low, cost, lo, hi
            )
        )
    return out


def default_baselines(groups: list[group_lib.Group]) -> dict[str, group_lib.Group]:
    """Each model's first configuration (fewest devices/threads in sort order)."""
    out: dict[str, group_lib.Group] = {}
    for g in groups:
        out.setdefault(g.model, g)
    return out


def partition(summaries: list[Summary], ignore: set) -> dict[tuple, list[Summary]]:
    """Summaries keyed by every dimension not in IGNORE."""
    out: dict[tuple, list[Summary]] = {}
    for s in summaries:
        key = tuple((d, s.group.dims[d]) for d in group_lib.DIMENSIONS if d not in ignore)
        out.setdefault(key, []).append(s)
    return out


def series_name(members: list[Summary], dim: str) -> str:
    """The series' name: the members' label minus the parts that change along it."""
    parts = [p.split(" · ") for p in (s.label for s in members)]
    common = [p for p in parts[0] if all(p in other for other in parts[1:])]
    return " · ".join(common) or members[0].group.model


@dataclasses.dataclass
class BatchSeries:
    """One model's configurations that differ only in batch size, by batch."""

    name: str
    batches: list[int]
    points: list[Summary]


def batches(summaries: list[Summary]) -> list[BatchSeries]:
    """Per model, throughput and cost against the global batch size.

    A series holds configurations equal in everything but the batch (and the
    per-replica batch that follows it); a series needs two batch sizes.
    """
    out = []
    for members in partition(summaries, {"batch", "per_replica_batch"}).values():
        members = sorted(members, key=lambda s: s.group.dims["batch"] or 0)
        if len({s.group.dims["batch"] for s in members}) < 2:
            continue
        out.append(
            BatchSeries(
                series_name(members, "batch"), [s.group.dims["batch"] for s in members], members
            )
        )
    return out


@dataclasses.dataclass
class ParetoPoint:
    summary: Summary
    seconds: float  # median seconds per epoch
    usd: float  # median $ per epoch
    on_front: bool


def pareto(summaries: list[Summary]) -> dict[str, list[ParetoPoint]]:
    """Per model, cost per epoch against time per epoch; the front is every
    configuration that no other beats on both (sorted by time)."""
    out: dict[str, list[ParetoPoint]] = {}
    for s in summaries:
        if s.epoch_seconds is None or s.usd_per_epoch is None:
            continue
        out.setdefault(s.group.model, []).append(
            ParetoPoint(s, s.epoch_seconds.median, s.usd_per_epoch.median, False)
        )
    for points in out.values():
        points.sort(key=lambda p: (p.seconds, p.usd))
        best = float("inf")
        for p in points:
            if p.usd < best:
                p.on_front = True
                best = p.usd
    return out
