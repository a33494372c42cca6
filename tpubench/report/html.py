"""One self-contained HTML page: the tables and the PNG charts inline (data: URIs).

No scripts, no external style sheets or fonts: the page opens the same from
a laptop, a bucket or an e-mail attachment, and years later.
"""

from __future__ import annotations

import base64
import html

from tpubench.core import safe_files
from tpubench.report import tables

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 0.3em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: right; white-space: nowrap; }
.scroll { overflow-x: auto; }
th:first-child, td:first-child { text-align: left; }
th { background: #f3f3f3; }
table.published { background: #fbf7ee; }
.note { color: #555; font-size: 0.85em; margin: 0.2em 0 1em; }
.warn { color: #8a4b00; }
figure { margin: 1em 0 2em; }
figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.85em; }
"""


def _table(t: tables.Table) -> str:
    cls = ' class="published"' if t.name == "published" else ""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in t.columns)
    body = "\n".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in t.rows
    )
    notes = "".join(f'<p class="note">{html.escape(n)}</p>' for n in t.notes)
    return (
        f'<div class="scroll"><table id="table-{t.name}"{cls}><thead><tr>{head}</tr></thead>\n'
        f"<tbody>\n{body}\n</tbody></table></div>\n{notes}"
    )


def _figure(name: str, png_path: str, caption: str) -> str:
    png = safe_files.read_bytes(png_path, "", 256 << 20, "a chart the report just drew")
    data = base64.b64encode(png).decode("ascii")
    return (
        f'<figure id="figure-{name}"><img alt="{html.escape(caption)}" '
        f'src="data:image/png;base64,{data}">\n'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>\n"
    )


def page(
    title: str,
    sections: list[tuple[tables.Table | None, tuple[str, str, str] | None]],
    warnings: list[str],
    sources: list[str],
    generated: str,
) -> str:
    """The page; SECTIONS are (table, (figure name, PNG path, caption)), either may be None."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="note">Generated {html.escape(generated)} by tpubench from: '
        f"{html.escape(', '.join(sources))}</p>",
    ]
    if warnings:
        items = "".join(f"<li>{html.escape(w)}</li>" for w in warnings)
        parts.append(f'<ul class="warn" id="warnings">{items}</ul>')
    for table, fig in sections:
        heading = table.title if table is not None else fig[2]
        parts.append(f"<h2>{html.escape(heading)}</h2>")
        if fig is not None:
            parts.append(_figure(*fig))
        if table is not None:
            parts.append(_table(table))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
