"""Errors a user of tpubench-launch can act on.

One hierarchy for both trees: every error here is a `tpubench.core.errors`
error (a launcher usage error is a tpubench `UsageError`, an interruption an
`InterruptedRun`), so a rule the launcher reads from tpubench's core and a
rule of its own fail alike: one line naming the bad value and what is
accepted, and an exit code (2 for usage errors).  `cli.main` prints them.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from tpubench.core import errors as core_errors


class LaunchError(core_errors.TpubenchError):
    """Base class: an error the user can fix.  Exit code 2 unless overridden."""

    exit_code = 2


class UsageError(LaunchError, core_errors.UsageError):
    """A bad option, sweep file or value."""


class TaskFailed(LaunchError):
    """A task of a cluster (or a configuration of a sweep) failed.

    `exit_code` is the failed process's own code when it exited with one,
    128 + signal number when a signal killed it (the shell's convention).
    """

    def __init__(self, message: str, exit_code: int = 1, record_path: str | None = None):
        super().__init__(message)
        self.exit_code = exit_code
        self.record_path = record_path


class CloudError(LaunchError):
    """A `gcloud`/`kubectl` call failed or the CLI is missing."""

    exit_code = 1


class Interrupted(LaunchError, core_errors.InterruptedRun):
    """Ctrl-C or SIGTERM stopped the launcher (after it cleaned up)."""

    exit_code = 130

    def __init__(self, message: str, record_path: str | None = None):
        super().__init__(message)
        self.record_path = record_path


def unknown(kind: str, value: object, accepted: Iterable[str]) -> UsageError:
    """A UsageError for an unknown name, with close matches and the accepted values."""
    accepted = sorted(set(accepted))
    close = difflib.get_close_matches(str(value), accepted, n=3, cutoff=0.5)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    return UsageError(f"unknown {kind} {value!r}{hint}; accepted: {', '.join(accepted)}")


def exit_code_of(returncode: int) -> int:
    """A child's returncode as a shell would report it (-9 -> 137)."""
    return 128 - returncode if returncode < 0 else returncode
