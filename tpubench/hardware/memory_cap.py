"""`--memory_limit`: a run capped at N bytes of private writable memory (RLIMIT_DATA).

Why RLIMIT_DATA: since Linux 4.7 it caps a process's private writable
mappings (heap and anonymous mmaps, thread stacks included), which is where
TensorFlow's tensors, Python's objects and malloc's arenas live.  RLIMIT_AS
would cap address space, and TensorFlow reserves far more of that than it
touches, so it fails at import under any cap near a real machine's memory.
RLIMIT_DATA counts what is *mapped*, not what is resident: a cap is stricter
than a VM with that much RAM, and it does not count the page cache, shared
mappings or the program's code, which a VM's RAM also holds.

A C++ allocation the cap refuses often aborts the process (std::bad_alloc,
"pthread_create failed") before any Python code can write a record, so the
capped run is a child process (hardware/capped_child.py).  This module has
the sizes, what counts as the cap refusing an allocation, and the record of
a run that reached it.
"""

from __future__ import annotations

import os
import re

from tpubench.core import errors

CAP_WORDS = "memory cap"  # in the error of every run that reached its cap
ENV = "TPUBENCH_MEMORY_LIMIT"  # the cap in bytes, in the capped child's environment
LOWEST = 64 * 2**20
HIGHEST = 2**50  # 1 PiB: no host has more
_UNITS = {
    "": 1,
    "b": 1,
    "k": 10**3,
    "kb": 10**3,
    "m": 10**6,
    "mb": 10**6,
    "g": 10**9,
    "gb": 10**9,
    "t": 10**12,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse(text: str, name: str = "--memory_limit") -> int:
    """Bytes from '1GiB', '512MiB', '1.5GB', '700000000'; UsageError naming what is accepted."""
    match = _SIZE.match(str(text))
    unit = match.group(2).lower() if match else None
    if not match or unit not in _UNITS:
        raise errors.UsageError(
            f"{name}={text!r} is not a size: give bytes with an optional unit "
            "(B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), e.g. 1GiB or 512MiB"
        )
    value = float(match.group(1)) * _UNITS[unit]
    if not value < 2 * HIGHEST:  # thousands of digits: inf, which no int holds
        raise errors.UsageError(
            f"{name}={_cut(text)} is more than {shown(HIGHEST)}; accepted: {shown(LOWEST)} to "
            f"{shown(HIGHEST)}"
        )
    size = int(value)
    if not LOWEST <= size <= HIGHEST:
        raise errors.UsageError(
            f"{name}={text} is {shown(size)}; accepted: {shown(LOWEST)} to {shown(HIGHEST)}"
        )
    return size


def _cut(text: str) -> str:
    text = str(text)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"


def shown(size: int) -> str:
    """A byte count the way a person reads it: 1 GiB, 512 MiB, 700,000,000 bytes."""
    for unit, factor in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if size >= factor and size % (factor // 16) == 0:
            return f"{size / factor:g} {unit}"
    return f"{size:,} bytes"


def active() -> int | None:
    """The cap this process runs under (bytes), or None."""
    value = os.environ.get(ENV, "")
    return int(value) if value.isdigit() else None


def explain(e: BaseException) -> str | None:
    """The one-line error for E when it is this process hitting its cap, else None."""
    cap = active()
    if cap is None:
        return None
    if not any(_refused_allocation(x) for x in _chain(e)):
        return None
    return f"the run reached its memory cap of {shown(cap)} (--memory_limit, RLIMIT_DATA): " + (
        errors.describe(e, 200)
    )


def _chain(e: BaseException):
    """E and the exceptions it was raised from or while handling (an import that failed at
    the cap raises ImportError or SystemError around the MemoryError)."""
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        yield e
        e = e.__cause__ or e.__context__


def _refused_allocation(e: BaseException) -> bool:
    text = f"{type(e).__name__}: {e}"
    if isinstance(e, MemoryError) or "ResourceExhausted" in text or "OOM" in text:
        return True
    if "bad_alloc" in text or "Cannot allocate memory" in text:
        return True
    # A thread's stack is a private mapping, so RLIMIT_DATA refuses it too.
    if isinstance(e, RuntimeError) and "can't start new thread" in text:
        return True
    # CPython's C code lost the MemoryError it had set; seen under a 300 MB cap as
    # "error return without exception set" and "<function _find_and_load ...> returned
    # NULL without setting an exception".  Only a process under its cap asks.
    return isinstance(e, SystemError) and bool(_LOST_ERROR.search(str(e)))


_LOST_ERROR = re.compile(r"without (setting an )?exception( set)?")


class CapReached(errors.TpubenchError):
    """The run's --memory_limit refused an allocation (a result: a rerun gives the same)."""

    exit_code = 1


def loading(load) -> None:
    """Runs LOAD (TensorFlow's start-up); an allocation the cap refuses becomes CapReached,
    so the caller can leave a failed record naming the cap before any run began."""
    try:
        load()
    except Exception as e:
        capped = explain(e)
        if capped is None:
            raise
        raise CapReached(capped) from None


def reached(record: dict) -> bool:
    """RECORD is of a run that failed at its --memory_limit (a result: rerunning gives the same)."""
    return (
        record.get("status") == "failed"
        and bool(record.get("memory_limit_bytes"))
        and CAP_WORDS in str(record.get("error"))
    )
