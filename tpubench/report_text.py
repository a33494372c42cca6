"""Terminal rendering of one run record (no TensorFlow)."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table


def _num(x, fmt="{:,.1f}", none="n/a"):
    return none if x is None else fmt.format(x)


def _ms(x):
    return _num(x * 1e3 if x is not None else None, "{:,.2f}")


def _parameters(m: dict) -> str:
    """ "4,310 parameters", and why it differs from `tpubench models` when fitted to the data."""
    text = f"{m.get('parameters', 0):,} parameters"
    fitted = m.get("fitted_params")
    if fitted and m.get("parameters_unfitted") is not None:
        changes = "; ".join(f"{k} {v}" for k, v in fitted.items())
        text += f" (fitted to the data: {changes}; {m['parameters_unfitted']:,} unfitted)"
    return text


def _si(x, unit):
    if x is None:
        return "n/a"
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= scale:
            return f"{x / scale:,.2f} {prefix}{unit}"
    return f"{x:,.0f} {unit}"


def _money(x):
    from tpubench.cost import money

    return money.usd(x)


def _price_age(used: dict) -> str:
    from tpubench.cost import catalog

    return catalog.age_note(_dated(x) for x in used.values())


def _dated(line: dict) -> str:
    """A recorded price line's date: its as_of, or 'date unknown (read ...)'."""
    from tpubench.cost import catalog

    return catalog.dated(line["as_of"], line.get("date_known", True))


def _replicas(p: dict) -> str:
    """'2 worker(s)' under parameter servers (each worker steps on its own batch share, so
    the rate is split by workers); 'N replica(s)' otherwise."""
    if _ps(p):
        return f"{p['num_workers']} worker(s)"
    return f"{p.get('num_replicas')} replica(s)"


def _ps(p: dict) -> bool:
    return p.get("strategy") == "parameter_server" and bool(p.get("num_workers"))


def _samples(n) -> str:
    """'; n=1: one timed loop, so p50 = p90 = p99' -- percentiles of one sample say nothing."""
    if n is None:
        return ""
    if n == 1:
        return "; n=1: one timed loop, so all three are that loop; run more steps for a spread"
    return f"; n={n} loops"


