"""Run records: one JSON document per run, the unit of reproducibility.

Written atomically: temp file + rename on local disk (a reader never sees a
half-written record); a single-object upload on gs://, which GCS makes
visible only once complete.  Reading needs no TensorFlow for local paths, so
reports stay TensorFlow-free.  No secrets: environment variables are never
recorded, and flag values that look like credentials are redacted.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import secrets
import tempfile

from tpubench import errors

SCHEMA_VERSION = 1
STATUSES = ("running", "ok", "failed", "invalid", "interrupted")
_SECRET = re.compile(r"(token|secret|password|credential|api_?key|private_?key)", re.I)


def new_run_id(model: str) -> str:
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{now}-{model}-{secrets.token_hex(3)}"


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def redact_argv(argv: list[str]) -> list[str]:
    """Replaces values of credential-looking flags with '<redacted>'."""
    out = []
    for arg in argv:
        name, sep, _ = arg.partition("=")
        out.append(f"{name}=<redacted>" if sep and _SECRET.search(name) else arg)
    return out


def redact_flags(values: dict) -> dict:
    return {k: ("<redacted>" if _SECRET.search(k) else v) for k, v in values.items()}


def path_for(results_dir: str, run_id: str) -> str:
    return results_dir.rstrip("/") + f"/{run_id}.json"


def write(record: dict, results_dir: str) -> str:
    """Writes RECORD as RESULTS_DIR/<run_id>.json atomically; returns the path."""
    path = path_for(results_dir, record["run_id"])
    # Strict JSON: NaN/inf (a diverged loss, a rate that could not be
    # measured) become null, which every JSON parser accepts.
    text = (
        json.dumps(_finite(record), indent=2, sort_keys=True, default=_jsonable, allow_nan=False)
        + "\n"
    )
    if "://" in results_dir:
        import tensorflow as tf

        tf.io.gfile.makedirs(results_dir)
        with tf.io.gfile.GFile(path, "w") as f:  # one object, visible only when closed
            f.write(text)
        return path
    os.makedirs(results_dir, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{record['run_id']}.", suffix=".tmp", dir=results_dir)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a record is for sharing
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


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


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _jsonable(x):
    if hasattr(x, "item"):  # numpy scalars
        return x.item()
    if isinstance(x, (set, tuple)):
        return list(x)
    if isinstance(x, (dt.date, dt.datetime)):
        return x.isoformat()
    return str(x)


def read(path: str) -> dict:
    """Reads one record; a missing, unreadable or malformed file is a UsageError."""
    try:
        if "://" in path:
            import tensorflow as tf

            with tf.io.gfile.GFile(path, "r") as f:
                text = f.read()
        else:
            with open(path) as f:
                text = f.read()
    except (OSError, Exception) as e:  # tf.errors.OpError for gs://
        if isinstance(e, errors.TpubenchError):
            raise
        raise errors.UsageError(f"cannot read run record {path}: {e}") from None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as e:
        raise errors.UsageError(f"{path} is not a run record (invalid JSON: {e.msg})") from None
    return migrate(record, path)


# Forward migrations: MIGRATIONS[n] turns a schema-n record into schema n+1.
# When the record shape changes, bump SCHEMA_VERSION and add the step here,
# so every older record still reads as the current version.
MIGRATIONS: dict = {}


def migrate(record, path: str = "record") -> dict:
    """Checks that RECORD is a run record and returns it as the current schema.

    Older records are carried forward one version at a time through
    MIGRATIONS; a record newer than this tpubench, or not a record at all, is
    a UsageError naming PATH.
    """
    if not isinstance(record, dict) or "schema_version" not in record or "run_id" not in record:
        raise errors.UsageError(f"{path} is not a tpubench run record (no schema_version/run_id)")
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
