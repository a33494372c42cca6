"""The one way a path named by a file or a flag is read: a regular file of bounded size.

A sweep file, a study file, a --cloud file or a run record is data from
anywhere, and a path in it may name anything: `/dev/zero` (a read that
never ends), a FIFO (an `open` that waits forever for a writer), a
directory, or a file of gigabytes.  `open_regular` opens the path without
waiting (O_NONBLOCK: a FIFO opens at once), then asks the open descriptor
(not the name, which could change in between) what it is, and refuses all
of those in one line naming the key, the path and what is accepted.

Every file tpubench or the launcher reads goes through here (records, flag
files, YAML, catalogs, host-load and tune files, locks, manifests, logs);
tests/security/test_one_opener.py walks the source for any other reader.

`PATH_FLAGS` are the tpubench flags whose value is a local file tpubench
reads itself; `check_flags` holds a file's flags to the same rule before
anything runs.  Pure Python, no imports from the rest of tpubench but
errors and safe_text, so the launcher uses it too.
"""

from __future__ import annotations

import errno
import io
import os
import stat

from tpubench.core import errors, safe_text

# flag -> (largest size accepted, what the file is): files tpubench reads whole.
PATH_FLAGS = {
    "price_catalog": (16 << 20, "a price catalog CSV"),
    "user_conf": (1 << 20, "an MLPerf user.conf"),
}


class Unreadable(errors.UsageError):
    """The path could not be opened at all (no such file, no permission): OSError's words."""

    def __init__(self, message: str, error: OSError):
        super().__init__(message)
        self.error = error


def _what(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "something else"


def _accepted(limit: int | None, what: str) -> str:
    if limit is None:
        return f"accepted: a regular file ({what})"
    return f"accepted: a regular file of at most {limit:,} bytes ({what})"


def _shown(path: str, key: str) -> str:
    return f"{key}={safe_text.shown(str(path))}" if key else safe_text.shown(str(path))


def open_regular(
    path: str, key: str, limit: int | None, accepted: str, follow: bool = True
) -> io.BufferedReader:
    """PATH opened for reading in binary, once it is known to be a regular file <= LIMIT bytes.

    Args:
      key: how the caller names the path in messages (`cloud.package`,
        `--price_catalog`); the message reads `KEY=PATH ...` (`PATH ...` for "").
      limit: the largest size accepted; None: any size (a log read from its
        tail, an archive read in pieces).
      accepted: what the file should be ("a price catalog CSV").
      follow: False refuses a symlink at PATH itself (O_NOFOLLOW: a lock file,
        which a planted link would send elsewhere).

    Raises:
      Unreadable: missing or unreadable (a UsageError).
      UsageError: a directory, a FIFO, a device, a socket, or larger than
        LIMIT (one line: key, path, what is accepted).
    """
    shown = _shown(path, key)
    want = _accepted(limit, accepted)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        if not follow and e.errno == errno.ELOOP:
            line = f"{shown} is a symbolic link, not a regular file; {want}"
            raise errors.UsageError(line) from None
        raise Unreadable(f"{shown}: {e.strerror or e}; {want}", e) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise errors.UsageError(f"{shown} is {_what(info.st_mode)}, not a regular file; {want}")
        if limit is not None and info.st_size > limit:
            raise errors.UsageError(f"{shown} holds {info.st_size:,} bytes; {want}")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str, key: str, limit: int, accepted: str, follow: bool = True) -> bytes:
    """The bytes of PATH (open_regular's rules); a file that grew past LIMIT is refused too."""
    with open_regular(path, key, limit, accepted, follow) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise errors.UsageError(
            f"{_shown(path, key)} grew past {limit:,} bytes while it was read; "
            + _accepted(limit, accepted)
        )
    return data


def read_text(path: str, key: str, limit: int, accepted: str, follow: bool = True) -> str:
    """The UTF-8 text of PATH (read_bytes' rules); not UTF-8 is one line too."""
    try:
        return read_bytes(path, key, limit, accepted, follow).decode("utf-8")
    except UnicodeDecodeError:
        raise errors.UsageError(
            f"{_shown(path, key)} is not UTF-8 text; accepted: {accepted}"
        ) from None


def read_tail(path: str, key: str, size: int, accepted: str) -> bytes:
    """The last SIZE bytes of PATH, a regular file of any size (a log: its last lines)."""
    with open_regular(path, key, None, accepted) as f:
        end = f.seek(0, os.SEEK_END)
        f.seek(max(0, end - size))
        return f.read(size)


def check_flags(flags: dict, where: str) -> None:
    """Each PATH_FLAGS value in FLAGS (a file's flags, at WHERE) opened and checked, not read.

    A gs:// value is the bucket's to bound (storage/gcs.py reads it with a
    limit).  WHERE prefixes the key: `sweep.yaml: flags.`.

    Raises:
      UsageError: the first value that is not a regular file within its limit.
    """
    for name, (limit, accepted) in PATH_FLAGS.items():
        value = flags.get(name)
        if not isinstance(value, str) or not value or value.startswith("gs://"):
            continue
        with open_regular(value, f"{where}{name}", limit, accepted):
            pass
