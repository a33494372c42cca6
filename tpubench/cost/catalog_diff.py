"""`tpubench prices diff OLD NEW`: what changed between two price catalog snapshots.

OLD and NEW are each a tpubench catalog CSV (the shipped `prices.csv`, a
`--price_catalog` file, a `tpubench prices --format=csv` output), a
SkyPilot-format `vms.csv` of any schema the importer reads (v7 to v9, read
as `prices import` would), or one of two words: `shipped` (the catalog
tpubench ships) and `user` (the user catalog `prices import` writes).  Each
side is reduced to its current row per key (the newest row not marked
historical, as lookups use it); keys are compared by their on-demand and
spot prices.  A spot price refused at import (above on demand) is shown as
`refused`.  Pure Python.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib.resources
import os

from tpubench.core import basis, columns, errors, money, safe_files
from tpubench.cost import catalog as catalog_lib
from tpubench.cost import catalog_rows, skypilot, skypilot_import

WORDS = {"shipped": "the catalog tpubench ships", "user": "the user catalog (prices import)"}
FORM = (
    "a catalog CSV, a SkyPilot-format vms.csv, 'shipped' or 'user' "
    "(e.g. tpubench prices diff shipped user)"
)


@dataclasses.dataclass(frozen=True)
class Side:
    """One snapshot: what it is called, and its current row per key."""

    label: str
    rows: dict[str, catalog_rows.Row]


def load(spec: str) -> Side:
    """The snapshot SPEC names (see the module docstring).

    Raises:
      PriceError: unreadable, or neither a catalog nor a SkyPilot file; one line.
    """
    if spec == "shipped":
        text = importlib.resources.files("tpubench.cost").joinpath("prices.csv").read_text()
        return _side("shipped catalog", catalog_rows.parse(text, "shipped prices.csv"))
    if spec == "user":
        path = catalog_lib.user_path()
        rows = catalog_lib.load_user(path)
        if not rows:
            raise errors.PriceError(
                f"user: the user catalog {path} has no rows (write it with tpubench prices "
                "import FILE...)"
            )
        return _side(f"user catalog {path}", rows)
    try:
        text = safe_files.read_text(spec, "", skypilot_import.LIMIT, FORM)
    except errors.UsageError as e:
        raise errors.PriceError(f"cannot read {e}") from None
    header = text.lstrip("\ufeff").split("\n", 1)[0]
    fields = {h.strip() for h in header.split(",")}
    if "InstanceType" in fields:
        as_of = datetime.date.fromtimestamp(os.path.getmtime(spec))
        return _side(spec, skypilot.read(text, spec, as_of))
    if "key" in fields:
        return _side(spec, catalog_rows.parse(text, spec))
    raise errors.PriceError(
        f"{spec}: neither a price catalog (no 'key' column) nor a SkyPilot vms.csv (no "
        f"'InstanceType' column); expected {FORM}"
    )


def _side(label: str, rows: list[catalog_rows.Row]) -> Side:
    cat = catalog_lib.Catalog(rows, label)
    current = {}
    for key in sorted({r.key for r in rows}):
        now = [r for r in cat.rows_for(key) if r.status != "historical"]
        if now:
            current[key] = now[-1]
    return Side(label, current)


def _spot(row: catalog_rows.Row) -> str:
    return "refused" if row.spot_refused and row.spot is None else money.exact(row.spot)


def _prices(row: catalog_rows.Row) -> tuple[str, str]:
    return money.exact(row.on_demand), _spot(row)


def diff(old: Side, new: Side) -> tuple[list[tuple[str, ...]], int]:
    """(one line per added, removed or changed key, sorted by key; how many are unchanged).

    Each line: change ('+' added, '-' removed, '~' changed), key, on demand
    (old -> new), spot (old -> new), dates (old -> new).
    """
    lines, same = [], 0
    for key in sorted(set(old.rows) | set(new.rows)):
        a, b = old.rows.get(key), new.rows.get(key)
        if a and b and _prices(a) == _prices(b):
            same += 1
            continue
        mark = "~" if a and b else ("+" if b else "-")
        pa, pb = _prices(a) if a else ("", ""), _prices(b) if b else ("", "")
        lines.append(
            (
                mark,
                key,
                _arrow(pa[0], pb[0]),
                _arrow(pa[1], pb[1]),
                _arrow(a.dated if a else "", b.dated if b else ""),
            )
        )
    return lines, same


def _arrow(old: str, new: str) -> str:
    if not old:
        return new
    if not new:
        return old
    return old if old == new else f"{old} -> {new}"


def render(old: Side, new: Side) -> str:
    """The diff as aligned text, then a one-line summary naming both sides."""
    lines, same = diff(old, new)
    counts = {m: sum(1 for x in lines if x[0] == m) for m in "+-~"}
    summary = (
        f"{counts['+']} added (+), {counts['-']} removed (-), {counts['~']} changed (~), "
        f"{same} unchanged; OLD {old.label}, NEW {new.label}"
    )
    if not lines:
        return f"no price changed\n{summary}"
    head = ("", "key", *basis.CHOSEN, "as_of")
    return "\n".join(columns.aligned([head, *lines])) + "\n\n" + summary


def main(args: list[str]) -> str:
    """Runs `tpubench prices diff OLD NEW`.

    Raises:
      UsageError: not exactly two arguments.
      PriceError: an argument names no readable snapshot.
    """
    if len(args) != 2:
        got = " ".join(args) or "nothing"
        raise errors.UsageError(f"tpubench prices diff needs OLD and NEW (got {got}); each {FORM}")
    return render(load(args[0]), load(args[1]))
