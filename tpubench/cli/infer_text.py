"""Terminal rendering of an infer sweep's records (no TensorFlow)."""

from __future__ import annotations

import io

from rich.table import Table

from tpubench.cli import console_format as fmt


def infer_summary(recs: list[dict]) -> str:
    """One table with a row per batch size, and a cost table, for an infer sweep's records."""
    first = recs[0]
    p = first.get("placement", {})
    w = first.get("weights", {})
    out = io.StringIO()
    console = fmt.console(out)
    weights = (
        f"weights from {w.get('path')} (step {w.get('step')})"
        if w.get("source") == "checkpoint"
        else f"random initial weights (seed {w.get('seed')})"
    )
    title = (
        f"{first['model']['name']} inference on {first.get('data', {}).get('name')} — "
        f"{p.get('accelerator')} / {p.get('strategy')}, {p.get('num_replicas')} replica(s), "
        f"{fmt.compute_mode(first)}; {weights}"
    )
    t = Table(title=title, title_justify="left")
    for col in (
        "batch",
        "predictions/sec",
        "per replica",
        "latency p50 / p90 / p99 ms",
        "first batch",
        "timed batches",
        "MFU",
    ):
        t.add_column(col, justify="right")
    for rec in recs:
        r = rec["results"]
        mfu = rec.get("mfu", {}).get("mfu")
        t.add_row(
            f"{rec['global_batch_size']:,}",
            fmt.num(r.get("examples_per_sec")),
            fmt.num(r.get("examples_per_sec_per_replica")),
            " / ".join(fmt.latency_ms(r.get(f"latency_p{q}")) for q in (50, 90, 99)),
            f"{fmt.num(r.get('first_batch_seconds'), '{:,.3f}')} s",
            f"{r.get('timed_batches')} in {fmt.num(r.get('timed_seconds'), '{:,.2f}')} s",
            f"{100 * mfu:.2f}%" if mfu is not None else "n/a",
        )
    console.print(t)
    s = first.get("startup", {})
    console.print(
        f"time to first prediction: {fmt.num(s.get('time_to_first_prediction'), '{:,.2f}')} s from "
        f"process start (model built and weights loaded in "
        f"{fmt.num(s.get('model_ready_seconds'), '{:,.2f}')} s; first batch of "
        f"{s.get('batch_size')} traced and run in "
        f"{fmt.num(first['results'].get('first_batch_seconds'), '{:,.2f}')} s)",
        soft_wrap=True,
    )
    fitted = first.get("model", {}).get("fitted_to_data") or {}
    if fitted:
        console.print(f"fitted to the data: {fmt.fitted_changes(fitted)}", soft_wrap=True)
    m = first.get("mfu", {})
    if m.get("forward_flops_per_example"):
        console.print(
            f"FLOPs/example (forward): {fmt.si(m['forward_flops_per_example'], 'FLOP')}; "
            f"{fmt.parameters(m)}; MFU against "
            f"{fmt.si(m.get('peak_flops'), 'FLOP/s')} ({m.get('peak_source')})",
            soft_wrap=True,
        )
    notes = {rec.get("mfu", {}).get("mfu_note") for rec in recs} - {None}
    for note in sorted(notes):
        console.print(f"MFU {note}", soft_wrap=True)
    ev = first["results"].get("eval")
    if ev:
        console.print(
            f"eval accuracy of these weights: {fmt.num(ev.get('accuracy'), '{:.4f}')} on "
            f"{ev.get('examples')} examples of the {ev.get('split')} split (untimed pass)",
            soft_wrap=True,
        )
    cost = first.get("cost") or {}
    if cost.get("machines"):
        c = Table(
            title="$ per million predictions at the measured rate"
            + (f"; {cost['note']}" if cost.get("note") else ""),
            title_justify="left",
        )
        c.add_column("machine")
        c.add_column("pricing")
        c.add_column("$/hour", justify="right")
        for rec in recs:
            c.add_column(f"batch {rec['global_batch_size']:,}", justify="right")
        used = {}
        for i, row in enumerate(cost["machines"]):
            per_batch = [
                rec["cost"]["machines"][i].get("usd_per_million_predictions") for rec in recs
            ]
            c.add_row(
                row.get("machine") or "(override)",
                row.get("pricing", ""),
                fmt.money(row["usd_per_hour"]),
                *map(fmt.money, per_batch),
            )
            for x in row.get("rows", []):
                used[(x["row_key"], x["as_of"])] = x
        console.print(c)
        for x in used.values():
            console.print(
                f"  price row {x['row_key']}: {fmt.dated(x)}, {x['status']}, {x['source']}",
                soft_wrap=True,
            )
        if used:
            console.print(f"  {fmt.price_age(used)}")
    elif cost.get("note"):
        console.print(f"cost: {cost['note']}", soft_wrap=True)
    for rec in recs:
        console.print(f"record: {rec.get('record_path')}", soft_wrap=True)
    return out.getvalue().rstrip()
