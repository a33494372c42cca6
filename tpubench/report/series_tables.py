"""The report's tables of series: scaling curves, Pareto fronts and published figures.

Builders like those of tables.py (which re-exports them), one per series kind.
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
