"""Formatting numbers, and rendering Tables as Markdown, CSV and terminal text."""

from __future__ import annotations

import csv
import io
import shutil
import sys

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


def ratio(x: float | None) -> str:
    """A ratio to a baseline: 0.54, 1.37, 0.067."""
    if x is None:
        return "n/a"
    return f"{x:.2f}" if abs(x) >= 0.1 else f"{x:.2g}"


def money(x: float | None) -> str:
    from tpubench.cost import money as money_lib

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
    def cell(x: str) -> str:
        return x.replace("|", "\\|").replace("\n", " ")

    lines = [f"### {t.title}", ""]
    lines.append("| " + " | ".join(t.columns) + " |")
    lines.append("| " + " | ".join("---" for _ in t.columns) + " |")
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in t.rows]
    lines += [""] + [f"_{n}_" for n in t.notes]
    return "\n".join(lines).rstrip() + "\n"


def csv_text(t) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(t.csv_columns)
    for row in t.csv_rows:
        w.writerow(["" if v is None else (repr(v) if isinstance(v, float) else v) for v in row])
    return out.getvalue()


def terminal(t, width: int | None = None) -> str:
    """A rich table of T's `brief` columns (all when unset)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table as RichTable

    out = io.StringIO()
    if width is None:  # a terminal's own width; files and pipes get long lines, not folds
        width = shutil.get_terminal_size().columns if sys.stdout.isatty() else 200
    console = Console(file=out, width=width, force_terminal=False, color_system=None)
    rt = RichTable(title=escape(t.title), title_justify="left")
    keep = [i for i, c in enumerate(t.columns) if not t.brief or c in t.brief]
    for i in keep:
        rt.add_column(t.columns[i], justify="left" if i == 0 else "right", overflow="fold")
    for row in t.rows:
        rt.add_row(*(escape(row[i]) for i in keep))  # "[infer]" is text, not rich markup
    console.print(rt)
    for n in t.notes:
        console.print(f"  {escape(n)}")
    return out.getvalue().rstrip() + "\n"
