"""Run records: one JSON document per run, the unit of reproducibility.

Written atomically: temp file + rename on local disk (a reader never sees a
half-written record); a single-object upload on gs:// (google-cloud-storage, with status and model
as object metadata), which GCS makes visible only once complete.  Reading
needs no TensorFlow, so reports stay TensorFlow-free.  No secrets: environment variables are never
recorded; flag values that look like credentials and URL credentials (user-info,
token-like query values) are redacted everywhere in a record as it is written
(`redaction.redact`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import os
import re
import secrets

from tpubench.core import errors
from tpubench.storage import (
    files,
    gcs,
    record_limits,
    record_migrations,
    record_text,
    record_view,
    redaction,
)

# 2: the batch once per meaning (record_migrations.v1_to_v2 reads every schema-1 record).
SCHEMA_VERSION = 2
STATUSES = ("running", "ok", "failed", "invalid", "interrupted", "died")
# A labelled run (a sweep's configuration, a study's cell) whose record has one
# of these statuses is done: a rerun of the same command does not run it again.
# failed / interrupted / running / died runs run again (a NaN loss is a result).
DONE_STATUSES = ("ok", "invalid")


def new_run_id(model: str) -> str:
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    # The id is the record's file name: whatever the model is called, it stays one word.
    word = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(model))[:60].lstrip(".-") or "model"
    return f"{now}-{word}-{secrets.token_hex(3)}"


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def checked_run_id(run_id, where: str = "run id") -> str:
    """RUN_ID when it is one safe file-name word, else a BadRecord naming it."""
    if not isinstance(run_id, str) or not record_limits.RUN_ID.fullmatch(run_id):
        raise record_text.BadRecord(
            f"{where} {record_text.short(run_id)} is not a run id (1-200 letters, digits, '.', "
            "'_' or '-', starting with a letter or digit); it would name a file outside the "
            "results directory"
        )
    return run_id


def path_for(results_dir: str, run_id: str) -> str:
    return results_dir.rstrip("/") + f"/{checked_run_id(run_id)}.json"


def attachment_dir(results_dir: str, run_id: str) -> str:
    """Where files kept with a run go: RESULTS_DIR/<run_id>.files/ (no .json inside)."""
    return results_dir.rstrip("/") + f"/{checked_run_id(run_id)}.files"


def write_attachment(results_dir: str, run_id: str, name: str, data: bytes) -> str:
    """Keeps DATA beside run RUN_ID's record as NAME (may hold "/"); returns its path.

    Written atomically like the record, so a reader never sees half a file.
    """
    path = attachment_dir(results_dir, run_id) + "/" + name
    if gcs.is_gcs(results_dir):
        return gcs.write_bytes(path, data, "text/plain")
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    except OSError as e:
        where = os.path.dirname(path)
        raise errors.UsageError(f"cannot create {where}: {e.strerror or e}") from None
    return files.write_atomic(path, data)


def write(record: dict, results_dir: str) -> str:
    """Writes RECORD as RESULTS_DIR/<run_id>.json atomically; returns the path."""
    path = path_for(results_dir, record["run_id"])
    # Whatever part of the record a value reached (argv, flags, config, an
    # error message naming a path), a URL credential never reaches the file.
    record = redaction.redact(record)
    # Strict JSON: NaN/inf (a diverged loss, a rate that could not be
    # measured) become null, which every JSON parser accepts.
    text = (
        json.dumps(_finite(record), indent=2, sort_keys=True, default=_jsonable, allow_nan=False)
        + "\n"
    )
    if gcs.is_gcs(results_dir):
        # One object, visible only once complete; metadata lets a listing show
        # status and model without downloading every record.
        model = record.get("model")
        meta = {
            "status": record.get("status"),
            "kind": record.get("kind"),
            "model": model.get("name") if isinstance(model, dict) else model,
        }
        meta = {k: v for k, v in meta.items() if v}
        return gcs.write_bytes(path, text.encode(), "application/json", meta)
    try:
        os.makedirs(results_dir, exist_ok=True)
    except OSError as e:
        raise errors.UsageError(
            f"cannot create --results_dir={results_dir}: {e.strerror or e}"
        ) from None
    return files.write_atomic(path, text)  # temp file + rename: never half a record


def _finite(x):
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        return _finite(x.item())
    return x


def _jsonable(x):
    if hasattr(x, "item"):  # numpy scalars
        return x.item()
    if isinstance(x, (set, tuple)):
        return list(x)
    if isinstance(x, (dt.date, dt.datetime)):
        return x.isoformat()
    return str(x)


def find(location: str) -> list[str]:
    """Record paths in LOCATION: a record file, a local directory (recursively) or a
    gs:// prefix.  No TensorFlow; an unreadable location is a one-line error."""
    if gcs.is_gcs(location):
        if location.endswith(".json"):
            return [location]
        return gcs.list_objects(location, ".json")
    if os.path.isfile(location):
        return [location]
    if not os.path.exists(location):
        raise errors.UsageError(
            f"{location} does not exist; give a run record, a directory of them (where a "
            "command's --results_dir put them) or a gs:// prefix"
        )
    if not os.path.isdir(location):
        raise errors.UsageError(f"{location} is neither a run record nor a directory of them")
    found = []
    for root, dirs, names in os.walk(location):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [os.path.join(root, f) for f in sorted(names) if f.endswith(".json")]
    return found


