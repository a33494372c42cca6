"""The report's tables: text cells for people, raw numbers for CSV.

Each builder returns a `Table` holding both forms of the same numbers (from
compare.py); render.py turns a Table into Markdown, CSV or terminal text.
"""

from __future__ import annotations

import dataclasses

from tpubench.core import durations, money
from tpubench.core.basis import Basis
from tpubench.cost import epoch
from tpubench.report import compare, load, render, stats
from tpubench.report import group as group_lib


@dataclasses.dataclass
class Table:
    name: str  # file stem: summary -> summary.csv
    title: str
    columns: list[str]
    rows: list[list[str]]
    csv_columns: list[str]
    csv_rows: list[list]
    notes: list[str] = dataclasses.field(default_factory=list)
    brief: tuple[str, ...] = ()  # the columns a terminal shows (default: all)
    lesser: tuple[str, ...] | None = None  # dropped first to fit, last first (None: render's)
    kept: tuple[str, ...] = ()  # never dropped to fit: the column that answers the question
    elsewhere: str = "the Markdown, HTML and CSV files"  # where dropped columns can be read
    left: tuple[str, ...] = ()  # text columns aligned left like the first (figures: right)


def median(iv: stats.Interval | None):
    """An interval's median (None for none): the figure a cell shows."""
    return None if iv is None else iv.median


def interval_csv(iv: stats.Interval | None) -> list:
    """An interval's CSV cells: median, low, high (three blanks for none)."""
    if iv is None:
        return [None, None, None]
    return [iv.median, iv.low, iv.high]


def summary(summaries: list[compare.Summary], pricing: Basis = Basis.ON_DEMAND) -> Table:
    columns = [
        "configuration",
        "trials",
        "examples/sec",
        "interval",
        "step p50 (ms)",
        "time/epoch",
        "$/hour",
        "$/epoch",
        "$/epoch interval",
        "accuracy",
        "to target (s)",
        "$ to target",
        "TF",
        "prices as of",
        "input",
    ]
    dims = [d for d in ("model", "machine", "dataset", "batch", "precision", "threads", "replicas")]
    csv_columns = [
        "kind",
        "configuration",
        *dims,
        "trials",
        "examples_per_sec_median",
        "examples_per_sec_low",
        "examples_per_sec_high",
        "interval_confidence",
        "step_ms_p50_median",
        "seconds_per_epoch_median",
        "usd_per_hour_median",
        "examples_per_sec_per_chip_median",
        "usd_per_chip_hour_median",
        "usd_per_epoch_median",
        "usd_per_epoch_low",
        "usd_per_epoch_high",
        "usd_per_million_examples_median",
        "accuracy_median",
        "seconds_to_target_median",
        "usd_to_target_median",
        "target_reached",
        "pricing",
        "tf_versions",
        "price_dates",
        "input_verdicts",
        "run_ids",
    ]
    rows, csv_rows = [], []
    marked = _batch_varies(summaries)
    for s in summaries:
        g = s.group
        mark = " *" if g.model in marked else ""
        target = (
            f"{render.num(median(s.target_seconds))} ({s.target_reached}){mark}"
            if s.target_reached
            else "n/a"
        )
        usd_target = f"{render.money(median(s.usd_to_target))}{mark}" if s.usd_to_target else "n/a"
        rows.append(
            [
                s.label,
                str(s.rate.n),
                render.num(s.rate.median),
                render.span(s.rate),
                render.num(median(s.step_ms), 2),
                durations.short(median(s.epoch_seconds)),
                render.money(median(s.usd_per_hour)),
                render.money(median(s.usd_per_epoch)),
                render.span(s.usd_per_epoch, render.money),
                render.fixed(median(s.accuracy), 4),
                target,
                usd_target,
                ", ".join(s.tf_versions),
                ", ".join(s.price_dates) or "n/a",
                ", ".join(s.input_verdicts)
                or ("synthetic data" if g.dims["dataset"] == "synthetic" else "not measured"),
            ]
        )
        csv_rows.append(
            [
                "measured",
                s.label,
                *(g.dims[d] for d in dims),
                s.rate.n,
                *interval_csv(s.rate),
                round(s.rate.confidence, 4),
                median(s.step_ms),
                median(s.epoch_seconds),
                median(s.usd_per_hour),
                median(s.rate_per_chip),
                median(s.usd_per_chip_hour),
                *interval_csv(s.usd_per_epoch),
                median(s.usd_per_million),
                median(s.accuracy),
                median(s.target_seconds),
                median(s.usd_to_target),
                s.target_reached,
                s.pricing,
                " ".join(s.tf_versions),
                " ".join(s.price_dates),
                " ".join(s.input_verdicts),
                " ".join(r.run_id for r in g.runs),
            ]
        )
    notes = [
        "Figures are medians over trials; the interval is the distribution-free "
        "(order-statistic) interval of the median at the confidence shown; fewer than 6 "
        "trials give only the range, at its real confidence.",
        "time per epoch in s, min, h or d; input: whether the input pipeline kept up "
        "(from runs with --compare_synthetic; 'not measured' when none compared).",
    ]
    if any(s.target_reached and s.group.model in marked for s in summaries):
        notes.append(CONVERGENCE_NOTE)
    notes += epoch_notes(summaries)
    chips = any(s.rate_per_chip for s in summaries)
    if chips:  # accelerator machines: per GPU or TPU chip beside per machine
        at = columns.index("$/hour") + 1
        columns[at:at] = ["ex/s per chip", "$/chip-hour"]
        for s, row in zip(summaries, rows, strict=True):
            row[at:at] = [
                render.num(median(s.rate_per_chip)),
                render.money(median(s.usd_per_chip_hour)),
            ]
        notes.append(CHIP_NOTE)
    brief = (
        "configuration",
        "trials",
        "examples/sec",
        "interval",
        "time/epoch",
        "$/hour",
        *(("ex/s per chip", "$/chip-hour") if chips else ()),
        "$/epoch",
        "accuracy",
        "to target (s)",
        "$ to target",
    )
    return Table(
        "summary",
        f"Throughput and cost per configuration, $ on {money.prices_on(pricing)}",
        columns,
        rows,
        csv_columns,
        csv_rows,
        notes,
        brief,
        # dropped to fit last-first: the per-chip rate outlasts $/hour, $/chip-hour does not
        lesser=(*render.LESSER[:1], "ex/s per chip", "$/hour", "$/chip-hour", *render.LESSER[2:])
        if chips
        else None,
    )


