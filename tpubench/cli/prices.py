"""`tpubench prices [QUERY]`: list catalog rows or price one machine.

Pure functions returning text; `main()` below reads the flags and prints.
"""

from __future__ import annotations

import csv
import difflib
import io
import json

from absl import flags

from tpubench.cli import flag_groups as groups
from tpubench.core import basis, columns, errors, money, safe_text
from tpubench.core.basis import Basis
from tpubench.cost import catalog as catalog_lib
from tpubench.cost import catalog_rows
from tpubench.cost import machine as machine_lib
from tpubench.cost import pricing as pricing_lib

FLAGS = flags.FLAGS

FORMATS = ("table", "csv", "json")
_TABLE_COLUMNS = ("key", "unit", *basis.CHOSEN, "as_of", "status", "source")
_DOUBTFUL = ("unconfirmed", "stale")
_NUMERIC = {*basis.CHOSEN, "count", "unit_price", "subtotal"}


def _table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    """Aligned plain text: numbers right-aligned, text left-aligned, the last column folded."""
    # A --price_catalog is data from anywhere: each cell one safe line.
    rows = [tuple(safe_text.shown(c, None) for c in r) for r in rows]
    right = frozenset(i for i, h in enumerate(headers) if h in _NUMERIC)
    return "\n".join(columns.aligned([headers, *rows], right=right))


def _check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise errors.unknown("--format", fmt, FORMATS)


def format_rows(rows: list[catalog_rows.Row], fmt: str) -> str:
    """Renders catalog rows.

    Args:
      rows: the rows to show, in order.
      fmt: 'table' (aligned text: key, unit, on_demand, spot, as_of, status,
        source), 'csv' (every catalog column, loadable with
        `--price_catalog`) or 'json' (a list of objects).

    Raises:
      UsageError: unknown `fmt`.
    """
    _check_format(fmt)
    if fmt == "json":
        return json.dumps([r.to_dict() for r in rows], indent=2)
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(catalog_rows.COLUMNS + catalog_rows.OPTIONAL_COLUMNS)
        for r in rows:  # notes and sources come from outside: no cell may run as a formula
            writer.writerow([safe_text.csv_cell(v) for v in catalog_rows.csv_values(r)])
        return buf.getvalue().rstrip("\n")
    body = [
        (r.key, r.unit, money.exact(r.on_demand), money.exact(r.spot), r.dated, r.status, r.source)
        for r in rows
    ]
    return _table(_TABLE_COLUMNS, body)


def format_price(price: pricing_lib.HourlyPrice, accel: machine_lib.Accelerators, fmt: str) -> str:
    """Renders a priced machine: one line per part and the total.

    Args:
      price: from `pricing.hourly`.
      accel: the machine's accelerator summary.
      fmt: 'table', 'csv' (one row per part) or 'json'.
    """
    _check_format(fmt)
    if fmt == "json":
        d = price.to_dict()
        d["accelerators"] = accel._asdict()
        return json.dumps(d, indent=2)
    fields = ("count", "key", "row_key", "unit", "unit_price", "subtotal", "as_of", "status")
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow((*fields, "source", "note"))
        for line in price.lines:
            d = line.to_dict()
            writer.writerow([safe_text.csv_cell(d[f]) for f in (*fields, "source", "note")])
        return buf.getvalue().rstrip("\n")
    headers = ("count", "key", "unit", "unit_price", "subtotal", "as_of")
    body = [
        (
            str(line.count),
            line.key,
            line.unit,
            money.exact(line.unit_price),
            money.exact(line.subtotal, 4),
            catalog_rows.dated(line.as_of, line.date_known),
        )
        for line in price.lines
    ]
    out = [f"machine {price.machine} ({accel}), {price.pricing} prices in USD", ""]
    out.append(_table(headers, body))
    # Status and source below the table: beside it they would push a row past 100 columns.
    out += [f"  {line.row_key}: {line.status}, {line.source}" for line in price.lines]
    out += [f"  {line.note}" for line in price.lines if line.note]
    out.append("")
    out.append(f"total {money.exact(price.usd_per_hour, 4)} USD/hour ({price.pricing})")
    # Historical rows only come from an explicit @YEAR pin, so only flag figures
    # the catalog itself doubts.
    doubtful = sorted(
        {f"{line.row_key} ({line.status})" for line in price.lines if line.status in _DOUBTFUL}
    )
    if doubtful:
        out.append(f"check: not a confirmed current price: {', '.join(doubtful)}")
    return "\n".join(out)


