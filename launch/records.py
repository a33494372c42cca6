"""Run records as the launcher sees them: JSON files it reads, amends and writes.

tpubench writes one record per run; the launcher never imports tpubench, so
it reads the files as plain JSON.  It finds its runs by `run_label` (the
`--run_label` flag it passes), amends a record by rewriting the whole file
atomically (temp file in the same directory + os.replace), and writes a
schema-v1 record of its own when a run died before its chief wrote one.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import pathlib
import secrets
import tempfile

SCHEMA_VERSION = 1
# A configuration whose record has one of these statuses is done: a resumed
# sweep skips it.  failed / interrupted / running configurations run again.
DONE_STATUSES = ("ok", "invalid")


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def new_run_id(kind: str) -> str:
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{kind}-{secrets.token_hex(3)}"


def read_all(results_dir: str | os.PathLike) -> list[tuple[pathlib.Path, dict]]:
    """(path, record) for every readable run record in RESULTS_DIR, oldest first.

    Files that are not JSON objects with a run_id (half-copied, foreign) are
    skipped: a results directory is shared and a bad file must not stop a sweep.
    """
    d = pathlib.Path(results_dir)
    if not d.is_dir():
        return []
    out = []
    for path in sorted(d.glob("*.json"), key=lambda p: p.stat().st_mtime_ns):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and "run_id" in record:
            out.append((path, record))
    return out


def with_label(results_dir, label: str, exclude=()) -> list[tuple[pathlib.Path, dict]]:
    """Records in RESULTS_DIR whose run_label is LABEL (not in EXCLUDE), oldest first."""
    skip = {pathlib.Path(p) for p in exclude}
    return [
        (p, r) for p, r in read_all(results_dir) if r.get("run_label") == label and p not in skip
    ]


def write_atomic(path: str | os.PathLike, record: dict) -> str:
    """Writes RECORD to PATH so that a reader never sees a half-written file."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(record, indent=2, sort_keys=True, allow_nan=False, default=str) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return str(path)