def epoch_notes(summaries: list[compare.Summary]) -> list[str]:
    """Per model, the epoch its time/epoch and $/epoch count (or that they differ)."""
    out = []
    for model in dict.fromkeys(s.group.model for s in summaries):
        line = epoch.note(
            [
                (s.group.label, r.examples_per_epoch, r.dims["dataset"])
                for s in summaries
                if s.group.model == model
                for r in s.group.runs
            ]
        )
        out += [f"{model}: {line}"] if line else []
    return out


CHIP_NOTE = (
    "per chip: a machine's examples/sec and $/hour over its GPUs or TPU chips (the price "
    "catalog's count: a tpu-v2-8 is 4 chips, a tpu-v5e-8 8); n/a on CPU-only machines."
)
CONVERGENCE_NOTE = (
    "* batch size differs among this model's configurations: time and $ to the target "
    "accuracy include convergence, which can change with the batch (a larger batch may need "
    "more epochs or another learning rate); examples/sec and $/epoch do not include it."
)


def _batch_varies(summaries: list[compare.Summary]) -> set[str]:
    """The models whose configurations differ in batch size."""
    models = {s.group.model for s in summaries}
    return {
        m
        for m in models
        if group_lib.batch_differs([s.group for s in summaries if s.group.model == m])
    }


def excluded(items: list[load.Excluded]) -> Table:
    columns = ["record", "model", "status", "reason"]
    rows = [[x.run_id or x.path, x.model or "?", x.status, x.reason] for x in items]
    csv_rows = [[x.path, x.run_id, x.model, x.status, x.reason] for x in items]
    return Table(
        "excluded",
        "Records that are not results",
        columns,
        rows,
        ["path", "run_id", "model", "status", "reason"],
        csv_rows,
    )
