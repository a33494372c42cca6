"""Terminal rendering of one `infer --scenario=...` record: LoadGen's verdict first (no TF).

The headline (the scenario's own figure) is the scenario's to word
(`Scenario.headline`, given `console_format` to format numbers); the rest follows
the sections the scenario wrote (`Scenario.settings_fields`, `curve`, the offline
repeats), not the scenario's name.
"""

from __future__ import annotations

import io

from rich.table import Table

from tpubench.cli import console_format as fmt
from tpubench.core import money

_PERCENTILES = ("p50", "p90", "p99")


def scenario_summary(rec: dict, scenario) -> str:
    """REC (an `infer --scenario` record) as the console shows it; SCENARIO: its plug-in,
    resolved at the edge, which words the headline (`Scenario.headline`)."""
    out = io.StringIO()
    console = fmt.console(out)
    p = rec.get("placement", {})
    lg = rec.get("loadgen", {})
    summary = lg.get("summary", {})
    settings = lg.get("settings", {})
    results = rec.get("results", {})
    name = rec.get("scenario")
    fmt.say(
        console,
        f"{rec['model']['name']} inference, MLPerf LoadGen {name} scenario on "
        f"{rec.get('data', {}).get('name')} — {p.get('accelerator')} / {p.get('strategy')}, "
        f"{p.get('num_replicas')} replica(s), {fmt.compute_mode(rec)}",
    )
    rules = lg.get("rules") or {}
    if rules:
        flagged = ", ".join(rules.get("set_by_flags") or []) or "none"
        user = ""
        if rules.get("user_conf"):
            keys = rules.get("user_conf_keys") or {}
            took = [k for k, v in keys.items() if v.get("use", "").startswith("honoured")]
            user = f" + user.conf {rules['user_conf']} ({', '.join(took) or 'no key used'})"
        fmt.say(
            console,
            f"settings: mlperf.conf {rules.get('mlperf_conf')} ({rules.get('mlperf_round')}, "
            f"model key {rules.get('model_key')}){user}; set by flags: {flagged}",
        )
    if "curve" in lg:  # the server's runs, each a point of the latency-QPS-cost curve
        basis = money.record_basis(rec.get("cost") or {})
        console.print(_runs_table(lg.get("runs", []), lg.get("curve") or [], settings, basis))
        if lg.get("confirmation"):
            fmt.say(console, _confirmation(lg["confirmation"], summary))
    verdict = f"LoadGen: {summary.get('validity')}"
    if summary.get("invalid_reason"):
        verdict += f" ({summary['invalid_reason']})"
    fmt.say(
        console,
        f"{verdict}; min duration met: {_yes(summary.get('min_duration_met'))}, "
        f"min queries met: {_yes(summary.get('min_queries_met'))}, early stopping met: "
        f"{_yes(summary.get('early_stopping_met'))} ({summary.get('query_count')} queries, "
        f"{fmt.num(summary.get('wall_seconds'), '{:,.1f}')} s)",
    )
    fmt.say(console, scenario.headline(summary, results, settings, fmt))
    if results.get("busy_host"):
        fmt.say(
            console,
            f"busy host: {results['busy_host']} while LoadGen ran; this machine serves more "
            "when quiet: run it again on a quiet machine (`tpubench advise` refuses to size "
            "from this record without --allow_busy)",
        )
    _offline(console, lg.get("offline_repeats") or {}, results)
    if settings.get("note"):
        fmt.say(console, f"note: {settings['note']}")
    batch = str(settings.get("max_batch_size"))
    if "batching_window_seconds" in settings:  # the SUT batches the queries that arrive
        batch = f"dynamic, <= {batch}"
    console.print(_closed_table(results.get("closed_loop", []), summary, results, batch))
    check = results.get("cross_check")
    if check and check.get("ratio"):
        spread = ""
        if check.get("loadgen_runs", 1) > 1:
            spread = (
                f"; over its {check['loadgen_runs']} runs {check['ratio_min']:.3f} to "
                f"{check['ratio_max']:.3f}"
            )
        fmt.say(
            console,
            f"cross-check at batch {check['batch_size']}: LoadGen offline "
            f"{fmt.num(check['loadgen_samples_per_sec'])}/s (median) vs closed loop "
            f"{fmt.num(check['closed_loop_examples_per_sec'])}/s "
            f"(ratio {check['ratio']:.3f}{spread})",
        )
    _cost(console, rec)
    console.print(f"LoadGen logs: {lg.get('logs')}", soft_wrap=True)
    console.print(f"record: {rec.get('record_path')}", soft_wrap=True)
    return out.getvalue().rstrip()


def _yes(x) -> str:
    return "n/a" if x is None else ("yes" if x else "NO")


