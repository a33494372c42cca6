"""Terminal rendering of an infer sweep's records (no TensorFlow).

The records are read through their typed view (storage/record_view.py).
"""

from __future__ import annotations

import io

from rich.table import Table

from tpubench.cli import console_format as fmt
from tpubench.core import money
from tpubench.cost import measured_on
from tpubench.storage.record_view import RunRecord


def infer_summary(recs: list) -> str:
    """One table with a row per batch size, and a cost table, for an infer sweep's records."""
    recs = [fmt.typed(r) for r in recs]
    out = io.StringIO()
    console = fmt.console(out)
    # The title names a checkpoint path: folded at spaces only, the path whole for copying.
    fmt.say(console, _sweep_title(recs[0]))
    console.print(_sweep_table(recs))
    _notes(console, recs)
    _cost(console, recs)
    for rec in recs:
        console.print(f"record: {rec.record_path}", soft_wrap=True)
    return out.getvalue().rstrip()


def _sweep_title(first: RunRecord) -> str:
    p, w = first.placement, first.weights
    weights = (
        f"weights from {w.path} (step {w.step})"
        if w.source == "checkpoint"
        else f"random initial weights (seed {w.seed})"
    )
    return (
        f"{first.model.name} inference on {first.data.name} — "
        f"{p.accelerator} / {p.strategy_text}, {p.num_replicas} replica(s), "
        f"{fmt.compute_mode(first)}; {weights}"
    )


def _sweep_table(recs: list[RunRecord]) -> Table:
    # One replica: its rate is the rate, and the column would only push the table past 100.
    replicas = any((rec.placement.num_replicas or 1) > 1 for rec in recs)
    t = Table()
    for col in (
        "batch",
        "predictions/sec",
        *(["per replica"] if replicas else []),
        "latency p50 / p90 / p99 ms",
        "first batch",
        "timed batches",
        "MFU",
    ):
        # The latencies are read as one triple: never folded between p90 and p99.
        t.add_column(col, justify="right", no_wrap=col.startswith("latency"))
    for rec in recs:
        r, mfu = rec.results, rec.mfu.mfu
        t.add_row(
            f"{rec.global_batch_size:,}",
            fmt.num(r.examples_per_sec),
            *([fmt.num(r.examples_per_sec_per_replica)] if replicas else []),
            " / ".join(fmt.latency_ms(x) for x in (r.latency_p50, r.latency_p90, r.latency_p99)),
            f"{fmt.num(r.first_batch_seconds, '{:,.3f}')} s",
            f"{r.timed_batches} in {fmt.num(r.timed_seconds, '{:,.2f}')} s",
            f"{100 * mfu:.2f}%" if mfu is not None else "n/a",
        )
    return t


def _notes(console, recs: list[RunRecord]) -> None:
    """Time to the first prediction, fitting, FLOPs and MFU notes, the eval pass."""
    first = recs[0]
    s = first.startup
    fmt.say(
        console,
        f"time to first prediction: {fmt.num(s.time_to_first_prediction, '{:,.2f}')} s from "
        f"process start (model built and weights loaded in "
        f"{fmt.num(s.model_ready_seconds, '{:,.2f}')} s; first batch of "
        f"{s.batch_size} traced and run in "
        f"{fmt.num(first.results.first_batch_seconds, '{:,.2f}')} s)",
    )
    if first.model.fitted_to_data:
        fmt.say(console, f"fitted to the data: {fmt.fitted_changes(first.model.fitted_to_data)}")
    m = first.mfu
    if m.forward_flops_per_example:
        fmt.say(
            console,
            f"FLOPs/example (forward): {fmt.si(m.forward_flops_per_example, 'FLOP')}; "
            f"{fmt.parameters(m)}; MFU against "
            f"{fmt.si(m.peak_flops, 'FLOP/s')} ({m.peak_source})",
        )
    for note in sorted({rec.mfu.mfu_note for rec in recs} - {None}):
        fmt.say(console, f"MFU {note}")
    ev = first.results.eval
    if ev:
        fmt.say(
            console,
            f"eval accuracy of these weights: {fmt.num(ev.accuracy, '{:.4f}')} on "
            f"{ev.examples} examples of the {ev.split} split (untimed pass)",
        )


def _cost(console, recs: list[RunRecord]) -> None:
    """$ per million predictions for each priced machine at each batch size."""
    cost = recs[0].cost
    if not cost.machines:
        if cost.note:
            fmt.say(console, f"cost: {cost.note}")
        return
    basis = money.record_basis(cost)
    shown = [i for i, m in enumerate(cost.machines) if money.is_on_basis(m, basis)]
    headers = ["$/hour"] + [f"batch {rec.global_batch_size:,}" for rec in recs]
    rows = [
        (
            measured_on.marked(cost.machines[i].machine, bool(cost.machines[i].raw.get("what_if"))),
            [cost.machines[i].usd_per_hour]
            + [rec.cost.machines[i].usd_per_million_predictions for rec in recs],
        )
        for i in shown
    ]
    title = "$ per million predictions at the measured rate, on {prices}"
    c, dropped = fmt.cost_table(
        title + (f"; {cost.note}" if cost.note else ""), basis, headers, rows
    )
    console.print(c)
    if dropped:
        fmt.say(console, dropped)
    if any(cost.machines[i].raw.get("what_if") for i in shown):
        fmt.say(console, measured_on.FOOTNOTE)
    fmt.print_price_rows(console, fmt.price_rows([cost.machines[i] for i in shown]))
