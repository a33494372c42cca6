"""Terminal rendering of a train record (no TensorFlow); infer_text.py renders infer sweeps."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from tpubench.cli import console_format as fmt
from tpubench.cli.infer_text import infer_summary  # noqa: F401 - at its old place too
from tpubench.run import io_time


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
        f"{p.get('strategy')}, {_replicas(p)}, {fmt.compute_mode(record)}, "
        f"global batch {record.get('global_batch_size')}"
    )
    t = Table(title=title, show_header=False, title_justify="left")
    t.add_column("figure", style="bold")
    t.add_column("value")
    rate = r.get("examples_per_sec")
    t.add_row(
        "examples/sec",
        f"{fmt.num(rate)}  (per {'worker' if _ps(p) else 'replica'} "
        f"{fmt.num(r.get('examples_per_sec_per_replica'))})"
        if rate
        else r.get("note", "n/a"),
    )
    t.add_row(
        "step time p50 / p90 / p99",
        f"{fmt.ms(r.get('step_time_p50'))} / {fmt.ms(r.get('step_time_p90'))} / "
        f"{fmt.ms(r.get('step_time_p99'))} ms  (steps_per_loop {cfg.get('steps_per_loop')}"
        + _samples(r.get("step_time_samples"))
        + ")",
    )
    t.add_row(
        "time to first loop",
        f"{fmt.num(r.get('time_to_first_loop'), '{:,.2f}')} s  "
        f"(compile ≈ {fmt.num(r.get('compile_seconds'), '{:,.2f}')} s; startup "
        f"{fmt.num(record.get('startup_seconds'), '{:,.2f}')} s)",
    )
    t.add_row("steady state after", f"{r.get('steady_state_after_loops', 'n/a')} loop(s)")
    t.add_row(
        "steps / wall time",
        f"{r.get('steps_run')} steps in "
        f"{fmt.num(r.get('train_wall_seconds'), '{:,.2f}')} s "
        f"(eval/checkpoint pauses {fmt.num(r.get('pause_seconds'), '{:,.2f}')} s)",
    )
    io_line = io_time.summary_line(r)
    if io_line:
        t.add_row("writes (I/O)", io_line)
    t.add_row("final loss", fmt.num(r.get("final_loss_loop_mean"), "{:.4f}"))
    fitted = record.get("model", {}).get("fitted_to_data") or {}
    if fitted:
        t.add_row("fitted to the data", fmt.fitted_changes(fitted))
    ev = r.get("eval")
    if ev:
        metric = record.get("model", {}).get("target_metric", "accuracy")
        t.add_row(
            f"eval {metric}",
            f"{fmt.num(ev.get(metric), '{:.4f}')} on {ev.get('examples')} "
            f"examples (eval loss {fmt.num(ev.get('loss'), '{:.4f}')})",
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
            f"{fmt.num(cpu.get('system_percent_mean'))}% mean, "
            f"{fmt.num(cpu.get('system_percent_p90'))}% p90 of {cpu.get('cores')} cores "
            f"(this process {fmt.num(cpu.get('process_percent_mean'))}%)",
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
        from tpubench.run import diagnosis

        real_cpu = (diag.get("host_cpu_real") or {}).get("system_percent_mean")
        syn_cpu = (diag.get("host_cpu_synthetic") or {}).get("system_percent_mean")
        ratio = diag.get("ratio")
        t.add_row(
            "real vs synthetic",
            f"{fmt.num(diag.get('real_examples_per_sec'))} vs "
            f"{fmt.num(diag.get('synthetic_examples_per_sec'))} ex/s = "
            f"{fmt.num(ratio, '{:.3f}')}x; host CPU {fmt.num(real_cpu)}% vs {fmt.num(syn_cpu)}%",
        )
        t.add_row("input verdict", f"{diag.get('verdict')}: {diagnosis.advice(diag)}")
    m = record.get("mfu", {})
    if m.get("train_flops_per_example"):
        t.add_row(
            "FLOPs/example (train)",
            f"{fmt.si(m['train_flops_per_example'], 'FLOP')} "
            f"(forward {fmt.si(m.get('forward_flops_per_example'), 'FLOP')}); "
            f"{fmt.parameters(m)}",
        )
        mfu = m.get("mfu")
        t.add_row(
            "MFU",
            f"{100 * mfu:.2f}% of {fmt.si(m.get('peak_flops'), 'FLOP/s')} ({m.get('peak_source')})"
            if mfu is not None
            else m.get("mfu_note") or f"n/a ({m.get('peak_source', m.get('note', ''))})",
        )
        for key, label in (("mfu_peak_warning", "MFU warning"), ("peak_note", "peak note")):
            if m.get(key):
                t.add_row(label, str(m[key]))
        if m.get("mfu_measured_peak") is not None:
            t.add_row(
                "MFU (measured peak)",
                f"{100 * m['mfu_measured_peak']:.2f}% of "
                f"{fmt.si(m.get('peak_flops_measured'), 'FLOP/s')} "
                f"({m.get('peak_measured_source')})",
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
                fmt.money(row["usd_per_hour"]),
                fmt.money(row.get("usd_per_epoch")),
                fmt.money(row.get("usd_per_million_examples")),
                fmt.money(row.get("usd_run")),
                fmt.money(row.get("usd_to_target")),
            )
            for x in row.get("rows", []):
                used[(x["row_key"], x["as_of"])] = x
        console.print(c)
        for x in used.values():
            console.print(
                f"  price row {x['row_key']}: {fmt.dated(x)}, {x['status']}, {x['source']}"
            )
        if used:
            console.print(f"  {fmt.price_age(used)}")
    elif cost.get("note"):
        console.print(f"cost: {cost['note']}", soft_wrap=True)
    console.print(  # whole paths on one line, for copying
        f"record: {record.get('record_path')}   model_dir: {cfg.get('model_dir')}", soft_wrap=True
    )
    return out.getvalue().rstrip()
