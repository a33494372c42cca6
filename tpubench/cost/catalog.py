"""The dated price catalog: a CSV of hourly prices, one row per priced item.

The shipped catalog (`tpubench/cost/prices.csv`) is edited by hand and
nothing fetches prices at run time, so every figure tpubench prints can be
traced to a row with a date, a source and a status.  Several rows may share
a key: the current one and historical ones kept so that old studies can be
reproduced.  `key@2017` picks an older row.

This module must import without TensorFlow: only a `gs://` catalog path
pulls TensorFlow in, lazily.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime
import importlib.resources
import io
import math
import os
import re
from collections.abc import Iterable

from tpubench import errors

# fmt: off
COLUMNS = ("key", "provider", "kind", "region", "unit", "count",
           "on_demand", "spot", "as_of", "source", "status", "notes")
# fmt: on
# Optional: `date_known` "no" marks a row whose price date nobody knows (copied
# from a snapshot of unknown date, or typed from memory): `as_of` is then the
# day the row was read, and every place that shows its age says so.
OPTIONAL_COLUMNS = ("date_known",)
KINDS = ("instance", "gpu", "tpu", "vcpu", "memory")
STATUSES = ("confirmed", "unconfirmed", "stale", "derived", "historical")
PRICINGS = ("on_demand", "spot")

# Keys are `provider:name`; `+` and `@` are --machine syntax, so they cannot
# appear inside a key.
KEY_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*:[a-z0-9][a-z0-9._-]*$")
KEY_FORM = "provider:name in lowercase letters, digits, '.', '-', '_', e.g. gcp:v100"
WHEN_RE = re.compile(r"^\d{4}(-\d{2}-\d{2})?$")
WHEN_FORM = "YYYY or YYYY-MM-DD, e.g. gcp:k80@2017"
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


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

    def to_dict(self) -> dict:
        """Returns the row as JSON-friendly values (as_of as an ISO string)."""
        d = dataclasses.asdict(self)
        d["as_of"] = self.as_of.isoformat()
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


class Catalog:
    """Rows of a price catalog, indexed by key.

    Attributes:
      rows: every row, in file order.
      path: where the rows were read from (for messages).
    """

    def __init__(self, rows: Iterable[Row], path: str):
        self.rows: tuple[Row, ...] = tuple(rows)
        self.path = path
        self._by_key: dict[str, list[Row]] = {}
        for row in self.rows:
            self._by_key.setdefault(row.key, []).append(row)
        for rows_of_key in self._by_key.values():
            rows_of_key.sort(key=lambda r: r.as_of)

    def keys(self) -> list[str]:
        """Returns the distinct keys, sorted."""
        return sorted(self._by_key)

    def __contains__(self, key: str) -> bool:
        return key.lower() in self._by_key

    def rows_for(self, key: str) -> list[Row]:
        """Returns every row of `key`, oldest first (empty if unknown)."""
        return list(self._by_key.get(key.lower(), ()))

    def lookup(self, key: str, when: str | None = None) -> Row:
        """Returns the row priced for `key`.

        Args:
          key: a catalog key such as `gcp:v100`; `gcp:k80@2017` is accepted
            as a short form of `when`.
          when: None for the current row (the newest whose status is not
            `historical`), `YYYY` for the newest row dated that year, or
            `YYYY-MM-DD` for the row with exactly that `as_of`.

        Raises:
          PriceError: unknown key (with close matches), no row for `when`,
            or only historical rows and no `when`.
          UsageError: `when` is not YYYY or YYYY-MM-DD.
        """
        if "@" in key:
            key, _, inline_when = key.partition("@")
            if when is not None and when != inline_when:
                raise errors.UsageError(
                    f"price key {key!r} pinned twice: @{inline_when} and {when}"
                )
            when = inline_when
        key = key.strip().lower()
        rows = self._by_key.get(key)
        if not rows:
            raise errors.PriceError(
                f"unknown price key {key!r} in {self.path}{errors.choices_hint(key, self.keys())}"
            )
        if when is None:
            current = [r for r in rows if r.status != "historical"]
            if not current:
                pins = " or ".join(sorted({f"{key}@{r.as_of.year}" for r in rows}))
                raise errors.PriceError(
                    f"{key} has only historical prices ({_dates(rows)}); pin one with {pins}"
                )
            return current[-1]
        if not WHEN_RE.match(when):
            raise errors.UsageError(f"bad date {when!r} after {key}@ (expected {WHEN_FORM})")
        if len(when) == 4:
            matches = [r for r in rows if r.as_of.year == int(when)]
        else:
            matches = [r for r in rows if r.as_of.isoformat() == when]
        if not matches:
            raise errors.PriceError(f"no {key} price dated {when}; rows: {_dates(rows)}")
        return matches[-1]

    def search(self, query: str) -> list[Row]:
        """Returns the rows matching every word of `query`, in file order.

        A word matches a row when it is a case-insensitive substring of the
        row's key, provider, kind, status or notes.  An empty query returns
        every row.
        """
        words = query.lower().split()

        def haystack(r: Row) -> str:
            return " ".join((r.key, r.provider, r.kind, r.status, r.notes)).lower()

        return [r for r in self.rows if all(w in haystack(r) for w in words)]


def months_between(earlier: datetime.date, later: datetime.date) -> int:
    """Whole calendar months from `earlier` to `later` (0 if `later` is not after it)."""
    months = (later.year - earlier.year) * 12 + later.month - earlier.month
    if later.day < earlier.day:
        months -= 1
    return max(months, 0)


def age_note(dates: Iterable, today: datetime.date | None = None) -> str:
    """Says how old the prices used are: 'prices as of 2025-01-01 (22 months old)'.

    Args:
      dates: the rows' dates as `dated` shows them (date objects or ISO
        strings, or 'date unknown (read 2026-11-23)').
      today: the reference day (default: today).

    Returns:
      One phrase; a range names the oldest age ('prices as of 2025-01-01 to
      2026-11-23; the oldest 22 months old'); rows of unknown date are named
      as such, never given an age; 'no prices used' if `dates` is empty.
    """
    known, unknown = set(), set()
    for d in dates:
        m = _UNKNOWN_RE.match(str(d))
        if m:
            unknown.add(m.group(1))
        else:
            known.add(d if isinstance(d, datetime.date) else datetime.date.fromisoformat(str(d)))
    read = ", ".join(sorted(unknown))
    if not known:
        return f"prices of unknown date (read {read})" if unknown else "no prices used"
    note = _age(sorted(known), today)
    return f"{note}; some of unknown date (read {read})" if unknown else note


def _age(parsed: list, today: datetime.date | None) -> str:
    today = today or datetime.date.today()
    months = months_between(parsed[0], today)
    age = "less than a month old" if months == 0 else f"{months} month{'s' * (months != 1)} old"
    if len(parsed) == 1:
        return f"prices as of {parsed[0].isoformat()} ({age})"
    return f"prices as of {parsed[0].isoformat()} to {parsed[-1].isoformat()}; the oldest {age}"


def _dates(rows: Iterable[Row]) -> str:
    return ", ".join(f"{r.dated} ({r.status})" for r in rows)


USER_FILE = "prices.csv"


def user_path() -> str:
    """The user catalog written by `tpubench prices import`: $TPUBENCH_CACHE/prices.csv
    (default ~/.cache/tpubench/prices.csv)."""
    from tpubench import cache

    return cache.path(USER_FILE)


def load_user(path: str | None = None) -> list[Row]:
    """The user catalog's rows ([] when there is none)."""
    path = path or user_path()
    if not os.path.exists(path):
        return []
    return parse(_read_text(path), path)


def write(rows: Iterable[Row], path: str) -> None:
    """Writes rows as a catalog CSV, atomically (a temp file, then a rename)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(COLUMNS + OPTIONAL_COLUMNS)
        for r in rows:
            w.writerow(csv_values(r))
    os.replace(tmp, path)


def load(path: str | None = None) -> Catalog:
    """Reads and validates a price catalog.

    Args:
      path: a local CSV file or a `gs://` object; None reads the catalog
        shipped with tpubench, overridden by the user catalog (`user_path()`)
        where that has rows: a key the user catalog prices keeps only the
        shipped rows marked historical.

    Returns:
      The validated catalog.

    Raises:
      PriceError: the file is missing, unreadable or malformed; the message
        names the file, line, column and bad value.
    """
    if path is None:
        resource = importlib.resources.files("tpubench.cost").joinpath("prices.csv")
        name = str(resource)
        try:
            text = resource.read_text(encoding="utf-8")
        except OSError as e:  # a broken install, not a user error, but say so plainly
            raise errors.PriceError(f"cannot read the shipped price catalog {name}: {e}") from e
    else:
        return Catalog(parse(_read_text(path), path), path)
    rows = parse(text, name)
    user = load_user()
    if user:
        mine = {r.key for r in user}
        rows = [r for r in rows if r.key not in mine or r.status == "historical"] + user
        name = f"{name} + {user_path()}"
    return Catalog(rows, name)


def _read_text(path: str) -> str:
    if path.startswith("gs://"):
        from tpubench import gcs  # google-cloud-storage: no TensorFlow for prices

        try:
            return gcs.read_bytes(path).decode("utf-8")
        except UnicodeDecodeError as e:
            raise errors.PriceError(f"cannot read price catalog {path}: {e}") from e
        except errors.DataError as e:
            raise errors.PriceError(f"price catalog: {e}") from None
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise errors.PriceError(f"cannot read price catalog {path}: {reason}") from e


def csv_values(row: Row) -> list:
    """ROW's fields in COLUMNS + OPTIONAL_COLUMNS order, as a catalog CSV holds them."""
    d = row.to_dict()
    d["date_known"] = "" if row.date_known else "no"
    return ["" if d[c] is None else d[c] for c in COLUMNS + OPTIONAL_COLUMNS]


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
    on_demand = _price(v["on_demand"], "on_demand", where)
    spot = _price(v["spot"], "spot", where)
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
    )


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
