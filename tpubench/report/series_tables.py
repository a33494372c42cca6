"""The report's tables of series: scaling curves, batch sizes, Pareto fronts, published figures.

Builders like those of tables.py, one per series kind.
"""

from __future__ import annotations

from tpubench.core import durations
from tpubench.report import compare, published, render, scaling_curves, tables


def scaling(series: list[scaling_curves.ScalingSeries]) -> tables.Table:
    columns = ["series", "count", "examples/sec", "interval", "ideal", "speedup", "efficiency"]
    rows, csv_rows = [], []
    for s in series:
        for p in s.points:
            rows.append(
                [
                    s.name,
                    f"{s.dim}={p.count}",
                    render.num(p.summary.rate.median),
                    render.span(p.summary.rate),
                    render.num(p.ideal),
                    f"{p.speedup:.2f}×",
                    efficiency_text(p, s.points[0]),
                ]
            )
            csv_rows.append(
                [
                    s.name,
                    s.dim,
                    p.count,
                    *tables.interval_csv(p.summary.rate),
                    p.ideal,
                    p.speedup,
                    p.efficiency,
                    p.efficiency_low,
                    p.efficiency_high,
                    p is not s.points[0] and p.significant,
                ]
            )
    csv_columns = [
        "series",
        "dimension",
        "count",
        "examples_per_sec_median",
        "examples_per_sec_low",
        "examples_per_sec_high",
        "ideal",
        "speedup",
        "efficiency_percent",
        "efficiency_low_percent",
        "efficiency_high_percent",
        "efficiency_significant",
    ]
    notes = [
        "Ideal: the smallest count's median rate, scaled linearly; efficiency = rate / ideal.",
        "Efficiency interval: from both rates' intervals; 'not significant' when it holds "
        "100% or a rate is one trial (repeat the runs, on a quiet host, to tell).",
    ]
    return tables.Table(
        "scaling", "Scaling against the ideal line", columns, rows, csv_columns, csv_rows, notes
    )


def efficiency_text(p: scaling_curves.ScalingPoint, base: scaling_curves.ScalingPoint) -> str:
    """'87.5% (80–93%)', '203.0% (95–310%: not significant)' or '203.0% (1 trial: not
    significant)'; the base point is 100% by definition."""
    text = f"{p.efficiency:.1f}%"
    if p is base:
        return text
    if p.efficiency_low is None or p.efficiency_high is None:
        return f"{text} (1 trial: not significant)"
    span = f"{p.efficiency_low:.0f}–{p.efficiency_high:.0f}%"
    return f"{text} ({span})" if p.significant else f"{text} ({span}: not significant)"


def pareto(front: dict[str, list[compare.ParetoPoint]]) -> tables.Table:
    columns = ["model", "configuration", "time/epoch", "$/epoch", "Pareto front"]
    rows, csv_rows = [], []
    for model, points in front.items():
        for p in points:
            rows.append(
                [
                    model,
                    p.summary.label,
                    durations.short(p.seconds),
                    render.money(p.usd),
                    "yes" if p.on_front else "no",
                ]
            )
            csv_rows.append([model, p.summary.label, p.seconds, p.usd, p.on_front])
    csv_columns = ["model", "configuration", "seconds_per_epoch", "usd_per_epoch", "on_front"]
    notes = [
        "On the front: no other configuration of the model is both faster and cheaper per epoch."
    ]
    notes += tables.epoch_notes([p.summary for points in front.values() for p in points])
    return tables.Table(
        "pareto",
        "Cost per epoch against time per epoch",
        columns,
        rows,
        csv_columns,
        csv_rows,
        notes,
    )


def published_table(figures: list[published.Figure]) -> tables.Table:
    columns = [
        "source",
        "model",
        "hardware",
        "devices",
        "batch/device",
        "data",
        "examples/sec",
        "chips",
        "ex/s per chip",
        "note",
    ]
    rows = [
        [
            f.source,
            f.model,
            f.hardware,
            str(f.devices),
            str(f.batch_per_device),
            f.data,
            render.num(f.examples_per_sec),
            str(f.chips),
            render.num(f.examples_per_sec_per_chip),
            f.note,
        ]
        for f in figures
    ]
    csv_columns = [
        "kind",
        "set",
        "source",
        "model",
        "hardware",
        "devices",
        "batch_per_device",
        "data",
        "examples_per_sec",
        "chips",
        "examples_per_sec_per_chip",
        "note",
    ]
    csv_rows = [
        [
            "published",
            f.set,
            f.source,
            f.model,
            f.hardware,
            f.devices,
            f.batch_per_device,
            f.data,
            f.examples_per_sec,
            f.chips,
            f.examples_per_sec_per_chip,
            f.note,
        ]
        for f in figures
    ]
    notes = [
        "Published by the studies on their hardware and software (not measured here); shown "
        "for orientation, never part of a median, a baseline or advice."
    ]
    return tables.Table(
        "published",
        "Published figures (not measured by this report)",
        columns,
        rows,
        csv_columns,
        csv_rows,
        notes,
        lesser=("data", "batch/device", "note"),  # a narrow terminal keeps examples/sec
    )


def batches(series: list[compare.BatchSeries]) -> tables.Table:
    """Throughput, cost and convergence of each series over its batch sizes."""
    columns = [
        "series",
        "global batch",
        "examples/sec",
        "interval",
        "$/M examples",
        "to target (s)",
        "$ to target",
        "accuracy",
        "step p50 (ms)",
    ]
    rows, csv_rows = [], []
    for b in series:
        for batch, s in zip(b.batches, b.points, strict=True):
            target = (
                f"{render.num(tables.median(s.target_seconds))} ({s.target_reached}) *"
                if s.target_reached
                else "n/a"
            )
            rows.append(
                [
                    b.name,
                    str(batch),
                    render.num(s.rate.median),
                    render.span(s.rate),
                    render.money(tables.median(s.usd_per_million)),
                    target,
                    f"{render.money(tables.median(s.usd_to_target))} *"
                    if s.usd_to_target
                    else "n/a",
                    render.fixed(tables.median(s.accuracy), 4),
                    render.num(tables.median(s.step_ms), 2),
                ]
            )
            csv_rows.append(
                [
                    b.name,
                    batch,
                    *tables.interval_csv(s.rate),
                    tables.median(s.step_ms),
                    tables.median(s.usd_per_million),
                    tables.median(s.accuracy),
                    tables.median(s.target_seconds),
                    tables.median(s.usd_to_target),
                    s.target_reached,
                ]
            )
    csv_columns = [
        "series",
        "batch",
        "examples_per_sec_median",
        "examples_per_sec_low",
        "examples_per_sec_high",
        "step_ms_p50_median",
        "usd_per_million_examples_median",
        "accuracy_median",
        "seconds_to_target_median",
        "usd_to_target_median",
        "target_reached",
    ]
    notes = ["$/M examples: dollars per million training examples at the measured rate."]
    if any(s.target_reached for b in series for s in b.points):
        notes.append(tables.CONVERGENCE_NOTE)
    return tables.Table(
        "batch",
        "Throughput and cost over batch size",
        columns,
        rows,
        csv_columns,
        csv_rows,
        notes,
        lesser=("accuracy", "step p50 (ms)"),
    )
