"""Writing a file so that a reader never sees half of it and no symlink is followed.

`write_atomic` writes a temporary file in the destination's own directory
and renames it over the destination.  A rename replaces a symlink planted at
the destination instead of writing through it to its target, and a reader
sees the old file or the new one, never a mix.  Pure Python.
"""

from __future__ import annotations

import errno
import os
import tempfile

from tpubench.core import errors


def write_atomic(path: str, data: bytes | str) -> str:
    """Writes DATA to PATH through a temporary file + rename; returns PATH.

    Raises:
      UsageError: the directory is missing or read-only, the disk is full, or
        PATH is a directory; the message names PATH and the reason.
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    directory = os.path.dirname(path) or "."
    tmp = None
    try:
        # mkstemp opens with O_CREAT|O_EXCL: it never follows or reuses a link.
        fd, tmp = tempfile.mkstemp(
            prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory
        )
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; results are for sharing
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise errors.UsageError(f"cannot write {path}: {_reason(e)}") from None
    finally:
        if tmp is not None and os.path.lexists(tmp):
            os.unlink(tmp)
    return path


def check_writable_dir(path: str, flag: str) -> None:
    """UsageError, before anything is written, when local PATH cannot be a directory this
    process writes into: PATH or a folder on its way is not a directory, or the nearest
    existing folder is read-only.  gs:// (or any URL) is checked where buckets are."""
    if not path or "://" in path:
        return
    target = probe = os.path.abspath(path)
    while not os.path.lexists(probe):
        probe = os.path.dirname(probe)
    accepted = "accepted: a directory (created if missing) or gs://BUCKET/PREFIX"
    if not os.path.isdir(probe):
        kind = "a file" if os.path.isfile(probe) else "not a directory"
        where = f"is {kind}" if probe == target else f"lies under {probe}, which is {kind}"
        raise errors.UsageError(f"{flag}={path} {where}; {accepted}")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise errors.UsageError(
            f"{flag}={path}: {probe} is not writable by this user; {accepted} that you can write"
        )


def _reason(e: OSError) -> str:
    if e.errno == errno.ENOSPC:
        return "no space left on the device"
    if e.errno == errno.EDQUOT:
        return "disk quota exceeded"
    return e.strerror or str(e)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