def _offline(console, repeats: dict, results: dict) -> None:
    """The offline repeats' spread, and the one query's completion times under their own name."""
    if repeats.get("runs"):
        rates = ", ".join(fmt.num(r) for r in repeats.get("samples_per_sec", []))
        spread = repeats.get("relative_spread")
        fmt.say(
            console,
            f"offline runs: {rates} samples/sec; median {fmt.num(repeats.get('median'))}, "
            f"spread (max - min) / median {fmt.num(None if spread is None else 100 * spread)}%",
        )
    done = results.get("offline_sample_completion_seconds") or {}
    if done:
        times = " / ".join(fmt.latency_ms(done.get(q)) for q in _PERCENTILES)
        fmt.say(
            console,
            f"offline sample completion, time since the one query was issued (not a per-batch "
            f"latency), p50 / p90 / p99: {times} ms",
        )


def _confirmation(conf: dict, summary: dict) -> str:
    tries = conf.get("tries") or []
    down = conf.get("stepped_down_from") or []
    text = (
        f"confirmation run (MLPerf's result is one full run at the chosen QPS): the search chose "
        f"{fmt.num(conf.get('searched_qps'))} QPS; "
    )
    if down:
        failed = ", ".join(fmt.num(q) for q in down)
        text += f"INVALID at {failed}, stepped down; "
    return text + (
        f"{summary.get('validity')} at {fmt.num(summary.get('target_qps'))} QPS "
        f"({tries[-1] if tries else '?'})"
    )


def _runs_table(runs: list[dict], curve: list[dict], settings: dict, basis: str) -> Table:
    """Each LoadGen run with its $/1M on BASIS (the record's), as the curve's first machine."""
    cost = {
        p.get("run"): (money.on_basis(p.get("machines") or [], basis) or [{}])[0] for p in curve
    }
    first = next((m for m in cost.values() if m.get("machine")), {})
    machine = first.get("machine")
    priced = f"; $/1M predictions as {machine}, on {money.prices_on(basis)}"
    priced = priced if machine else ""
    what = "server QPS search and confirmation"
    if settings.get("qps_search") == "given --target_qps":
        what = "server run at --target_qps"
    elif settings.get("qps_search") == "given by the user.conf's target_qps":
        what = "server run at the user.conf's target_qps"
    t = Table(
        title=f"{what}: the latency-QPS-cost curve (LoadGen's verdict per run{priced})",
        title_justify="left",
    )
    cols = ("run", "target QPS", "completed QPS", "p50 / p99 ms", "over bound", "$/1M", "verdict")
    for col in cols:
        t.add_column(col, justify="right")
    for r in runs:
        lat = r.get("latency_seconds", {})
        t.add_row(
            r.get("run", ""),
            fmt.num(r.get("target_qps")),
            fmt.num(r.get("completed_qps")),
            f"{fmt.latency_ms(lat.get('p50'))} / {fmt.latency_ms(lat.get('p99'))}",
            str(r.get("overlatency_queries", "n/a")),
            fmt.money(cost.get(r.get("run"), {}).get("usd_per_million_predictions")),
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
    offline = "offline_sample_completion_seconds" in results
    t.add_row(
        "LoadGen",
        batch,
        fmt.num(results.get("examples_per_sec")),
        # Offline has one query: its times are not per-batch latencies (printed apart).
        "n/a (one query)"
        if offline
        else " / ".join(fmt.latency_ms(lat.get(q)) for q in _PERCENTILES),
    )
    return t


def _cost(console, rec: dict) -> None:
    rows = (rec.get("cost") or {}).get("machines") or []
    closed = (rec.get("closed_loop_cost") or {}).get("machines") or []
    if not rows:
        return
    basis = money.record_basis(rec.get("cost") or {})
    shown = [i for i, m in enumerate(rows) if money.is_on_basis(m, basis)]
    batch = (rec.get("closed_loop_cost") or {}).get("batch_size")
    c, dropped = fmt.cost_table(
        "$ per million predictions, on {prices}: at LoadGen's rate, and closed loop at batch "
        f"{batch}",
        basis,
        ("$/hour", "LoadGen", "closed loop"),
        [
            (
                rows[i].get("machine"),
                [
                    rows[i].get("usd_per_hour"),
                    rows[i].get("usd_per_million_predictions"),
                    (closed[i] if i < len(closed) else {}).get("usd_per_million_predictions"),
                ],
            )
            for i in shown
        ],
    )
    console.print(c)
    if dropped:
        fmt.say(console, dropped)
    note = (rec.get("cost") or {}).get("note")
    if note:
        fmt.say(console, f"  {note}")
