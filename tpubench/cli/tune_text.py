"""The console texts of `tpubench tune`: what will be searched, the ranked table, the winners."""

from __future__ import annotations

import json
import os

from tpubench.cli import console_format as fmt
from tpubench.core import columns, errors
from tpubench.core import money as money_lib
from tpubench.core.basis import Basis
from tpubench.report import render, tables
from tpubench.tune import disk_full, results

SUMMARY = "tune-summary.json.txt"  # not *.json: `tpubench report DIR` reads only run records


def header(model: str, host, sp, opts, records_dir: str) -> str:
    lines = [
        f"tune {model} on {host.describe()}: objective {opts.objective}, budget "
        f"{opts.budget_seconds / 60:g} min, short trials of {opts.trial_steps} steps",
        "searching: " + (", ".join(_axis(a, opts) for a in sp.axes) or "nothing"),
    ]
    lines += [f"skipped: {what}: {why}" for what, why in sp.skipped]
    lines += [f"note: {n}" for n in sp.notes]
    lines.append(f"trial records: {records_dir}")
    return "\n".join(lines)


def _axis(a, opts) -> str:
    if a.name == "batch_size" and not a.values:
        values = "/".join(map(str, opts.batch_sizes)) or "default x1/x2/x4, x8 on accelerators"
    else:
        values = "/".join(map(_v, a.values))
    return f"{a.name} ({values})"


def _v(x) -> str:
    if isinstance(x, tuple):
        return "x".join(str(v or "tf") for v in x)
    if x is None:
        return "default"
    return str(x).lower() if isinstance(x, bool) else str(x)


# What the table and the closing lines call the answer's choice, by the answer's outcome
# (decide.Verdict.outcome): never "winner" where the answer is not settled.
CHOICE = {"winner": "winner", "equivalent": "either (equivalent)", "not settled": "leader"}


def choice(verdict) -> str:
    """The word for the answer's choice: 'winner', 'either (equivalent)' or 'leader'
    (not settled); 'winner' when no rounds ran to judge."""
    return CHOICE[verdict.outcome] if verdict is not None else "winner"


def table(
    ranked: list,
    objective: str,
    winner=None,
    pricing: Basis = Basis.ON_DEMAND,
    label: str = "winner",
) -> str:
    """The ranked rows; WINNER (the answer's choice, which a tie may put below the best
    median) is marked in its status with LABEL (`choice`)."""
    rows, notes = [], []
    for i, r in enumerate(ranked, 1):
        spread = (
            f"{fmt.num(r.low, '{:,.0f}')}-{fmt.num(r.high, '{:,.0f}')} (n={r.n})" if r.n else ""
        )
        won = winner is not None and r.setting == winner and r.status == "ok"
        status = (f"{label}, " if won else "") + r.status
        why = [x for x in (r.note, r.busy and f"{r.busy} on a busy host") if x]
        if why:  # below the table: beside it a reason would fold into a column of words
            notes.append(f"[{len(notes) + 1}] {r.name}: {'; '.join(why)}")
            status += f" [{len(notes)}]"
        rows.append(
            (
                str(i) if r.status == "ok" else "-",
                r.name,
                str(r.steps),
                fmt.num(r.rate),
                spread,
                fmt.money(r.usd_per_epoch) if r.usd_per_epoch else "n/a",
                f"{r.speedup:.2f}x" if r.speedup else "n/a",
                fmt.num(r.compile_seconds, "{:.1f}"),
                status,
            )
        )
    header = [
        "#",
        "setting (vs defaults)",
        "steps",
        "examples/s (median)",
        "spread (min-max, n)",
        "$/epoch",
        "speed-up",
        "compile s",
        "status",
    ]
    # At 100 columns the lesser figures leave the table first (compile time, then $/epoch
    # unless cost is the objective, then steps); the note under it names them.
    lesser = ("steps", "compile s") if objective == "cost" else ("steps", "$/epoch", "compile s")
    t = tables.Table(
        "tune",
        f"tune: settings ranked by {objective}; $/epoch on {money_lib.prices_on(pricing)}"
        + "".join(f"; {e}" for e in dict.fromkeys(getattr(r, "epoch", "") for r in ranked) if e),
        header,
        [list(r) for r in rows],
        [],
        [],
        notes,
        lesser=lesser,
        # The setting is what a row is: never left out (narrow consoles fold it instead).
        kept=("setting (vs defaults)", "examples/s (median)", "spread (min-max, n)", "status"),
        elsewhere="tune-summary.json.txt",
        left=("setting (vs defaults)", "status"),
    )
    return render.terminal(t, columns.width()).rstrip()


