"""Formatting numbers, and rendering Tables as Markdown, CSV and terminal text."""

from __future__ import annotations

import csv
import io

from tpubench.core import columns, safe_text
from tpubench.report import stats


def num(x: float | None, digits: int = 1) -> str:
    """1,234 / 123 / 12.3 / 0.0123: no decimals from 100 up, small numbers significant."""
    if x is None:
        return "n/a"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 1 or x == 0:
        return f"{x:,.{digits}f}"
    return f"{x:.{max(2, digits)}g}"


def fixed(x: float | None, digits: int = 4) -> str:
    """The same number of decimals in every row (accuracies: 0.9500, 0.9667)."""
    return "n/a" if x is None else f"{x:.{digits}f}"


def ratio(x: float | None) -> str:
    """A ratio to a baseline: 0.54, 1.37, 0.067."""
    if x is None:
        return "n/a"
    return f"{x:.2f}" if abs(x) >= 0.1 else f"{x:.2g}"


def money(x: float | None) -> str:
    from tpubench.core import money as money_lib

    return money_lib.usd(x)


def span(iv: stats.Interval | None, fmt=num) -> str:
    """'low–high (confidence)' or why there is no interval."""
    if iv is None:
        return "n/a"
    if not iv.has_interval:
        return "1 trial: none"
    conf = f"{iv.confidence:.1%}" if iv.confidence >= stats.LEVEL else f"range, {iv.confidence:.0%}"
    return f"{fmt(iv.low)}–{fmt(iv.high)} ({conf})"


def markdown(t) -> str:
    # Cells hold record text: HTML and `|` escaped, one line each (safe_text).
    cell = safe_text.markdown_cell
    lines = [f"### {cell(t.title)}", ""]
    lines.append("| " + " | ".join(map(cell, t.columns)) + " |")
    lines.append("| " + " | ".join("---" for _ in t.columns) + " |")
    lines += ["| " + " | ".join(cell(c, None) for c in row) + " |" for row in t.rows]
    lines += [""] + [f"_{cell(n, None)}_" for n in t.notes]
    return "\n".join(lines).rstrip() + "\n"


def csv_text(t) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(t.csv_columns)
    for row in t.csv_rows:  # a cell a spreadsheet would run as a formula is quoted (OWASP)
        w.writerow(
            [
                "" if v is None else (repr(v) if isinstance(v, float) else safe_text.csv_cell(v))
                for v in row
            ]
        )
    return out.getvalue()


def terminal(t, width: int | None = None) -> str:
    """A rich table of T's `brief` columns (all when unset), fitted to WIDTH.

    WIDTH is the console's (core/columns: $COLUMNS, else the terminal's up to 100).
    Columns that do not fit are left out, intervals first and then from the
    right (never the first), and a note names them and where they are.
    """

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table as RichTable

    out = io.StringIO()
    if width is None:
        width = columns.width()
    console = Console(file=out, width=width, force_terminal=False, color_system=None)
    keep = [i for i, c in enumerate(t.columns) if not t.brief or c in t.brief]
    dropped = []
    while len(keep) > 2 and _natural_width(t, keep) > width:
        # Intervals and the lesser columns go first (the files keep them), then from the right.
        spans = [i for i in keep[1:] if "interval" in t.columns[i]]
        order = LESSER if getattr(t, "lesser", None) is None else t.lesser
        lesser = [i for i in keep[1:] if t.columns[i] in order]
        kept = getattr(t, "kept", ())
        rest = [i for i in keep[1:] if t.columns[i] not in kept]
        if not (spans or lesser or rest):
            break  # only the columns that answer the question are left: they fold instead
        gone = (spans or sorted(lesser, key=lambda i: order.index(t.columns[i])) or rest)[-1]
        keep.remove(gone)
        dropped.append(t.columns[gone])
    shown = safe_text.shown  # record text: no escapes reach the terminal, one line per cell
    rt = RichTable(title=escape(shown(t.title)), title_justify="left")
    for i in keep:
        left = i == 0 or t.columns[i] in getattr(t, "left", ())
        rt.add_column(shown(t.columns[i]), justify="left" if left else "right", overflow="fold")
    for row in t.rows:
        rt.add_row(*(escape(shown(row[i], None)) for i in keep))  # "[infer]" is not markup
    console.print(rt)
    if dropped:
        console.print(
            f"  left out to fit {width} columns: {', '.join(dropped)} (all columns are in "
            f"{getattr(t, 'elsewhere', 'the files')}; set COLUMNS wider to see them here)"
        )
    for n in t.notes:
        console.print(f"  {escape(shown(n, None))}")
    return out.getvalue().rstrip() + "\n"


LESSER = (
    "trials",
    "$/hour",
    "$ to target",
    "to target (s)",
)  # dropped last-first before the others


def _natural_width(t, keep: list[int]) -> int:
    """Characters the table needs unfolded: cells, padding and borders.

    The first column (configuration labels) may fold to half its length.
    """
    widths = []
    for n, i in enumerate(keep):
        cells = [len(t.columns[i])] + [len(r[i]) for r in t.rows]
        w = max(cells)
        widths.append(max(len(t.columns[i]), (w + 1) // 2) if n == 0 else w)
    return sum(widths) + 3 * len(widths) + 1
