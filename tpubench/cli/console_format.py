"""Number, money and latency formatting shared by the terminal tables (no TensorFlow)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from tpubench.core import columns
from tpubench.cost import catalog_rows
from tpubench.storage import record_results, record_view


def num(x, fmt="{:,.1f}", none="n/a"):
    return none if x is None else fmt.format(x)


def ms(x):
    return num(x * 1e3 if x is not None else None, "{:,.2f}")


def si(x, unit):
    if x is None:
        return "n/a"
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= scale:
            return f"{x / scale:,.2f} {prefix}{unit}"
    return f"{x:,.0f} {unit}"


def money(x):
    from tpubench.core import money

    return money.usd(x)


def price_age(used: dict) -> str:
    from tpubench.cost import catalog

    return catalog.age_note(dated(x) for x in used.values())


def dated(line: record_results.PriceRow) -> str:
    """A recorded price line's date: its as_of, or 'date unknown (read ...)'."""

    return catalog_rows.dated(line.as_of, line.date_known)


def fitted_changes(fitted: dict) -> str:
    """What fitting to the data changed: 'num_classes 10 -> 8; vocab_size ...'."""
    return "; ".join(f"{k} {v}" for k, v in fitted.items())


def parameters(m: record_results.Mfu) -> str:
    """ "4,310 parameters", and why it differs from `tpubench models` when fitted to the data."""
    text = f"{m.parameters or 0:,} parameters"
    if m.fitted_params and m.parameters_unfitted is not None:
        text += (
            f" (fitted to the data: {fitted_changes(m.fitted_params)}; "
            f"{m.parameters_unfitted:,} unfitted)"
        )
    return text


def latency_ms(x):
    """Milliseconds to about three significant digits: 0.76, 12.5, 1,771."""
    if x is None:
        return "n/a"
    ms = x * 1e3
    return f"{ms:,.2f}" if ms < 10 else f"{ms:,.1f}" if ms < 100 else f"{ms:,.0f}"


def width() -> int:
    """Columns for a run's tables: columns.WIDTH (a log, a pasted issue), or fewer on a
    narrower terminal (core/columns)."""
    return columns.width(widest=columns.WIDTH)


def console(out):
    return Console(file=out, width=width(), force_terminal=False, color_system=None)


def compute_mode(rec) -> str:
    """'fp16', 'fp32, XLA, channels-first': the precision, then XLA and NCHW when used."""
    rec = typed(rec)
    mode = str(rec.config.precision)
    if rec.config.xla:
        mode += ", XLA"
    if rec.model.data_format == "channels_first":
        mode += ", channels-first"
    return mode


def typed(record) -> record_view.RunRecord:
    """RECORD as a RunRecord (a dict is viewed as it is: the run just wrote it)."""
    return record if isinstance(record, record_view.RunRecord) else record_view.view(record)


def cost_table(
    title: str,
    pricing: str,
    headers,
    rows,
    droppable=("$ to target",),
    lesser=("$/1M examples", "$ this run"),
):
    """(a cost table on one price basis, a note or None): TITLE holds '{prices}'.

    ROWS are (machine, [USD figure per header]).  Machine names are never
    cut (n1-standard-1 and -2 differ in the last character): a name wider
    than its column folds onto the next line, and the LESSER figure columns
    are left out, last first, until names up to 18 characters fit whole; the
    note says which (the record keeps them).  Dollar figures never fold or
    shrink, so each keeps its three significant digits.  A DROPPABLE column
    that is n/a on every row (no target was set) is left out.
    """
    from tpubench.core import money

    cells = [(name or "(override)", [money.usd(x) for x in figures]) for name, figures in rows]
    keep = [
        i
        for i, h in enumerate(headers)
        if h not in droppable or any(r[1][i] is not None for r in rows)
    ]
    name_width = min(18, max([len("machine")] + [len(n) for n, _ in cells]))

    def natural(cols) -> int:
        wide = [max([len(headers[i])] + [len(f[i]) for _, f in cells]) for i in cols]
        return name_width + sum(wide) + 3 * (len(cols) + 1) + 1

    dropped = []
    for h in reversed(lesser):
        if natural(keep) <= width():
            break
        if h in headers and headers.index(h) in keep:
            keep.remove(headers.index(h))
            dropped.append(h)
    t = Table(title=title.replace("{prices}", money.prices_on(pricing)), title_justify="left")
    t.add_column("machine", overflow="fold", min_width=name_width)
    for i in keep:
        t.add_column(headers[i], justify="right", no_wrap=True)
    for name, figures in cells:
        t.add_row(name, *(figures[i] for i in keep))
    note = None
    if dropped:
        note = (
            f"  left out to fit {width()} columns: {', '.join(dropped)} (in the record; set "
            "COLUMNS wider to see them here)"
        )
    return t, note


def price_rows(machines) -> dict:
    """The distinct price lines MACHINES (cost rows) used, keyed by (row, date)."""
    return {(x.row_key, x.as_of): x for row in machines for x in row.rows}


def print_price_rows(console, used: dict) -> None:
    """One line per price row used, then how old the prices are."""
    for x in used.values():
        say(console, f"  price row {x.row_key}: {dated(x)}, {x.status}, {x.source}")
    if used:
        say(console, f"  {price_age(used)}")


def say(console, text: str) -> None:
    """A line of prose under a table, folded at spaces to the console's width (core/columns).

    Paths and URLs stay whole where they fit a line, so they can be copied.
    """
    console.print(columns.fold(text, console.width), soft_wrap=True)
