"""The price catalog's CSV format: columns, one validated Row, parsing.  Pure Python."""

from __future__ import annotations

import csv
import dataclasses
import datetime
import io
import math
import re

from tpubench.core import errors
from tpubench.core.basis import Basis

# fmt: off
COLUMNS = ("key", "provider", "kind", "region", "unit", "count",
           Basis.ON_DEMAND, Basis.SPOT, "as_of", "source", "status", "notes")
# fmt: on
# Optional: `date_known` "no" marks a row whose price date nobody knows (copied
# from a snapshot of unknown date, or typed from memory): `as_of` is then the
# day the row was read, and every place that shows its age says so.  An imported
# row keeps where it came from: `source_commit` (the snapshot's git commit, when
# known) and `read_on` (the day it was read); `spot_refused` says why the row has
# no spot price although its source listed one (a spot price above on demand).
OPTIONAL_COLUMNS = ("date_known", "source_commit", "read_on", "spot_refused")
KINDS = ("instance", "gpu", "tpu", "vcpu", "memory")
STATUSES = ("confirmed", "unconfirmed", "stale", "derived", "historical")

# Keys are `provider:name`; `+` and `@` are --machine syntax, so they cannot
# appear inside a key.
KEY_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*:[a-z0-9][a-z0-9._-]*$")
KEY_FORM = "provider:name in lowercase letters, digits, '.', '-', '_', e.g. gcp:v100"
WHEN_RE = re.compile(r"^\d{4}(-\d{2}-\d{2})?$")
WHEN_FORM = "YYYY or YYYY-MM-DD, e.g. gcp:k80@2017"
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
COMMIT_RE = re.compile(r"^[0-9a-f]{7,40}$")
COMMIT_FORM = "a git commit: 7 to 40 hex digits, e.g. 2c3d7ea7d76b"


@dataclasses.dataclass(frozen=True)
class Row:
    """One catalog row: the price of one unit (an instance, a GPU, a chip...) per hour.

    `on_demand` or `spot` is None when the row does not give that price (a
    historical row may quote only a preemptible price); at least one is set.
    """

    key: str
    provider: str
    kind: str
    region: str
    unit: str
    count: int
    on_demand: float | None
    spot: float | None
    as_of: datetime.date
    source: str
    status: str
    notes: str
    date_known: bool = True  # False: as_of is the day the row was read, not the price's date
    source_commit: str = ""  # the source snapshot's git commit ('' when not known)
    read_on: datetime.date | None = None  # the day an import read the row
    spot_refused: str = ""  # why spot is empty although the source listed one

    def to_dict(self) -> dict:
        """Returns the row as JSON-friendly values (dates as ISO strings)."""
        d = dataclasses.asdict(self)
        d["as_of"] = self.as_of.isoformat()
        d["read_on"] = self.read_on.isoformat() if self.read_on else None
        return d

    @property
    def dated(self) -> str:
        """'2025-01-01', or 'date unknown (read 2026-11-23)'."""
        return dated(self.as_of, self.date_known)


def dated(as_of, known: bool = True) -> str:
    """How a row's date is shown: its as_of, or that the price's date is unknown."""
    day = as_of.isoformat() if isinstance(as_of, datetime.date) else str(as_of)
    return day if known else f"date unknown (read {day})"


_UNKNOWN_RE = re.compile(r"^date unknown \(read (\d{4}-\d{2}-\d{2})\)$")


def csv_values(row: Row) -> list:
    """ROW's fields in COLUMNS + OPTIONAL_COLUMNS order, as a catalog CSV holds them."""
    d = row.to_dict()
    d["date_known"] = "" if row.date_known else "no"
    return ["" if d[c] is None else d[c] for c in COLUMNS + OPTIONAL_COLUMNS]


def refused_spot(row: Row) -> str:
    """Why a spot answer on ROW is refused, one line ('' when spot is simply not listed)."""
    if row.spot is not None or not row.spot_refused:
        return ""
    return f"no spot price in catalog row {row.key} ({row.dated}): {row.spot_refused}"


def check(row: Row, where: str) -> Row:
    """ROW as a catalog file would read it back, or the PriceError that reading would raise.

    Rows made by code (an import) pass the same checks as rows read from a
    file, so nothing is written that every later command would refuse.
    """
    values = dict(zip(COLUMNS + OPTIONAL_COLUMNS, (str(v) for v in csv_values(row)), strict=True))
    return _row(values, where)


