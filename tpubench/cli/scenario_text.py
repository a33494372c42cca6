"""Terminal rendering of one `infer --scenario=...` record: LoadGen's verdict first (no TF)."""

from __future__ import annotations

import io

from rich.table import Table

from tpubench.cli import console_format as fmt

_PERCENTILES = ("p50", "p90", "p99")


def scenario_summary(rec: dict) -> str:
    out = io.StringIO()
    console = fmt.console(out)
    p = rec.get("placement", {})
    lg = rec.get("loadgen", {})
    summary = lg.get("summary", {})
    settings = lg.get("settings", {})
    results = rec.get("results", {})
    name = rec.get("scenario")
    console.print(
        f"{rec['model']['name']} inference, MLPerf LoadGen {name} scenario on "
        f"{rec.get('data', {}).get('name')} — {p.get('accelerator')} / {p.get('strategy')}, "
        f"{p.get('num_replicas')} replica(s), {fmt.compute_mode(rec)}",
        soft_wrap=True,
    )
    if name == "server":
        console.print(_runs_table(lg.get("runs", []), settings))
    verdict = f"LoadGen: {summary.get('validity')}"
    if summary.get("invalid_reason"):
        verdict += f" ({summary['invalid_reason']})"
    console.print(
        f"{verdict}; min duration met: {_yes(summary.get('min_duration_met'))}, "
        f"min queries met: {_yes(summary.get('min_queries_met'))}, early stopping met: "
        f"{_yes(summary.get('early_stopping_met'))} ({summary.get('query_count')} queries, "
        f"{fmt.num(summary.get('wall_seconds'), '{:,.1f}')} s)",
        soft_wrap=True,
    )
    console.print(_headline(name, summary, results, settings), soft_wrap=True)
    if settings.get("note"):
        console.print(f"note: {settings['note']}", soft_wrap=True)
    batch = str(settings.get("max_batch_size"))
    if name == "server":
        batch = f"dynamic, <= {batch}"
    console.print(_closed_table(results.get("closed_loop", []), summary, results, batch))
    check = results.get("cross_check")
    if check and check.get("ratio"):
        console.print(
            f"cross-check at batch {check['batch_size']}: LoadGen offline "
            f"{fmt.num(check['loadgen_samples_per_sec'])}/s vs closed loop "
            f"{fmt.num(check['closed_loop_examples_per_sec'])}/s (ratio {check['ratio']:.3f})",
            soft_wrap=True,
        )
    _cost(console, rec)
    console.print(f"LoadGen logs: {lg.get('logs')}", soft_wrap=True)
    console.print(f"record: {rec.get('record_path')}", soft_wrap=True)
    return out.getvalue().rstrip()


def _yes(x) -> str:
    return "n/a" if x is None else ("yes" if x else "NO")


def _headline(name, summary, results, settings) -> str:
    lat = summary.get("latency_seconds", {})
    lats = " / ".join(fmt.latency_ms(lat.get(q)) for q in _PERCENTILES)
    rate = fmt.num(results.get("examples_per_sec"))
    if name == "server":
        return (
            f"sustained {rate} queries/sec with p{settings.get('latency_percentile', 99):g} "
            f"<= {fmt.latency_ms(settings.get('latency_bound_seconds'))} ms "
            f"(LoadGen's p50 / p90 / p99: {lats} ms; batches up to "
            f"{settings.get('max_batch_size')}, window "
            f"{fmt.latency_ms(settings.get('batching_window_seconds'))} ms)"
        )
    if name == "offline":
        return f"offline: {rate} samples/sec (batch {settings.get('max_batch_size')})"
    per = f", {settings['samples_per_query']} samples/query" if name == "multi_stream" else ""
    return f"{name}: latency p50 / p90 / p99 {lats} ms{per} ({rate} samples/sec)"


def _runs_table(runs: list[dict], settings: dict) -> Table:
    t = Table(title="server QPS search (LoadGen's verdict per run)", title_justify="left")
    for col in ("run", "target QPS", "completed QPS", "p50 / p99 ms", "over bound", "verdict"):
        t.add_column(col, justify="right")
    for r in runs:
        lat = r.get("latency_seconds", {})
        t.add_row(
            r.get("run", ""),
            fmt.num(r.get("target_qps")),
            fmt.num(r.get("completed_qps")),
            f"{fmt.latency_ms(lat.get('p50'))} / {fmt.latency_ms(lat.get('p99'))}",
            str(r.get("overlatency_queries", "n/a")),
            r.get("validity", "?"),
        )
    return t


def _closed_table(closed: list[dict], summary: dict, results: dict, batch: str) -> Table:
    t = Table(title="closed loop beside LoadGen (tpubench's own timing)", title_justify="left")
    for col in ("measured by", "batch", "predictions/sec", "latency p50 / p90 / p99 ms"):
        t.add_column(col, justify="right")
    for c in closed:
        t.add_row(
            "closed loop",
            f"{c['batch_size']:,}",
            fmt.num(c.get("examples_per_sec")),
            " / ".join(fmt.latency_ms(c.get(f"latency_{q}")) for q in _PERCENTILES),
        )
    lat = summary.get("latency_seconds", {})
    t.add_row(
        "LoadGen",
        batch,
        fmt.num(results.get("examples_per_sec")),
        " / ".join(fmt.latency_ms(lat.get(q)) for q in _PERCENTILES),
    )
    return t


def _cost(console, rec: dict) -> None:
    rows = (rec.get("cost") or {}).get("machines") or []
    closed = (rec.get("closed_loop_cost") or {}).get("machines") or []
    if not rows:
        return
    c = Table(
        title="$ per million predictions: at LoadGen's rate, and closed loop at batch "
        f"{(rec.get('closed_loop_cost') or {}).get('batch_size')}",
        title_justify="left",
    )
    for col in ("machine", "pricing", "$/hour", "LoadGen", "closed loop"):
        c.add_column(col, justify="left" if col in ("machine", "pricing") else "right")
    for i, row in enumerate(rows):
        other = closed[i] if i < len(closed) else {}
        c.add_row(
            row.get("machine") or "(override)",
            row.get("pricing", ""),
            fmt.money(row.get("usd_per_hour")),
            fmt.money(row.get("usd_per_million_predictions")),
            fmt.money(other.get("usd_per_million_predictions")),
        )
    console.print(c)
    note = (rec.get("cost") or {}).get("note")
    if note:
        console.print(f"  {note}", soft_wrap=True)