def train_summary(record: dict) -> str:
    """A results table and a cost table for a finished train record."""
    r = record.get("results", {})
    p = record.get("placement", {})
    cfg = record.get("config", {})
    data = record.get("data", {})
    out = io.StringIO()
    console = Console(file=out, width=110, force_terminal=False, color_system=None)
    title = (
        f"{record['model']['name']} on {data.get('name')} — {p.get('accelerator')} / "
        f"{p.get('strategy')}, {_replicas(p)}, {cfg.get('precision')}, "
        f"global batch {record.get('global_batch_size')}"
    )
    t = Table(title=title, show_header=False, title_justify="left")
    t.add_column("figure", style="bold")
    t.add_column("value")
    rate = r.get("examples_per_sec")
    t.add_row(
        "examples/sec",
        f"{_num(rate)}  (per {'worker' if _ps(p) else 'replica'} "
        f"{_num(r.get('examples_per_sec_per_replica'))})"
        if rate
        else r.get("note", "n/a"),
    )
    t.add_row(
        "step time p50 / p90 / p99",
        f"{_ms(r.get('step_time_p50'))} / {_ms(r.get('step_time_p90'))} / "
        f"{_ms(r.get('step_time_p99'))} ms  (steps_per_loop {cfg.get('steps_per_loop')}"
        + _samples(r.get("step_time_samples"))
        + ")",
    )
    t.add_row(
        "time to first loop",
        f"{_num(r.get('time_to_first_loop'), '{:,.2f}')} s  "
        f"(compile ≈ {_num(r.get('compile_seconds'), '{:,.2f}')} s; startup "
        f"{_num(record.get('startup_seconds'), '{:,.2f}')} s)",
    )
    t.add_row("steady state after", f"{r.get('steady_state_after_loops', 'n/a')} loop(s)")
    t.add_row(
        "steps / wall time",
        f"{r.get('steps_run')} steps in "
        f"{_num(r.get('train_wall_seconds'), '{:,.2f}')} s "
        f"(eval/checkpoint pauses {_num(r.get('pause_seconds'), '{:,.2f}')} s)",
    )
    t.add_row("final loss", _num(r.get("final_loss_loop_mean"), "{:.4f}"))
    fitted = record.get("model", {}).get("fitted_to_data") or {}
    if fitted:
        t.add_row("fitted to the data", "; ".join(f"{k} {v}" for k, v in fitted.items()))
    ev = r.get("eval")
    if ev:
        metric = record.get("model", {}).get("target_metric", "accuracy")
        t.add_row(
            f"eval {metric}",
            f"{_num(ev.get(metric), '{:.4f}')} on {ev.get('examples')} "
            f"examples (eval loss {_num(ev.get('loss'), '{:.4f}')})",
        )
    elif r.get("eval_note"):
        t.add_row("eval", r["eval_note"])
    tgt = r.get("target")
    if tgt:
        goal = f"{tgt['metric']} {'<=' if tgt.get('mode') == 'min' else '>='} {tgt['target']}"
        t.add_row(
            "target",
            f"{goal}: reached at step {tgt['step']} after {tgt['seconds']:.2f} s"
            if tgt.get("step")
            else f"{goal}: NOT reached",
        )
    cpu = r.get("host_cpu") or {}
    if cpu.get("samples"):
        t.add_row(
            "host CPU (all cores)",
            f"{_num(cpu.get('system_percent_mean'))}% mean, "
            f"{_num(cpu.get('system_percent_p90'))}% p90 of {cpu.get('cores')} cores "
            f"(this process {_num(cpu.get('process_percent_mean'))}%)",
        )
    skipped = data.get("skipped")
    if skipped:
        files = skipped.get("damaged_files", [])
        t.add_row(
            "skipped (--skip_corrupt)",
            f"{skipped.get('examples_skipped', 0):,} examples in {len(files)} damaged file(s): "
            + ", ".join(f"{f['file'].rsplit('/', 1)[-1]} ({f['kind']})" for f in files[:3]),
        )
    diag = r.get("input_diagnosis")
    if diag:
        from tpubench import diagnosis

        real_cpu = (diag.get("host_cpu_real") or {}).get("system_percent_mean")
        syn_cpu = (diag.get("host_cpu_synthetic") or {}).get("system_percent_mean")
        ratio = diag.get("ratio")
        t.add_row(
            "real vs synthetic",
            f"{_num(diag.get('real_examples_per_sec'))} vs "
            f"{_num(diag.get('synthetic_examples_per_sec'))} ex/s = "
            f"{_num(ratio, '{:.3f}')}x; host CPU {_num(real_cpu)}% vs {_num(syn_cpu)}%",
        )
        t.add_row("input verdict", f"{diag.get('verdict')}: {diagnosis.advice(diag)}")
    m = record.get("mfu", {})
    if m.get("train_flops_per_example"):
        t.add_row(
            "FLOPs/example (train)",
            f"{_si(m['train_flops_per_example'], 'FLOP')} "
            f"(forward {_si(m.get('forward_flops_per_example'), 'FLOP')}); {_parameters(m)}",
        )
        mfu = m.get("mfu")
        t.add_row(
            "MFU",
            (f"{100 * mfu:.2f}% of {_si(m.get('peak_flops'), 'FLOP/s')} ({m.get('peak_source')})")
            if mfu is not None
            else m.get("mfu_note") or f"n/a ({m.get('peak_source', m.get('note', ''))})",
        )
        if m.get("mfu_measured_peak") is not None:
            t.add_row(
                "MFU (measured peak)",
                f"{100 * m['mfu_measured_peak']:.2f}% of "
                f"{_si(m.get('peak_flops_measured'), 'FLOP/s')} ({m.get('peak_measured_source')})",
            )
    console.print(t)
    cost = record.get("cost") or {}
    if cost.get("machines"):
        c = Table(
            title=f"cost at the measured rate — 1 epoch = {cost['examples_per_epoch']:,} "
            "examples" + (f"; {cost['note']}" if cost.get("note") else ""),
            title_justify="left",
        )
        for col in (
            "machine",
            "pricing",
            "$/hour",
            "$/epoch",
            "$/1M examples",
            "$ this run",
            "$ to target",
        ):
            c.add_column(col, justify="left" if col in ("machine", "pricing") else "right")
        used = {}
        for row in cost["machines"]:
            c.add_row(
                row.get("machine") or "(override)",
                row.get("pricing", ""),
                _money(row["usd_per_hour"]),
                _money(row.get("usd_per_epoch")),
                _money(row.get("usd_per_million_examples")),
                _money(row.get("usd_run")),
                _money(row.get("usd_to_target")),
            )
            for x in row.get("rows", []):
                used[(x["row_key"], x["as_of"])] = x
        console.print(c)
        for x in used.values():
            console.print(f"  price row {x['row_key']}: {_dated(x)}, {x['status']}, {x['source']}")
        if used:
            console.print(f"  {_price_age(used)}")
    elif cost.get("note"):
        console.print(f"cost: {cost['note']}", soft_wrap=True)
    console.print(f"record: {record.get('record_path')}   model_dir: {cfg.get('model_dir')}")
    return out.getvalue().rstrip()