def prices_main(
    query: str,
    fmt: str = "table",
    catalog_path: str | None = None,
    machine: str | None = None,
    pricing: str | Basis = Basis.ON_DEMAND,
) -> str:
    """Runs `tpubench prices`: list rows matching QUERY, or price `--machine`.

    Args:
      query: words that must all appear in a row's key, provider, kind,
        status or notes (case-insensitive); '' lists every row.
      fmt: 'table', 'csv' or 'json'.
      catalog_path: `--price_catalog` (local or gs://); None = shipped file.
      machine: `--machine`; when set, print its priced breakdown instead.
      pricing: the basis (`--pricing`, parsed here), used with `machine`.

    Returns:
      The text to print.

    Raises:
      UsageError: bad format/pricing/machine syntax, both QUERY and
        --machine, or nothing matched QUERY.
      PriceError: a malformed catalog or an unknown key in `machine`.
    """
    _check_format(fmt)
    pricing = basis.parse(pricing)
    query = (query or "").strip()
    cat = catalog_lib.load(catalog_path)
    if machine:
        if query:
            raise errors.UsageError(
                f"give either a QUERY ({query!r}) or --machine ({machine!r}), not both"
            )
        price = pricing_lib.hourly(machine, cat, pricing)
        accel = machine_lib.parse(machine).accelerators(cat)
        text = format_price(price, accel, fmt)
        ages = catalog_lib.age_note(
            catalog_rows.dated(line.as_of, line.date_known) for line in price.lines
        )
        return text + (f"\n{ages}" if fmt == "table" else "")
    rows = cat.search(query)
    if not rows:
        raise errors.UsageError(
            f"no price rows in {cat.path} match {query!r}{_suggest(query, cat)}"
        )
    if fmt != "table":  # csv and json list every row (csv loads back with --price_catalog)
        return format_rows(rows, fmt)
    shown, hidden = one_per_price(rows, cat)
    return format_rows(shown, fmt) + "\n\n" + _footer(shown, hidden, cat.path)


def one_per_price(rows: list, cat) -> tuple[list, int]:
    """(ROWS with one current row per key, how many superseded rows were left out).

    A key can have several non-historical rows (a dated row and a later
    snapshot of the same price); lookups use the newest, so the table shows
    that one.  Historical rows are kept: each is a price of its own year.
    """
    current = {}
    for r in rows:
        if r.status != "historical":
            current[r.key] = cat.lookup(r.key)
    out = [r for r in rows if r.status == "historical" or r is current.get(r.key)]
    return out, len(rows) - len(out)


def _footer(rows: list, hidden: int, path: str) -> str:
    now = [r.dated for r in rows if r.status != "historical"]
    old = [r.dated for r in rows if r.status == "historical"]
    parts = [f"{len(rows)} row(s) from {path}"]
    if now:
        parts.append(f"current {catalog_lib.age_note(now)}")
    if old:
        years = sorted({str(r.as_of.year) for r in rows if r.status == "historical"})
        parts.append(
            f"{len(old)} historical row(s) from {', '.join(years)}, kept for old studies "
            "(pin one with KEY@YEAR)"
        )
    if hidden:
        parts.append(
            f"{hidden} superseded row(s) of the same keys left out (--format=csv lists them)"
        )
    return "; ".join(parts)


def import_main(paths: list[str], commit: str | None = None) -> str:
    """Runs `tpubench prices import FILE...`: SkyPilot-format files into the user catalog.

    COMMIT (`--source_commit`) is the snapshot's git commit, kept per row with
    the day the rows were read.  A row whose source spot is above its on-demand
    price is named in one line: it keeps no spot price.
    """
    from tpubench.cost import skypilot_import

    done = skypilot_import.import_files(paths, commit=commit)
    rows = catalog_lib.load_user(done.target)
    text = (
        f"imported {done.written} price row(s) from {len(paths)} file(s) into {done.target} "
        f"({len(rows)} row(s) there; {catalog_lib.age_note(r.dated for r in rows)}); "
        "they override the shipped rows of the same keys"
    )
    if done.spot_refused:  # a spot price above on demand is no discount: never answered on
        text += (
            f"\nspot above on demand in {len(done.spot_refused)} row(s), so no spot price kept "
            "(--pricing=spot refuses them):"
        )
        text += "".join(f"\n  {line}" for line in done.spot_refused)
    if done.left_out:  # what every later command would refuse never enters the catalog
        left_out = done.left_out
        text += f"\nleft out {len(left_out)} row(s) the catalog would refuse:"
        text += "".join(f"\n  {line}" for line in left_out[:10])
        if len(left_out) > 10:
            text += f"\n  ... and {len(left_out) - 10} more"
    return text


def _suggest(query: str, cat: catalog_lib.Catalog) -> str:
    """' (did you mean gcp:v100?)' from the closest keys, or names without the provider."""
    keys = cat.keys()
    by_name = {k.split(":", 1)[1]: k for k in keys}
    words = query.lower().split()
    close = []
    for word in words:
        name = word.split(":", 1)[-1]
        for match in difflib.get_close_matches(name, list(by_name), n=3, cutoff=0.6):
            if by_name[match] not in close:
                close.append(by_name[match])
    hint = f" (did you mean {', '.join(close[:5])}?)" if close else ""
    return f"{hint}; run `tpubench prices` to list every row"


def define():
    flags.DEFINE_enum("format", "table", ["table", "csv", "json"], "Output format.")
    groups.define_pricing(with_override=False)
    flags.DEFINE_string(
        "source_commit",
        None,
        "prices import: the git commit of the skypilot-catalog snapshot the files come "
        "from, kept with each imported row.",
    )


def main(args: list[str], full_argv: list[str]) -> int:
    if args and args[0] == "import":
        print(columns.fold(safe_text.block(import_main(args[1:], FLAGS.source_commit))))
        return 0
    if args and args[0] == "diff":
        from tpubench.cost import catalog_diff

        print(columns.fold(safe_text.block(catalog_diff.main(args[1:]))))
        return 0
    query = " ".join(args)
    outputs = [
        prices_main(query, FLAGS.format, FLAGS.price_catalog, machine, basis.parse(FLAGS.pricing))
        for machine in (FLAGS.machine or [None])
    ]
    text = safe_text.block("\n\n".join(outputs))
    print(columns.fold(text) if FLAGS.format == "table" else text)
    return 0
