"""Flags in a sweep file that make a run import and run code: refused unless --trust-code.

A sweep file is data from anywhere (a colleague, a repository).  Every
configuration becomes a `tpubench` command line, so a `model_module` (a
Python file the run imports) or a `flagfile` (which may name one) in its
flags would run that code in every run with no word to the user.  The rule
is tpubench's own (tpubench/core/code_flags.py); this is its launcher
spelling.
"""

from __future__ import annotations

from tpubench.core import code_flags
from tpubench.core import errors as core_errors
from tpubench_launch import errors

CODE_FLAGS = code_flags.CODE_FLAGS
named = code_flags.named


def check(path: str, where: str, flags: dict, trusted: bool) -> list[str]:
    """UsageError for the first code-loading flag unless TRUSTED; else the warning lines."""
    try:
        return code_flags.check(path, where, flags, trusted, "--trust-code", "every run")
    except core_errors.UsageError as e:  # the launcher's own error, which its CLI prints
        raise errors.UsageError(str(e)) from None
