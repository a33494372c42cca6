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
"pthread_create failed") before any Python code can write a record.  So the
capped run is a child: this process forks before TensorFlow is imported, the
child sets the limit and runs the command, and the parent waits.  If the
child dies of a signal, the parent marks the record it left `running` as
failed, naming the cap, and prints one line.  The child has its own process
group (the parent passes on each signal once) and dies with the parent;
its stderr passes through the parent, which leaves out the native stack
TensorFlow prints after a fatal check (so the live progress line of a
terminal becomes periodic progress lines in a capped run).
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import os
import re
import resource
import signal
import sys

from tpubench.core import errors
from tpubench.storage import records

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
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def parse(text: str, name: str = "--memory_limit") -> int:
    """Bytes from '1GiB', '512MiB', '1.5GB', '700000000'; UsageError naming what is accepted."""
    match = _SIZE.match(str(text))
    unit = match.group(2).lower() if match else None
    if not match or unit not in _UNITS:
        raise errors.UsageError(
            f"{name}={text!r} is not a size: give bytes with an optional unit "
            "(B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), e.g. 1GiB or 512MiB"
        )
    size = int(float(match.group(1)) * _UNITS[unit])
    if not LOWEST <= size <= HIGHEST:
        raise errors.UsageError(
            f"{name}={text} is {shown(size)}; accepted: {shown(LOWEST)} to {shown(HIGHEST)}"
        )
    return size


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
    text = f"{type(e).__name__}: {e}"
    allocation = isinstance(e, MemoryError) or "ResourceExhausted" in text or "OOM" in text
    if not allocation and "bad_alloc" not in text and "Cannot allocate memory" not in text:
        return None
    return f"the run reached its memory cap of {shown(cap)} (--memory_limit, RLIMIT_DATA): " + (
        errors.describe(e, 200)
    )


def reached(record: dict) -> bool:
    """RECORD is of a run that failed at its --memory_limit (a result: rerunning gives the same)."""
    return (
        record.get("status") == "failed"
        and bool(record.get("memory_limit_bytes"))
        and CAP_WORDS in str(record.get("error"))
    )


def run_capped(limit: int, results_dir: str | None, command: str) -> None:
    """Returns in a child process capped at LIMIT bytes; the parent never returns.

    The parent exits with the child's exit code; when the child died of a
    signal, it marks the child's `running` records in RESULTS_DIR failed and
    prints one line naming the cap.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.dup2(write_end, 2)  # the child's stderr passes through the parent (below)
        os.close(read_end)
        os.close(write_end)
        _become_capped(limit)
        return
    os.close(write_end)
    for sig in _FORWARDED:
        signal.signal(sig, lambda signum, _frame: _forward(pid, signum))
    _pass_stderr(read_end)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
    if os.WIFEXITED(status):
        os._exit(os.WEXITSTATUS(status))
    died = os.WTERMSIG(status)
    if died in _FORWARDED:  # stopped by a signal this process passed on
        os._exit(128 + died)
    os._exit(report_death(pid, died, limit, results_dir, command))


def report_death(pid: int, signum: int, limit: int, results_dir: str | None, command: str) -> int:
    """Marks the dead child's records failed; prints the one line; returns the exit code."""
    name = signal.Signals(signum).name if signum in signal.Signals.__members__.values() else signum
    error = (
        f"the run died ({name}) under its memory cap of {shown(limit)} (--memory_limit, "
        "RLIMIT_DATA): an allocation the cap refused; give a larger --memory_limit"
    )
    marked = mark_failed(pid, error, limit, results_dir) if results_dir else []
    where = f" [run record: {marked[-1]}]" if marked else ""
    print(f"tpubench {command}: error: {error}{where}", file=sys.stderr)
    return 1


def mark_failed(pid: int, error: str, limit: int, results_dir: str) -> list[str]:
    """Records in RESULTS_DIR that process PID left `running`, rewritten as failed."""
    marked = []
    try:
        paths = records.find(results_dir)
    except errors.TpubenchError:
        return marked
    for path in paths:
        try:
            record = records.read(path)
        except errors.TpubenchError:
            continue
        if record.get("status") != "running" or record.get("pid") != pid:
            continue
        record.update(status="failed", error=error, finished=records.now_iso())
        record.setdefault("memory_limit_bytes", limit)
        marked.append(records.write(record, results_dir))
    return marked


# What TensorFlow's C++ prints after a fatal check at the cap: a native stack.
_NATIVE_STACK = re.compile(rb"^(\*\*\* Check failure stack trace|\s+@\s+0x)")


def _pass_stderr(fd: int) -> None:
    """Copies the child's stderr to this process's, line by line, without native stacks
    (the cause line before them stays; the parent's own line follows)."""
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        pending = b""
        while True:
            chunk = pipe.read(65536)
            if not chunk:
                break
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            kept = [x + b"\n" for x in lines if not _NATIVE_STACK.match(x)]
            if kept:
                os.write(2, b"".join(kept))
        if pending and not _NATIVE_STACK.match(pending):
            os.write(2, pending)


def _forward(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def _become_capped(limit: int) -> None:
    faulthandler.disable()  # an abort at the cap: the parent's one line, not a stack dump
    os.setpgid(0, 0)  # signals reach the child once: through the parent
    with contextlib.suppress(OSError, AttributeError):  # die with the parent (SIGKILLed)
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY and limit > hard:
        raise errors.UsageError(
            f"--memory_limit={shown(limit)} is above this process's hard data limit "
            f"({shown(hard)}, `ulimit -H -d`)"
        )
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    os.environ[ENV] = str(limit)
