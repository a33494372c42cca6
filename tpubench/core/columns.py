"""The one console-width rule: every table and line a command prints fits 100 columns.

A terminal gets its own width up to 100 columns, files, pipes and CI logs
get 100, and $COLUMNS, when set, is taken as the user's choice (wider shows
the columns a table left out); never below 60: narrower, a table folds
every figure into a column of single words.  Plain text goes through `fold`, tables through
`fold_row`; rich tables are given `width()`.  Lines meant to be copied whole
(command lines, paths alone on a line) are printed apart and never folded.
"""

from __future__ import annotations

import os
import shutil
import sys

WIDTH = 100  # a pasted issue, a CI log and an 80-100 column terminal all read it
NARROWEST = 60
_HANG = 4  # continuation lines of a prose line start this much further in


def width(widest: int | None = None) -> int:
    """Columns for the console: $COLUMNS, else the terminal's up to WIDTH, else WIDTH.

    WIDEST caps $COLUMNS too, for tables laid out for WIDTH (a run's summary).
    """
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return max(NARROWEST, min(int(env), widest or int(env)))
    have = shutil.get_terminal_size().columns if sys.stdout.isatty() else WIDTH
    return max(NARROWEST, min(WIDTH, have))


def _break(text: str, room: int, lead: int = 0) -> tuple[str, str]:
    """TEXT's head of at most ROOM characters, cut at a space after LEAD, and the rest.

    A word longer than the room (a path, a URL) is kept whole and overflows:
    cut, it could no longer be copied.
    """
    if len(text) <= room:
        return text, ""
    cut = text.rfind(" ", lead + 1, room + 1)
    if cut <= lead:
        cut = text.find(" ", room)
        if cut < 0:
            return text, ""
    return text[:cut].rstrip(), text[cut:].lstrip()


def hang(first: str, rest: str, indent: int, cols: int) -> list[str]:
    """FIRST then REST folded into lines of COLS, the folds INDENT columns in."""
    text = first + rest
    head, rest = _break(text, cols, len(text) - len(text.lstrip(" ")))
    lines = [head]
    while rest:
        piece, rest = _break(rest, max(10, cols - indent))
        lines.append(" " * indent + piece)
    return lines


def fold(text: str, cols: int | None = None) -> str:
    """TEXT with each line longer than COLS (default `width()`) folded at spaces.

    A folded line's continuations are indented past its own indent (a
    bullet's text lines up under the text after '- ').  Lines of a rich
    table are already fitted and kept.
    """
    cols = cols or width()
    out = []
    for line in text.split("\n"):
        if len(line) <= cols or line[:1] in "┏┃┡│└┌├╭╰━─":
            out.append(line)
            continue
        lead = len(line) - len(line.lstrip(" "))
        bullet = line[lead:].startswith("- ")
        out.extend(hang(line, "", lead + 2 if bullet else lead + _HANG, cols))
    return "\n".join(out)


def fold_row(before: str, last: str, cols: int | None = None) -> list[str]:
    """A plain table row: BEFORE (the aligned cells) and its ragged LAST cell, within COLS.

    The last cell folds under itself when at least 24 columns are left for
    it and its first word (a path, say) fits there whole, else it goes on
    lines of its own, indented, below the row.
    """
    cols = cols or width()
    if len(before) + len(last) <= cols:
        return [(before + last).rstrip()]
    room = cols - len(before)
    if room >= 24 and len(last.split(" ", 1)[0]) <= room:
        return hang(before, last, len(before), cols)
    return [before.rstrip(), *hang(" " * _HANG + last, "", _HANG, cols)]


def aligned(
    rows: list[tuple[str, ...]],
    right: frozenset[int] = frozenset(),
    sep: str = "  ",
    fold_last: bool = True,
    cols: int | None = None,
) -> list[str]:
    """The one plain-text table: ROWS (the header first) in columns as wide as their widest cell.

    Columns whose index is in RIGHT are right-aligned (figures), the rest
    left-aligned, SEP between them.  With FOLD_LAST the last cell is ragged
    and folds within COLS (`fold_row`: a record path, a source); without it
    the last column is aligned too and each line ends at its last character.
    Rich tables (report, infer, tune) are the other kind: boxed, for the eye.
    """
    if not rows:
        return []
    n = len(rows[0])
    widths = [max(len(r[i]) for r in rows) for i in range(n)]

    def cells(row, upto):
        return [
            row[i].rjust(widths[i]) if i in right else row[i].ljust(widths[i]) for i in range(upto)
        ]

    if not fold_last:
        return [sep.join(cells(r, n)).rstrip() for r in rows]
    out = []
    for r in rows:
        out += fold_row(sep.join(cells(r, n - 1)) + "  ", r[-1], cols)
    return out
