"""`tpubench prices import FILE...`: SkyPilot-format `vms.csv` files into the user catalog.

Each file is read through the checked opener (`core/safe_files`: a regular
file of bounded size), turned into rows by `skypilot.read`, dated by the
file's modification day, and kept with where it came from: the snapshot's
git commit (`--source_commit`, when the user knows it) and the day it was
read (`read_on`).  Rows whose source lists a spot price above on demand keep
no spot price; each is named in one line.  Pure Python.
"""

from __future__ import annotations

import dataclasses
import datetime
import os

from tpubench.core import errors, safe_files
from tpubench.cost import catalog as catalog_lib
from tpubench.cost import catalog_rows, skypilot

# GCP's v9 vms.csv is 2.5 MB, AWS's larger: room to grow, but no unbounded read.
LIMIT = 64 << 20
ACCEPTED = "a SkyPilot-format vms.csv"


@dataclasses.dataclass(frozen=True)
class Imported:
    """What an import did: the catalog written, rows written, lines to show."""

    target: str
    written: int
    left_out: list[str]  # rows the catalog would refuse, one line each
    spot_refused: list[str]  # rows whose source spot is above on demand, one line each


def read_file(path: str, commit: str = "") -> list[catalog_rows.Row]:
    """The catalog rows of one SkyPilot-format file, dated by its modification day.

    Raises:
      PriceError: unreadable (missing, not a regular file, too large, not
        UTF-8) or not in SkyPilot's format; one line naming PATH.
    """
    try:
        text = safe_files.read_text(path, "", LIMIT, ACCEPTED)
        as_of = datetime.date.fromtimestamp(os.path.getmtime(path))
    except errors.UsageError as e:
        raise errors.PriceError(f"cannot read {e}") from None
    except OSError as e:
        raise errors.PriceError(f"cannot read {path}: {e.strerror or e}") from None
    return skypilot.read(text, path, as_of, commit)


def check_commit(commit: str | None) -> str:
    """COMMIT lower-cased ('' for none), or the one-line UsageError naming it."""
    commit = (commit or "").strip().lower()
    if commit and not catalog_rows.COMMIT_RE.match(commit):
        raise errors.UsageError(
            f"--source_commit={commit!r} is not {catalog_rows.COMMIT_FORM} (the commit of "
            "the skypilot-catalog snapshot the files come from)"
        )
    return commit


def import_files(
    paths: list[str],
    user_path: str | None = None,
    commit: str | None = None,
    today: datetime.date | None = None,
) -> Imported:
    """Reads SkyPilot-format files into the user catalog.

    Rows of the user catalog with the same key and date are replaced; others
    kept.  A row the catalog would refuse once written (a NaN or negative
    price, an instance name that is no valid key) is left out and named.

    Args:
      paths: the files.
      user_path: the catalog to write (default `catalog.user_path()`).
      commit: the snapshot's git commit (`--source_commit`), kept per row.
      today: the read date kept per row (default: today).

    Raises:
      UsageError: no FILE given, or a malformed COMMIT.
      PriceError: a file is unreadable or not in SkyPilot's format.
    """
    if not paths:
        raise errors.UsageError(
            "tpubench prices import needs FILE arguments: SkyPilot-format vms.csv files, "
            "e.g. catalogs/v9/gcp/vms.csv"
        )
    commit = check_commit(commit)
    read_on = today or datetime.date.today()
    new: list[catalog_rows.Row] = []
    left_out: list[str] = []
    for path in paths:
        for row in read_file(path, commit):
            row = dataclasses.replace(row, source_commit=commit, read_on=read_on)
            try:
                new.append(catalog_rows.check(row, f"{path}: {row.key}"))
            except errors.PriceError as e:
                left_out.append(str(e))
    if not new:
        raise errors.PriceError(
            f"no usable price row in {', '.join(paths)}"
            + (f" ({len(left_out)} refused, e.g. {left_out[0]})" if left_out else "")
        )
    target = user_path or catalog_lib.user_path()
    kept: list[catalog_rows.Row] = []
    if os.path.exists(target):
        fresh = {(r.key, r.as_of) for r in new}
        kept = [r for r in catalog_lib.load_user(target) if (r.key, r.as_of) not in fresh]
    catalog_lib.write(kept + new, target)
    refused = [f"{r.key}: {r.spot_refused}" for r in new if r.spot_refused]
    return Imported(target, len(new), left_out, refused)