def parse(text: str, name: str = "prices.csv") -> list[Row]:
    """Parses and validates catalog CSV text.

    Args:
      text: the CSV content, header first.
      name: the file name used in error messages.

    Returns:
      The rows in file order.

    Raises:
      PriceError: on the first problem, naming `name`, the line and the value.
    """
    text = text.lstrip("\ufeff")  # spreadsheets like to save a BOM
    if not text.strip():
        raise errors.PriceError(f"{name}: empty file (expected a header line: {','.join(COLUMNS)})")
    reader = csv.reader(io.StringIO(text, newline=""))
    header = [h.strip() for h in next(reader)]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise errors.PriceError(
            f"{name} line 1: header is missing column(s) {', '.join(missing)} "
            f"(expected {','.join(COLUMNS)})"
        )
    rows: list[Row] = []
    seen: dict[tuple[str, datetime.date], int] = {}
    for fields in reader:
        line = reader.line_num
        if not any(f.strip() for f in fields):
            continue  # blank lines are harmless in a hand-edited file
        if len(fields) != len(header):
            raise errors.PriceError(
                f"{name} line {line}: {len(fields)} fields, but the header has {len(header)} "
                "(quote values that contain commas)"
            )
        values = {h: v.strip() for h, v in zip(header, fields, strict=True)}
        row = _row(values, f"{name} line {line}")
        if (row.key, row.as_of) in seen:
            raise errors.PriceError(
                f"{name} line {line}: key {row.key!r} has two rows dated {row.as_of} "
                f"(the other on line {seen[row.key, row.as_of]}); give each row its own as_of"
            )
        seen[row.key, row.as_of] = line
        rows.append(row)
    if not rows:
        raise errors.PriceError(f"{name}: no price rows after the header")
    return rows


def _row(v: dict[str, str], where: str) -> Row:
    key = v["key"].lower()
    if not key:
        raise errors.PriceError(f"{where}: key is empty (expected {KEY_FORM})")
    if not KEY_RE.match(key):
        what = "has no provider prefix" if ":" not in key else "is not a valid key"
        raise errors.PriceError(f"{where}: key {v['key']!r} {what} (expected {KEY_FORM})")
    provider = v["provider"].lower()
    if provider != key.split(":", 1)[0]:
        raise errors.PriceError(
            f"{where}: provider {v['provider']!r} does not match the key prefix of {key!r}"
        )
    kind = v["kind"].lower()
    if kind not in KINDS:
        raise errors.PriceError(f"{where}: kind {v['kind']!r} is not one of {', '.join(KINDS)}")
    if not v["unit"]:
        raise errors.PriceError(f"{where}: unit is empty (expected e.g. gpu-hour, chip-hour)")
    if not re.fullmatch(r"\d+", v["count"]):
        raise errors.PriceError(
            f"{where}: count {v['count']!r} is not a whole number (expected how many "
            "accelerators one unit carries, 0 for none)"
        )
    on_demand = _price(v[Basis.ON_DEMAND], Basis.ON_DEMAND, where)
    spot = _price(v[Basis.SPOT], Basis.SPOT, where)
    if on_demand is None and spot is None:
        raise errors.PriceError(f"{where}: on_demand and spot are both empty (give at least one)")
    if not _DATE_RE.match(v["as_of"]):
        raise errors.PriceError(
            f"{where}: as_of {v['as_of']!r} is not a date (expected YYYY-MM-DD)"
        )
    try:
        as_of = datetime.date.fromisoformat(v["as_of"])
    except ValueError as e:
        raise errors.PriceError(f"{where}: as_of {v['as_of']!r} is not a valid date ({e})") from e
    if not v["source"]:
        raise errors.PriceError(f"{where}: source is empty (say where the price comes from)")
    status = v["status"].lower()
    if status not in STATUSES:
        raise errors.PriceError(
            f"{where}: status {v['status']!r} is not one of {', '.join(STATUSES)}"
        )
    known = v.get("date_known", "").lower()
    if known not in ("", "yes", "no"):
        raise errors.PriceError(
            f"{where}: date_known {v['date_known']!r} is not one of yes, no (empty: yes)"
        )
    commit = v.get("source_commit", "").lower()
    if commit and not COMMIT_RE.match(commit):
        raise errors.PriceError(
            f"{where}: source_commit {v['source_commit']!r} is not {COMMIT_FORM}"
        )
    read_on = _optional_date(v.get("read_on", ""), "read_on", where)
    refused = v.get("spot_refused", "")
    if refused and spot is not None:
        raise errors.PriceError(
            f"{where}: spot_refused is set, so spot must be empty (it is {v[Basis.SPOT]!r})"
        )
    return Row(
        key=key,
        provider=provider,
        kind=kind,
        region=v["region"],
        unit=v["unit"],
        count=int(v["count"]),
        on_demand=on_demand,
        spot=spot,
        as_of=as_of,
        source=v["source"],
        status=status,
        notes=v["notes"],
        date_known=known != "no",
        source_commit=commit,
        read_on=read_on,
        spot_refused=refused,
    )


def _optional_date(text: str, column: str, where: str) -> datetime.date | None:
    if not text:
        return None
    try:
        if not _DATE_RE.match(text):
            raise ValueError("not YYYY-MM-DD")
        return datetime.date.fromisoformat(text)
    except ValueError:
        raise errors.PriceError(
            f"{where}: {column} {text!r} is not a date (expected YYYY-MM-DD)"
        ) from None


def _price(text: str, column: str, where: str) -> float | None:
    if not text:
        return None
    expected = "(expected a price in USD per unit, e.g. 2.48)"
    try:
        value = float(text)
    except ValueError:
        raise errors.PriceError(f"{where}: {column} {text!r} is not a number {expected}") from None
    if not math.isfinite(value) or value < 0:
        raise errors.PriceError(
            f"{where}: {column} {text!r} is not a non-negative price {expected}"
        )
    return value
