"""Terminal rendering of a train record (no TensorFlow); infer_text.py renders infer sweeps.

The record is read through its typed view (storage/record_view.py); each
row of the results table is one small function of it, in table order.
"""

from __future__ import annotations

import io

from rich.table import Table

from tpubench.cli import console_format as fmt
from tpubench.core import money
from tpubench.cost import epoch, measured_on
from tpubench.run.train import diagnosis, io_time
from tpubench.storage.record_view import RunRecord

_SECONDS = "{:,.2f}"


def _replicas(p) -> str:
    """'2 worker(s)' under parameter servers (each worker steps on its own batch share, so
    the rate is split by workers); 'N replica(s)' otherwise."""
    if p.parameter_server:
        return f"{p.num_workers} worker(s)"
    return f"{p.num_replicas} replica(s)"


def _samples(n) -> str:
    """'; n=1: one timed loop, so p50 = p90 = p99' -- percentiles of one sample say nothing."""
    if n is None:
        return ""
    if n == 1:
        return "; n=1: one timed loop, so all three are that loop; run more steps for a spread"
    return f"; n={n} loops"


def train_summary(record) -> str:
    """A results table and a cost table for a finished train record (a dict or RunRecord)."""
    rec = fmt.typed(record)
    out = io.StringIO()
    console = fmt.console(out)
    fmt.say(console, _title(rec))
    console.print(_results_table(rec))
    _cost(console, rec)
    console.print(  # whole paths on one line, for copying
        f"record: {rec.record_path}   model_dir: {rec.config.model_dir}", soft_wrap=True
    )
    return out.getvalue().rstrip()


def _title(rec: RunRecord) -> str:
    p, per, chosen = rec.placement, rec.per_replica_batch_size, rec.config.optimizer
    several = per and rec.global_batch_size and per != rec.global_batch_size
    return (
        f"{rec.model.name} on {rec.data.name} — {p.accelerator} / {p.strategy_text}, "
        f"{_replicas(p)}, {fmt.compute_mode(rec)}, global batch {rec.global_batch_size}"
        + (f" ({per} per {'worker' if p.parameter_server else 'replica'})" if several else "")
        + (f", optimizer {chosen}" if chosen not in (None, "model") else "")
    )


def _results_table(rec: RunRecord) -> Table:
    t = Table(show_header=False)
    t.add_column("figure", style="bold")
    t.add_column("value")
    for rows in (_timing, _outcome, _host, _efficiency):
        for figure, value in rows(rec):
            t.add_row(figure, value)
    return t


def _per_chip(rec: RunRecord) -> str:
    """'; per chip 1,234.5 of 4' on an accelerator machine (the first priced) whose chips
    are not its replicas (a tpu-v2-8: 8 TensorCore replicas, 4 chips), else ''."""
    first = rec.cost.machines[0] if rec.cost.machines else None
    chips = first.num_accelerators if first else None
    if not chips or not rec.results.examples_per_sec or chips == rec.placement.num_replicas:
        return ""
    return f"; per chip {fmt.num(rec.results.examples_per_sec / chips)} of {chips}"


def _covers(rec: RunRecord) -> str:
    """Which steps a resumed run's rate covers: this part's, not the whole run's."""
    start = rec.raw.get("resumed_from_step")
    if not isinstance(start, int) or not start or not rec.results.steps_run:
        return ""
    end = start + rec.results.steps_run
    return (
        f"; steps {start + 1:,}-{end:,} only: resumed at step {start:,}, the steps before "
        "ran in earlier runs (their own records)"
    )


def _timing(rec: RunRecord):
    """Throughput, step times, start-up and wall time, writes."""
    r, ps = rec.results, rec.placement.parameter_server
    rate = r.examples_per_sec
    yield (
        "examples/sec",
        f"{fmt.num(rate)}  (per {'worker' if ps else 'replica'} "
        f"{fmt.num(r.examples_per_sec_per_replica)}{_per_chip(rec)}){_covers(rec)}"
        if rate
        else r.note or "n/a",
    )
    yield (
        "step time p50 / p90 / p99",
        f"{fmt.ms(r.step_time_p50)} / {fmt.ms(r.step_time_p90)} / {fmt.ms(r.step_time_p99)} ms"
        f"  (steps_per_loop {rec.config.steps_per_loop}{_samples(r.step_time_samples)})",
    )
    yield (
        "time to first loop",
        f"{fmt.num(r.time_to_first_loop, _SECONDS)} s  "
        f"(compile ≈ {fmt.num(r.compile_seconds, _SECONDS)} s; startup "
        f"{fmt.num(rec.startup_seconds, _SECONDS)} s)",
    )
    steady = r.steady_state_after_loops
    yield "steady state after", f"{'n/a' if steady is None else steady} loop(s)"
    yield (
        "steps / wall time",
        f"{r.steps_run} steps in {fmt.num(r.train_wall_seconds, _SECONDS)} s "
        f"(eval/checkpoint pauses {fmt.num(r.pause_seconds, _SECONDS)} s)",
    )
    io_line = io_time.summary_line(r.raw)
    if io_line:
        yield "writes (I/O)", io_line


