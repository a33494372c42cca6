"""What a child runs between fork and exec: its pinned CPUs, and a signal when its parent dies.

`process.start` (children/process.py) passes `prepare` as the child's
preexec function; libc's prctl is looked up here, in the parent, at import.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _libc_prctl():
    """libc's prctl, looked up in the parent: a forked child must not load libraries."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _libc_prctl()


def prepare(cpus, parent: int) -> None:
    """Runs in the child between fork and exec: its CPUs, and SIGTERM when the parent dies.

    Its own session keeps the terminal's signals away from the child, so a
    parent killed outright (SIGKILL, an OOM kill) would leave it training on
    under PID 1; the kernel's parent-death signal makes it checkpoint and
    record itself `interrupted` instead.  Children are started from the main
    thread (the signal follows the thread that forked).
    """
    if cpus:
        os.sched_setaffinity(0, cpus)
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the request: act on it now
            os.kill(os.getpid(), signal.SIGTERM)
