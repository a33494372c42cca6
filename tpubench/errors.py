"""Errors a user can act on.

Anything the user can fix (a flag value, a file, missing hardware) raises a
subclass of `TpubenchError`.  `tpubench.main` turns those into one line on
stderr and a non-zero exit; `--verbose` adds the traceback.  Messages name
the bad value and what would be accepted.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class TpubenchError(Exception):
    """Base class: an error the user can fix. Exit code 2 unless overridden."""

    exit_code = 2


class UsageError(TpubenchError):
    """A bad flag, name or value."""


class DataError(TpubenchError):
    """Missing, unreadable or corrupted data."""

    exit_code = 3


class HardwareError(TpubenchError):
    """The requested accelerator or cluster is not reachable."""

    exit_code = 4


class PriceError(TpubenchError):
    """A malformed price catalog or an unknown priced machine."""


class InterruptedRun(TpubenchError):
    """SIGINT/SIGTERM stopped the run; its checkpoint lets it resume."""

    exit_code = 130


class RunInvalidError(TpubenchError):
    """The run produced a result that must not be reported (NaN/inf loss)."""

    exit_code = 5


def choices_hint(value: str, accepted: Iterable[str], n: int = 5) -> str:
    """Returns ' (did you mean X?); accepted: a, b, c' for an unknown name."""
    accepted = sorted(set(accepted))
    close = difflib.get_close_matches(value, accepted, n=n, cutoff=0.5)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    if len(accepted) <= 30:
        return f"{hint}; accepted: {', '.join(accepted)}"
    return f"{hint}; {len(accepted)} accepted values, list them with `tpubench prices`"


def unknown(kind: str, value: str, accepted: Iterable[str]) -> UsageError:
    """An UsageError for an unknown name, listing close matches."""
    return UsageError(f"unknown {kind} {value!r}{choices_hint(value, accepted)}")