def _outcome(rec: RunRecord):
    """Loss, what fitting to the data changed, eval and target."""
    r = rec.results
    yield "final loss", fmt.num(r.final_loss_loop_mean, "{:.4f}")
    if rec.model.fitted_to_data:
        yield "fitted to the data", fmt.fitted_changes(rec.model.fitted_to_data)
    if r.eval:
        metric = rec.model.target_metric or "accuracy"
        yield (
            f"eval {metric}",
            f"{fmt.num(r.eval.metric(metric), '{:.4f}')} on {r.eval.examples} "
            f"examples (eval loss {fmt.num(r.eval.loss, '{:.4f}')})",
        )
    elif r.eval_note:
        yield "eval", r.eval_note
    tgt = r.target
    if tgt:
        goal = f"{tgt.metric} {'<=' if tgt.mode == 'min' else '>='} {tgt.target}"
        yield (
            "target",
            f"{goal}: reached at step {tgt.step} after {tgt.seconds:.2f} s"
            if tgt.step
            else f"{goal}: NOT reached",
        )


def _host(rec: RunRecord):
    """Host CPU, skipped records, and --compare_synthetic's verdict."""
    cpu = rec.results.host_cpu
    if cpu and cpu.samples:
        yield (
            "host CPU (all cores)",
            f"{fmt.num(cpu.system_percent_mean)}% mean, {fmt.num(cpu.system_percent_p90)}% p90 "
            f"of {cpu.cores} cores (this process {fmt.num(cpu.process_percent_mean)}%)",
        )
    skipped = rec.data.skipped
    if skipped:
        files = skipped.damaged_files
        yield (
            "skipped (--skip_corrupt)",
            f"{skipped.examples_skipped:,} examples in {len(files)} damaged file(s): "
            + ", ".join(f"{f['file'].rsplit('/', 1)[-1]} ({f['kind']})" for f in files[:3]),
        )
    diag = rec.results.input_diagnosis
    if diag:
        real_cpu = diag.host_cpu_real.system_percent_mean
        syn_cpu = diag.host_cpu_synthetic.system_percent_mean
        yield (
            "real vs synthetic",
            f"{fmt.num(diag.real_examples_per_sec)} vs "
            f"{fmt.num(diag.synthetic_examples_per_sec)} ex/s = "
            f"{fmt.num(diag.ratio, '{:.3f}')}x; "
            f"host CPU {fmt.num(real_cpu)}% vs {fmt.num(syn_cpu)}%",
        )
        yield "input verdict", f"{diag.verdict}: {diagnosis.advice(diag.raw)}"


def _efficiency(rec: RunRecord):
    """FLOPs per example and MFU, against the datasheet and the measured peak."""
    m = rec.mfu
    if not m.train_flops_per_example:
        return
    yield (
        "FLOPs/example (train)",
        f"{fmt.si(m.train_flops_per_example, 'FLOP')} "
        f"(forward {fmt.si(m.forward_flops_per_example, 'FLOP')}); {fmt.parameters(m)}",
    )
    yield (
        "MFU",
        f"{100 * m.mfu:.2f}% of {fmt.si(m.peak_flops, 'FLOP/s')} ({m.peak_source})"
        if m.mfu is not None
        else m.mfu_note or f"n/a ({m.peak_source if m.peak_source is not None else m.note or ''})",
    )
    if m.mfu_peak_warning:
        yield "MFU warning", m.mfu_peak_warning
    if m.peak_note:
        yield "peak note", m.peak_note
    if m.mfu_measured_peak is not None:
        yield (
            "MFU (measured peak)",
            f"{100 * m.mfu_measured_peak:.2f}% of {fmt.si(m.peak_flops_measured, 'FLOP/s')} "
            f"({m.peak_measured_source})",
        )


def _cost(console, rec: RunRecord) -> None:
    """The cost table at the measured rate, and the price rows it used."""
    cost = rec.cost
    if not cost.machines:
        if cost.note:
            fmt.say(console, f"cost: {cost.note}")
        return
    basis = money.record_basis(cost)
    shown = money.on_basis(cost.machines, basis)
    headers = ("$/hour", "$/chip-hour", "$/epoch", "$/1M examples", "$ this run", "$ to target")
    rows = [
        (
            measured_on.marked(row.machine, bool(row.raw.get("what_if"))),
            [
                row.usd_per_hour,
                row.raw.get("usd_per_chip_hour"),
                row.usd_per_epoch,
                row.usd_per_million_examples,
                row.usd_run,
                row.usd_to_target,
            ],
        )
        for row in shown
    ]
    title = "cost at the measured rate, on {prices} — " + epoch.of_record(rec.raw)
    # With no --target_accuracy, "$ to target" is n/a by construction: left out.
    aimed = rec.results.target is not None and rec.results.target.target is not None
    c, dropped = fmt.cost_table(
        title + (f"; {cost.note}" if cost.note else ""),
        basis,
        headers,
        rows,
        droppable=("$/chip-hour",) + (() if aimed else ("$ to target",)),
    )
    console.print(c)
    if dropped:
        fmt.say(console, dropped)
    if any(row.raw.get("what_if") for row in shown):
        fmt.say(console, measured_on.FOOTNOTE)
    fmt.print_price_rows(console, fmt.price_rows(shown))
