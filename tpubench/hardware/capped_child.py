"""The capped (or guarded) child a `--memory_limit` run, or a LoadGen test, runs in.

This process forks before TensorFlow is imported; the child sets the limit
(hardware/memory_cap.py) and runs the command, and the parent waits.  If the
child dies of a signal, or exits with no line of its own (at its cap Python
can lose even its stderr), the parent marks the record it left `running` as
failed, or leaves one, naming the cap, and prints one line.  The child has
its own process group (the parent passes on each signal once) and dies with
the parent; its stderr passes through the parent, which leaves out the
native stack TensorFlow prints after a fatal check and Python's complaints
at the cap (so the live progress line of a terminal becomes periodic
progress lines in a capped run).
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import functools
import os
import resource
import signal
import sys

from tpubench.core import errors
from tpubench.hardware import capped_stderr, memory_cap
from tpubench.storage import records

_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def run_capped(
    limit: int | None, results_dir: str | None, command: str, base: dict | None = None
) -> None:
    """Returns in a child process capped at LIMIT bytes; the parent never returns.

    The parent exits with the child's exit code; when the child died of a
    signal, it marks the child's `running` records in RESULTS_DIR failed and
    prints one line naming the cap.  LIMIT None: no cap, only the guard (a
    LoadGen test, whose native aborts no Python code outlives).
    """
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.dup2(write_end, 2)  # the child's stderr passes through the parent (below)
        os.close(read_end)
        os.close(write_end)
        # Python's lines too: sys.stderr may write to a descriptor of its own (cli/tflog.py
        # keeps the terminal's), and the parent must see the child's line at its cap.
        sys.stderr = open(  # noqa: SIM115 - lives as long as the child
            2, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False
        )
        _become_capped(limit)
        sys.excepthook = functools.partial(_uncaught, command)
        return
    os.close(write_end)
    for sig in _FORWARDED:
        signal.signal(sig, lambda signum, _frame: _forward(pid, signum))
    held, spoke = capped_stderr.pass_stderr(read_end)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
    if os.WIFEXITED(status):
        if held is not None:  # the child's own line at its cap, completed with its record
            line = held.decode(errors="replace").rstrip("\n")
            if "[run record:" not in line and os.WEXITSTATUS(status) != 0:
                error = line.split(": error: ", 1)[-1]
                path = _leave_record(pid, error, limit, results_dir, command, base)
                line += f" [run record: {path}]" if path else ""
            os.write(2, (line + "\n").encode())
        elif os.WEXITSTATUS(status) != 0 and not spoke:
            os._exit(
                report_silent_end(pid, os.WEXITSTATUS(status), limit, results_dir, command, base)
            )
        os._exit(os.WEXITSTATUS(status))
    died = os.WTERMSIG(status)
    if died in _FORWARDED:  # stopped by a signal this process passed on
        os._exit(128 + died)
    os._exit(report_death(pid, died, limit, results_dir, command, base))


def _uncaught(command: str, kind, value, tb) -> None:
    """An exception no handler caught in the child: at its cap, even the error handler can
    fail (a SystemError out of tpubench's own edge); one line naming the cap, not a stack."""
    line = memory_cap.explain(value)
    if line is None:
        sys.__excepthook__(kind, value, tb)
        return
    os.write(2, f"tpubench {command}: error: {line}\n".encode(errors="replace"))


def report_death(
    pid: int,
    signum: int,
    limit: int | None,
    results_dir: str | None,
    command: str,
    base: dict | None = None,
) -> int:
    """Marks the dead child's records failed; prints the one line; returns the exit code.

    A child that died before it wrote any record (TensorFlow's start-up alone
    can pass a small cap) still leaves one, from BASE (argv, model, run
    label): without it a study would run that cell again on every resume.
    """
    name = signal.Signals(signum).name if signum in signal.Signals.__members__.values() else signum
    if limit is None:
        error = (
            f"the run died ({name}) before it could write its end: a native abort or fatal "
            "signal inside LoadGen or TensorFlow (or someone sent it); its record and "
            "LoadGen's logs so far are kept"
        )
    else:
        error = (
            f"the run died ({name}) under its memory cap of {memory_cap.shown(limit)} "
            "(--memory_limit, RLIMIT_DATA): an allocation the cap refused; give a larger "
            "--memory_limit"
        )
    _say_failed(pid, error, limit, results_dir, command, base)
    return 1


def report_silent_end(
    pid: int,
    code: int,
    limit: int | None,
    results_dir: str | None,
    command: str,
    base: dict | None = None,
) -> int:
    """The child exited CODE without its error line (at its cap, Python can lose sys.stderr
    itself): its records are marked failed, or one is left; one line; returns CODE."""
    if limit is None:
        error = f"the run ended (exit {code}) without its error line; its record is kept"
    else:
        error = (
            f"the run ended (exit {code}) under its memory cap of {memory_cap.shown(limit)} "
            "(--memory_limit, RLIMIT_DATA) with no memory left to say why: an allocation the "
            "cap refused; give a larger --memory_limit"
        )
    _say_failed(pid, error, limit, results_dir, command, base)
    return code


def _say_failed(
    pid: int,
    error: str,
    limit: int | None,
    results_dir: str | None,
    command: str,
    base: dict | None,
) -> None:
    """Leaves the failed record of child PID (_leave_record) and prints the one line naming it."""
    path = _leave_record(pid, error, limit, results_dir, command, base)
    where = f" [run record: {path}]" if path else ""
    print(f"tpubench {command}: error: {error}{where}", file=sys.stderr)


def _leave_record(
    pid: int,
    error: str,
    limit: int | None,
    results_dir: str | None,
    command: str,
    base: dict | None,
) -> str | None:
    """The record of child PID that failed at its cap: its `running` ones marked failed, its
    own failed one as written, or (none at all: it failed in TensorFlow's start-up) a new
    one from BASE.  Returns the path, or None where there is no results directory."""
    if not results_dir:
        return None
    marked = mark_failed(pid, error, limit, results_dir)
    if marked:
        return marked[-1]
    own = [path for path, record in _records(results_dir) if record.get("pid") == pid]
    if own or base is None:
        return own[-1] if own else None
    try:
        return records.write(_died_early(base, command, error, limit), results_dir)
    except (errors.TpubenchError, OSError):
        return None


def _records(results_dir: str):
    """(path, record) of each readable record in RESULTS_DIR."""
    try:
        paths = records.find(results_dir)
    except errors.TpubenchError:
        return
    for path in paths:
        try:
            yield path, records.read(path)
        except errors.TpubenchError:
            continue


def _died_early(base: dict, command: str, error: str, limit: int | None) -> dict:
    model = base.get("model") or {}
    now = records.now_iso()
    return {
        **base,
        "schema_version": records.SCHEMA_VERSION,
        "run_id": records.new_run_id(model.get("name") or command),
        "kind": command,
        "status": "failed",
        "error": error,
        "started": now,
        "finished": now,
        **({"memory_limit_bytes": limit} if limit else {}),
    }


def mark_failed(pid: int, error: str, limit: int | None, results_dir: str) -> list[str]:
    """Records in RESULTS_DIR that process PID left `running`, rewritten as failed."""
    marked = []
    for _path, record in _records(results_dir):
        if record.get("status") != "running" or record.get("pid") != pid:
            continue
        record.update(status="failed", error=error, finished=records.now_iso())
        if limit:
            record.setdefault("memory_limit_bytes", limit)
        marked.append(records.write(record, results_dir))
    return marked


def _forward(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def _become_capped(limit: int | None) -> None:
    faulthandler.disable()  # an abort at the cap: the parent's one line, not a stack dump
    os.setpgid(0, 0)  # signals reach the child once: through the parent
    with contextlib.suppress(OSError, AttributeError):  # die with the parent (SIGKILLed)
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if limit is None:  # guarded only
        return
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY and limit > hard:
        raise errors.UsageError(
            f"--memory_limit={memory_cap.shown(limit)} is above this process's hard data limit "
            f"({memory_cap.shown(hard)}, `ulimit -H -d`)"
        )
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    os.environ[memory_cap.ENV] = str(limit)
