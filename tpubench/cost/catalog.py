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
import datetime
import importlib.resources
import os
from collections.abc import Iterable

from tpubench.core import errors, safe_files
from tpubench.cost.catalog_rows import (
    _UNKNOWN_RE,
    COLUMNS,
    OPTIONAL_COLUMNS,
    WHEN_FORM,
    WHEN_RE,
    Row,
    csv_values,
    parse,
)


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
            hint = errors.choices_hint(key, self.keys(), listed_by="tpubench prices")
            raise errors.PriceError(f"unknown price key {key!r} in {self.path}{hint}")
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
    from tpubench.storage import cache

    return cache.path(USER_FILE)


def load_user(path: str | None = None) -> list[Row]:
    """The user catalog's rows ([] when there is none)."""
    path = path or user_path()
    if not os.path.exists(path):
        return []
    return parse(_read_text(path, "user catalog"), path)


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


def _read_text(path: str, key: str = "--price_catalog") -> str:
    limit, accepted = safe_files.PATH_FLAGS["price_catalog"]
    if path.startswith("gs://"):
        from tpubench.storage import gcs  # google-cloud-storage: no TensorFlow for prices

        try:
            return gcs.read_bytes(path, limit=limit).decode("utf-8")
        except UnicodeDecodeError as e:
            raise errors.PriceError(f"cannot read price catalog {path}: {e}") from e
        except (errors.DataError, errors.UsageError) as e:
            raise errors.PriceError(f"price catalog: {e}") from None
    # A path from a flag, a sweep or a record: a regular file of bounded size, read once.
    try:
        return safe_files.read_text(path, key, limit, accepted)
    except errors.UsageError as e:
        raise errors.PriceError(f"cannot read price catalog: {e}") from None
