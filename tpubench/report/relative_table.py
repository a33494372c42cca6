"""The report's table of ratios: each group against the baseline, with its interval."""

from __future__ import annotations

from tpubench.report import compare, render
from tpubench.report.tables import Table


def relative(rel: list[compare.Relative]) -> Table:
    columns = ["configuration", "baseline", "time ×", "time interval", "cost ×", "cost interval"]
    rows, csv_rows = [], []
    for r in rel:
        cost_iv = (
            f"{render.ratio(r.cost_low)}–{render.ratio(r.cost_high)}"
            if r.cost is not None
            else "n/a"
        )
        rows.append(
            [
                r.summary.label,
                r.baseline.label,
                render.ratio(r.time),
                f"{render.ratio(r.time_low)}–{render.ratio(r.time_high)}",
                render.ratio(r.cost),
                cost_iv,
            ]
        )
        csv_rows.append(
            [
                r.summary.label,
                r.baseline.label,
                r.time,
                r.time_low,
                r.time_high,
                r.cost,
                r.cost_low,
                r.cost_high,
            ]
        )
    csv_columns = [
        "configuration",
        "baseline",
        "time_ratio",
        "time_ratio_low",
        "time_ratio_high",
        "cost_ratio",
        "cost_ratio_low",
        "cost_ratio_high",
    ]
    notes = [
        "Time is seconds per example and cost $ per example, each over the baseline's median "
        "(below 1 is better); intervals are the configuration's own interval over that median."
    ]
    return Table(
        "relative",
        "Training time and cost relative to the baseline",
        columns,
        rows,
        csv_columns,
        csv_rows,
        notes,
        lesser=("baseline",),  # a narrow terminal keeps the ratios, not the labels
    )