def _latency_ms(x):
    """Milliseconds to about three significant digits: 0.76, 12.5, 1,771."""
    if x is None:
        return "n/a"
    ms = x * 1e3
    return f"{ms:,.2f}" if ms < 10 else f"{ms:,.1f}" if ms < 100 else f"{ms:,.0f}"


def _console(out):
    return Console(file=out, width=110, force_terminal=False, color_system=None)


def infer_summary(recs: list[dict]) -> str:
    """One table with a row per batch size, and a cost table, for an infer sweep's records."""
    first = recs[0]
    p = first.get("placement", {})
    cfg = first.get("config", {})
    w = first.get("weights", {})
    out = io.StringIO()
    console = _console(out)
    weights = (
        f"weights from {w.get('path')} (step {w.get('step')})"
        if w.get("source") == "checkpoint"
        else f"random initial weights (seed {w.get('seed')})"
    )
    title = (
        f"{first['model']['name']} inference on {first.get('data', {}).get('name')} — "
        f"{p.get('accelerator')} / {p.get('strategy')}, {p.get('num_replicas')} replica(s), "
        f"{cfg.get('precision')}{', XLA' if cfg.get('xla') else ''}; {weights}"
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
            _num(r.get("examples_per_sec")),
            _num(r.get("examples_per_sec_per_replica")),
            " / ".join(_latency_ms(r.get(f"latency_p{q}")) for q in (50, 90, 99)),
            f"{_num(r.get('first_batch_seconds'), '{:,.3f}')} s",
            f"{r.get('timed_batches')} in {_num(r.get('timed_seconds'), '{:,.2f}')} s",
            f"{100 * mfu:.2f}%" if mfu is not None else "n/a",
        )
    console.print(t)
    s = first.get("startup", {})
    console.print(
        f"time to first prediction: {_num(s.get('time_to_first_prediction'), '{:,.2f}')} s from "
        f"process start (model built and weights loaded in "
        f"{_num(s.get('model_ready_seconds'), '{:,.2f}')} s; first batch of "
        f"{s.get('batch_size')} traced and run in "
        f"{_num(first['results'].get('first_batch_seconds'), '{:,.2f}')} s)",
        soft_wrap=True,
    )
    fitted = first.get("model", {}).get("fitted_to_data") or {}
    if fitted:
        changes = "; ".join(f"{k} {v}" for k, v in fitted.items())
        console.print(f"fitted to the data: {changes}", soft_wrap=True)
    m = first.get("mfu", {})
    if m.get("forward_flops_per_example"):
        console.print(
            f"FLOPs/example (forward): {_si(m['forward_flops_per_example'], 'FLOP')}; "
            f"{_parameters(m)}; MFU against "
            f"{_si(m.get('peak_flops'), 'FLOP/s')} ({m.get('peak_source')})",
            soft_wrap=True,
        )
    notes = {rec.get("mfu", {}).get("mfu_note") for rec in recs} - {None}
    for note in sorted(notes):
        console.print(f"MFU {note}", soft_wrap=True)
    ev = first["results"].get("eval")
    if ev:
        console.print(
            f"eval accuracy of these weights: {_num(ev.get('accuracy'), '{:.4f}')} on "
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
                _money(row["usd_per_hour"]),
                *map(_money, per_batch),
            )
            for x in row.get("rows", []):
                used[(x["row_key"], x["as_of"])] = x
        console.print(c)
        for x in used.values():
            console.print(
                f"  price row {x['row_key']}: {_dated(x)}, {x['status']}, {x['source']}",
                soft_wrap=True,
            )
        if used:
            console.print(f"  {_price_age(used)}")
    elif cost.get("note"):
        console.print(f"cost: {cost['note']}", soft_wrap=True)
    for rec in recs:
        console.print(f"record: {rec.get('record_path')}", soft_wrap=True)
    return out.getvalue().rstrip()
