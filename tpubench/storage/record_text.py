"""A run record's file as text, and that text as JSON: bounded in size and depth.

`read_text` refuses anything that is not a regular file (local) or is larger
than any record could be; `loads` refuses invalid JSON, numbers too long to
convert and nesting too deep for readers that walk records recursively.
Either refusal is a BadRecord (a UsageError: one line, the path named), so
one bad file never stops a reader of a whole results directory.
`storage/records.py` migrates what `loads` returns.
"""

from __future__ import annotations

import json

from tpubench.core import errors, safe_files
from tpubench.storage import gcs, record_limits


class BadRecord(errors.UsageError):
    """A run record that cannot be used: too large, or fields of the wrong type."""


# A record holds per-loop timings: a million loops is ~40 MB of JSON.  Anything
# larger is not a record, and reading it whole would only exhaust memory.
MAX_RECORD_BYTES = 64 * 2**20


def short(value) -> str:
    """VALUE as an error message shows it: repr, cut to 40 characters; a huge int by its size."""
    if isinstance(value, int) and value.bit_length() > 64:  # repr of 2**20000 raises
        return f"an integer of {value.bit_length():,} bits"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def read_text(path: str) -> str:
    """The text of one record file (local or gs://), refusing anything over MAX_RECORD_BYTES."""
    limit, local = MAX_RECORD_BYTES, not gcs.is_gcs(path)
    what = f"a run record is at most {limit >> 20} MiB"
    try:
        if local:  # only a regular file: a FIFO or device named *.json would block or never end
            data = safe_files.read_bytes(path, "", limit, what)
        else:
            data = gcs.read_bytes(path, limit=limit)
    except safe_files.Unreadable as e:
        raise errors.UsageError(f"cannot read run record {path}: {e.error.strerror or e}") from None
    except errors.UsageError as e:
        if local or "more than" in str(e):  # not a regular file, or too large
            raise BadRecord(str(e) + ("" if local else f"; {what}")) from None
        raise
    except OSError as e:
        raise errors.UsageError(f"cannot read run record {path}: {e.strerror or e}") from None
    if len(data) > limit:
        raise BadRecord(
            f"{path} is larger than {limit // 2**20} MiB, more than any run record; not loaded"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise errors.UsageError(f"{path} is not a run record (not UTF-8 text)") from None


def loads(text: str, path: str):
    """The JSON value of TEXT, read from PATH, bounded in depth; anything else a UsageError.

    Whatever the file holds: invalid JSON, a number too long for Python to
    convert (over 4,300 digits), nesting too deep to parse.  One such file
    must not stop a reader of the whole results directory.
    """
    try:
        record = json.loads(text)
    except json.JSONDecodeError as e:
        raise errors.UsageError(f"{path} is not a run record (invalid JSON: {e.msg})") from None
    except RecursionError:
        raise BadRecord(f"{path} is not a run record (JSON nested too deeply to read)") from None
    except ValueError as e:  # an integer of thousands of digits
        raise BadRecord(f"{path} is not a run record ({str(e).split(';')[0]})") from None
    if record_limits.depth(record) > record_limits.MAX_DEPTH:  # readers walk records recursively
        raise BadRecord(
            f"{path} nests deeper than {record_limits.MAX_DEPTH} levels, more than any run "
            "record; not loaded"
        )
    return record