def finish(
    result, sp, opts, model_flags, work_dir, records_dir, host, say, pricing=Basis.ON_DEMAND
) -> None:
    """Prints the table and the winners; writes the winners' flag files and the summary.

    Dollar figures are on PRICING (the trials' --pricing), named beside them."""
    ranked = results.rows(result, sp.default, opts.objective)
    wins = results.winners(ranked, result.winner)
    label = choice(result.verdict)
    say(table(ranked, opts.objective, result.winner, pricing, label))
    for note in result.notes:
        say(f"note: {note}")
    for busy in result.busy:
        say(f"note: run again, not compared: {busy.record or 'a trial'}: busy host ({busy.busy})")
    if not wins:
        raise errors.UsageError("no setting finished with a valid result; see the table above")
    say(
        f"{len(result.outcomes) + len(result.busy)} trial(s), "
        f"{result.spent_seconds / 60:.1f} min of trials "
        "(compile time is shown apart and never part of a rate)"
    )
    answer = result.verdict.text() if result.verdict else ""
    if answer:
        say(f"answer: {answer}")
    apart = results.other_batch(ranked, result, sp.default)
    if apart:
        row, ratio = apart
        than = f", {ratio:.2f}x the same setting at the default batch" if ratio else ""
        say(
            f"another batch size (reported apart: it changes training, retune the learning "
            f"rate before trusting it): {row.name}: {fmt.num(row.rate)} examples/s in a "
            f"{row.steps}-step trial{than}; add --batch_size={row.setting.batch_size} to try it"
        )
    paths = {}
    for objective, row in wins.items():
        comment = (
            f"tpubench tune winner for {objective} on {host.describe()}: {row.name}, "
            f"{fmt.num(row.rate)} examples/s median of {row.n} run(s) of {row.steps} steps"
        )
        if answer:
            comment += f"\nanswer: {answer}"
        path = os.path.join(work_dir, f"winner-{objective}.flags")
        disk_full.write(path, results.flagfile(model_flags, row, comment), records_dir)
        paths[objective] = path
        money = ""
        if row.usd_per_epoch:
            money = f", {fmt.money(row.usd_per_epoch)}/epoch ({money_lib.basis(pricing)}"
            money += f"; {row.epoch})" if row.epoch else ")"
        speed = f", {row.speedup:.2f}x the defaults" if row.speedup else ""
        vs = result.vs_defaults
        if vs and row.setting == result.winner:
            speed = f", {vs.ratio:.2f}x the defaults ({vs.interval_text()})"
        say(
            f"{label} ({objective}): {row.name}: {fmt.num(row.rate)} examples/s{money}{speed}; "
            f"train with:\n  tpubench train --flagfile={path}"  # on a line of its own: to copy
        )
    extra = {
        "kind": "tune_summary",
        "objective": opts.objective,
        "host": host.describe(),
        "records_dir": records_dir,
        "flagfiles": paths,
        "skipped": [list(x) for x in sp.skipped],
        "guard_data": opts.guard_data or None,
    }
    doc = results.summary(ranked, result, wins, extra)
    summary = json.dumps(doc, indent=2, default=str) + "\n"
    disk_full.write(os.path.join(work_dir, SUMMARY), summary, records_dir)
