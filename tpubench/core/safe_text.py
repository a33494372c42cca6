"""The one sanitiser for text that came from outside: records, flag files, sweep files.

A run record is data from anywhere (a colleague's bucket, a downloaded
results folder), so a model name, a status, an error or a flag value in it
may hold terminal escapes (colour, window title, clear-screen, hyperlinks),
a CR/LF that prints a fake table row, bidi overrides that reorder what is
shown, or zero-width characters that make two names look alike.  Every
such text goes through `shown` before it reaches a console; Markdown and
CSV files go through `markdown_cell` and `csv_cell`.  Pure Python, no
imports from the rest of tpubench, so every command can use it (report,
advise, runs, rerun, the train and infer summaries, study, tune).

What `shown` does, and why:

- C0 controls (NUL..US), DEL and C1 controls (U+0080..U+009F; 0x9B is a
  one-byte CSI on some terminals) become visible escapes (`\\x1b`), so an
  escape sequence prints as text and cannot drive the terminal;
- CR, LF, TAB and the Unicode line and paragraph separators become `\\r`,
  `\\n`, `\\t`, `\\u2028`: one field never splits a line;
- bidi embeddings, overrides and isolates (U+202A..U+202E,
  U+2066..U+2069), the marks (U+200E, U+200F, U+061C) and zero-width or
  invisible characters (U+200B..U+200D, U+2060..U+2064, U+FEFF, U+180E,
  U+00AD) become `\\u202e`-style escapes, so what is shown is what is there;
- a backslash is left as it is: the escapes are for reading, not for
  parsing back, and the record keeps the full value;
- text longer than LIMIT characters is cut with `…` and a count, and a
  short hash of the whole value keeps two long values that share a
  prefix apart in tables and groups.
"""

from __future__ import annotations

import hashlib
import re

DISPLAY_LIMIT = 200  # characters of one field shown on a console or in a chart label

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_INVISIBLE = (
    "\u00ad\u061c\u180e\u200b\u200c\u200d\u200e\u200f\u2028\u2029"
    "\u202a\u202b\u202c\u202d\u202e\u2060\u2061\u2062\u2063\u2064"
    "\u2066\u2067\u2068\u2069\ufeff"
)
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f" + _INVISIBLE + "]")


def _escape(match: re.Match) -> str:
    ch = match.group(0)
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(value, limit: int | None = DISPLAY_LIMIT) -> str:
    """VALUE as one safe line for a console, a table cell or a chart label.

    Args:
      value: any value; non-strings are shown with `str` (None as "").
      limit: at most this many characters of the value are kept (None: all).

    Returns:
      One line with every control, bidi and invisible character escaped
      visibly, cut to LIMIT characters with a marker when longer.
    """
    text = "" if value is None else value if isinstance(value, str) else str(value)
    cut = ""
    if limit is not None and len(text) > limit:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        cut = f"…[{len(text):,} chars, {digest}]"
        text = text[:limit]
    return _UNSAFE.sub(_escape, text) + cut


def block(text: str) -> str:
    """Several lines of console output made safe, keeping their newlines.

    For whole outputs assembled from pieces that were already passed
    through `shown`: it is the last guard, so a piece someone forgot still
    cannot drive the terminal.  It cannot rejoin a line a raw field split.
    """
    return "\n".join(shown(line, None) for line in text.split("\n"))


_MARKDOWN_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def markdown_cell(value, limit: int | None = DISPLAY_LIMIT) -> str:
    """VALUE for a Markdown table cell or line: HTML and table syntax escaped."""
    text = shown(value, limit)
    text = "".join(_MARKDOWN_HTML.get(ch, ch) for ch in text)
    return text.replace("|", "\\|")


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value):
    """VALUE for a CSV cell that a spreadsheet will not run as a formula (OWASP).

    A string starting with = + - @, TAB or CR gets a leading apostrophe,
    unless it is a plain number ("-0.5" stays a number).  Numbers and None
    pass unchanged; strings also lose control characters (escaped).
    """
    if not isinstance(value, str):
        return value
    if value.startswith(_FORMULA_START) and not _is_number(value):
        value = "'" + value
    return _UNSAFE.sub(_escape, value)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return text.strip() == text