def read(path: str) -> dict:
    """Reads one record; a missing, unreadable, oversized or malformed file is a UsageError."""
    return parse(record_text.read_text(path), path)


def parse(text: str, path: str) -> dict:
    """A record from JSON TEXT, migrated to the current schema; anything else a UsageError
    (record_text.loads says which texts are no record)."""
    return migrate(record_text.loads(text, path), path)


# Forward migrations: MIGRATIONS[n] turns a schema-n record into schema n+1.
# When the record shape changes, bump SCHEMA_VERSION and add the step here
# (its code in record_migrations.py), so every older record reads as the current version.
MIGRATIONS: dict = {1: record_migrations.v1_to_v2}


def migrate(record, path: str = "record") -> dict:
    """Checks that RECORD is a run record and returns it as the current schema.

    Older records are carried forward one version at a time through
    MIGRATIONS; a record newer than this tpubench, or not a record at all, is
    a UsageError naming PATH.
    """
    if not isinstance(record, dict) or "schema_version" not in record or "run_id" not in record:
        raise errors.UsageError(f"{path} is not a tpubench run record (no schema_version/run_id)")
    if not isinstance(record["run_id"], str) or not record["run_id"]:
        raise record_text.BadRecord(
            f"{path}: field 'run_id' is {record_text.short(record['run_id'])}, not a string"
        )
    checked_run_id(record["run_id"], f"{path}: field 'run_id'")
    version = record["schema_version"]
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise errors.UsageError(
            f"{path} has schema_version {version!r}; accepted: an integer 1..{SCHEMA_VERSION}"
        )
    if version > SCHEMA_VERSION:
        raise errors.UsageError(
            f"{path} has schema_version {version}; this tpubench reads up to "
            f"{SCHEMA_VERSION} (upgrade tpubench)"
        )
    while version < SCHEMA_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise errors.UsageError(
                f"{path} has schema_version {version}, which this tpubench cannot migrate "
                f"to {SCHEMA_VERSION}"
            )
        record = step(dict(record))
        version += 1
        record["schema_version"] = version
    return record


def typed(record, path: str = "record") -> record_view.RunRecord:
    """RECORD migrated to the current schema (see `migrate`), as a typed RunRecord.

    A section of the wrong shape (a list where a mapping belongs) is a TypeError."""
    return record_view.view(migrate(record, path))


def scan(location: str, skip_dirs=()) -> list[tuple[str, dict]]:
    """(path, record) of every readable run record under LOCATION (a directory, recursively,
    or a gs:// prefix), not looking inside its folders named in SKIP_DIRS; files that are
    not records are skipped, a missing directory has none."""
    if not gcs.is_gcs(location) and not os.path.isdir(location):
        return []
    out = []
    for path in find(location):
        inside = path[len(location) :].strip("/").split("/")[:-1]
        if any(part in skip_dirs for part in inside):
            continue
        try:
            out.append((path, read(path)))
        except errors.TpubenchError:
            continue  # a manifest, a summary, a half-copied file: not a record
    return out


@dataclasses.dataclass(frozen=True)
class Labelled:
    """One record of a labelled run: where it is, the mapping as read, and typed."""

    path: str
    record: dict
    run: record_view.RunRecord


def by_label(location: str) -> dict[str, list[Labelled]]:
    """{run_label: its records under LOCATION, oldest start first}: how sweeps, studies and
    tune find their runs.  model_dirs/ and data/ (checkpoints, prepared data) hold no
    records and are not read; a record whose sections have the wrong shape is skipped."""
    out: dict[str, list[Labelled]] = {}
    for path, record in scan(location, skip_dirs=("model_dirs", "data")):
        label = record.get("run_label")
        if not label or not isinstance(label, str):
            continue
        try:
            out.setdefault(label, []).append(Labelled(path, record, typed(record, path)))
        except (TypeError, errors.TpubenchError):
            continue
    for found in out.values():
        found.sort(key=lambda f: (str(f.record.get("started") or ""), f.path))
    return out
