"""Files a scan met that are not run records, rolled up into counts by reason.

A results folder holding thousands of other JSON files (a dataset's
metadata, a copied bucket) used to print one line per file: 10,023 lines for
one result.  Past SHOWN files, `roll_up` keeps one line per reason with the
count, and writes the whole list (path and reason, one per line) to a file
whose path the line names.
"""

from __future__ import annotations

import collections
import os
import tempfile

SHOWN = 5  # up to this many skipped files are listed one per line, as before


def roll_up(excluded: list, make) -> list:
    """EXCLUDED with its `skipped` entries as one entry per reason when there are many.

    Args:
      excluded: load.Excluded items (path, run_id, model, status, reason).
      make: builds an Excluded from (path, run_id, model, status, reason).
    """
    skipped = [x for x in excluded if x.status == "skipped"]
    if len(skipped) <= SHOWN:
        return excluded
    listing = _write_list(skipped)
    by_reason = collections.Counter(x.reason for x in skipped)
    rolled = [
        make(f"{n:,} files", "", "", "skipped", f"{reason} (all {len(skipped):,}: {listing})")
        for reason, n in by_reason.most_common()
    ]
    return [x for x in excluded if x.status != "skipped"] + rolled


def _write_list(skipped: list) -> str:
    """The list of skipped files, one `path<TAB>reason` per line, in a new temporary file."""
    fd, path = tempfile.mkstemp(prefix="tpubench-skipped-", suffix=".txt")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.writelines(f"{x.path}\t{x.reason}\n" for x in skipped)
    return path
