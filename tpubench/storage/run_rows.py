"""`tpubench runs`: one row per run record, every field checked before it is shown."""

from __future__ import annotations

import math

from tpubench.core import errors
from tpubench.storage import liveness, record_text, records

# (field, accepted types, what the message calls them) for what `tpubench runs` shows.
_ROW_FIELDS = (
    ("run_id", (str,), "a string"),
    ("kind", (str,), "a string"),
    ("status", (str, type(None)), "a string"),
    ("model", (str, type(None)), "a model name"),
    ("examples_per_sec", (int, float, type(None)), "a number"),
    ("started", (str, type(None)), "a time stamp"),
    ("error", (str, type(None)), "a string"),
)


def summary_rows(locations: list[str], warn=None) -> list[dict]:
    """One row per readable run record under LOCATIONS.

    JSON files that are not records (manifests, metrics) are skipped quietly;
    a record too large to load or with fields of the wrong type is skipped
    with WARN(message), so one bad file never hides the others.
    """
    rows = []
    for location in locations:
        for path in records.find(location):
            try:
                rows.append(_summary_row(records.read(path), path))
            except record_text.BadRecord as e:
                if warn:
                    warn(f"skipped {e}")
            except errors.TpubenchError:
                continue  # manifests, metrics and other JSON files live beside records
    return sorted(rows, key=lambda x: x["started"] or "")


def _summary_row(r: dict, path: str) -> dict:
    res = r.get("results") or {}
    model = r.get("model") or None
    if not isinstance(res, dict):
        raise record_text.BadRecord(
            f"{path}: field 'results' is {record_text.short(res)}, not a mapping"
        )
    row = {
        "run_id": r["run_id"],
        "kind": r.get("kind", "train"),
        "status": liveness.status(r),  # `died` for a `running` run whose process is gone
        "model": model.get("name") if isinstance(model, dict) else model,
        "examples_per_sec": res.get("examples_per_sec"),
        "started": r.get("started"),
        "path": path,
        "error": r.get("error"),
        "refused": r.get("refused") is True,  # flags or hardware refused: nothing ran
        "io_blocked_share": _number(res.get("io_blocked_share")),
        "io_blocked_seconds": _number(res.get("io_blocked_seconds")),
    }
    for field, types, what in _ROW_FIELDS:
        value = row[field]
        if not isinstance(value, types) or isinstance(value, bool):
            raise record_text.BadRecord(
                f"{path}: field {field!r} is {record_text.short(value)}, not {what}"
            )
    row["examples_per_sec"] = _rate(row["examples_per_sec"])  # shown as "-" when unfit
    return row


def _number(value) -> float | None:
    """VALUE when it is a number (an optional field of older or damaged records), else None."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return value if ok else None


def _rate(value) -> float | None:
    """A finite rate of at most 1e12/s, else None: NaN, inf, 2**2000 and -5 are no measurement."""
    if _number(value) is None or isinstance(value, int) and value.bit_length() > 64:
        return None
    return value if math.isfinite(value) and 0 <= value <= 1e12 else None
