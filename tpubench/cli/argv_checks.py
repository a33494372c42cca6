"""Checks on the raw command line, before absl parses it.

absl reads a `--flagfile` whole, whatever it is: `--flagfile=/dev/zero` grew
the process to 24 GB before failing.  And a path that is not valid UTF-8
(`--results_dir=$'\\xff'`) parses fine, then breaks the first JSON record or
log line that names it.  `check` refuses both with one line naming the
argument and what is accepted.  Pure Python.
"""

from __future__ import annotations

import os

from tpubench.core import errors, safe_files

MAX_FLAGFILE_BYTES = 1 << 20  # a flag file is a few lines; 1 MiB is far past any real one
_MAX_DEPTH = 10  # flag files naming flag files
# Reads of flag files in all: absl reads a file once per mention, so a few small
# files that each name the next many times would expand without end (fan-out).
MAX_FLAGFILE_READS = 100


def check(args: list[str]) -> None:
    """Raises UsageError for an argument that is not UTF-8 or a flag file that cannot be one."""
    for arg in args:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            shown = os.fsencode(arg).decode("ascii", "backslashreplace")
            raise errors.UsageError(
                f"argument {shown} is not valid UTF-8; accepted: UTF-8 text (paths included)"
            ) from None
    _check_flagfiles(args, 0, [0])


def _flagfiles(args: list[str]) -> list[str]:
    out = []
    for i, arg in enumerate(args):
        bare = arg.lstrip("-")
        if arg.startswith("-") and bare.startswith("flagfile="):
            out.append(bare.split("=", 1)[1])
        elif arg.startswith("-") and bare == "flagfile" and i + 1 < len(args):
            out.append(args[i + 1])
    return out


def _check_flagfiles(args: list[str], depth: int, reads: list[int]) -> None:
    for path in _flagfiles(args):
        reads[0] += 1
        if reads[0] > MAX_FLAGFILE_READS:
            raise errors.UsageError(
                f"--flagfile={path}: the flag files name flag files more than "
                f"{MAX_FLAGFILE_READS} times in all (one names another many times?); accepted: "
                f"at most {MAX_FLAGFILE_READS} flag files read per command"
            )
        if depth >= _MAX_DEPTH:
            raise errors.UsageError(
                f"--flagfile={path}: flag files nest deeper than {_MAX_DEPTH} levels"
            )
        try:  # a regular file of bounded size, checked on the open descriptor
            text = safe_files.read_text(
                path, "--flagfile", MAX_FLAGFILE_BYTES, "a text file with one --flag=value per line"
            )
        except safe_files.Unreadable as e:
            raise errors.UsageError(f"--flagfile={path}: {e.error.strerror or e}") from None
        lines = [x.strip() for x in text.splitlines()]
        _check_flagfiles([x for x in lines if x and not x.startswith("#")], depth + 1, reads)


def no_positional(args: list[str], sub: str) -> None:
    """A subcommand that takes only flags refuses stray words in one line."""
    if args:
        raise errors.UsageError(f"unexpected argument(s) {' '.join(args)!r} for `tpubench {sub}`")
