"""Child processes: started in their own process group, stopped for sure.

Every child gets its own session (process group), so stopping it also stops
whatever it started, and a Ctrl-C in the terminal reaches only the parent
(tpubench study, tpubench tune, tpubench-launch), which then stops its
children in order: SIGTERM (tpubench checkpoints and writes an `interrupted`
record), a grace period, then SIGKILL.  Nothing a parent started outlives it.
`run` is the whole life of one labelled child; `start`, `stop` and `kill`
are its parts, for the launcher's cluster, which supervises several at once.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import signal
import subprocess
import threading
import time

from tpubench.children import fork_side
from tpubench.core import errors, safe_files

# How long a stopped child has to record itself `interrupted` before SIGKILL.
GRACE_SECONDS = 15.0
TAIL_BYTES = 1 << 20  # of a child's log, for its last error line


class StartFailed(errors.TpubenchError):
    """The host refused a new process (fork or exec failed: EAGAIN, ENOMEM, ...)."""

    exit_code = 1

    def __init__(self, what: str, reason: str):
        super().__init__(f"could not start `{what}`: {reason}")
        self.reason = reason  # 'Resource temporarily unavailable (EAGAIN); the host ...'


ROOM = (
    "the host has no room for another process (its process limit or its memory): "
    "stop other work or ask for fewer processes"
)
_NO_ROOM = (errno.EAGAIN, errno.ENOMEM, errno.EMFILE, errno.ENFILE)


def _name(argv: list[str]) -> str:
    """'tpubench train' for `python -P -m tpubench train ...`, else the program's name."""
    words = [os.path.basename(argv[0])] + list(argv[1:])
    if "-m" in words[:-1]:
        words = words[words.index("-m") + 1 :]
    return " ".join(w for w in words[:2] if not w.startswith("-"))


def _popen(argv: list[str], **kwargs) -> subprocess.Popen:
    """subprocess.Popen, with a refused fork or exec as one line (StartFailed)."""
    try:
        return subprocess.Popen(argv, **kwargs)
    except OSError as e:
        code = errno.errorcode.get(e.errno, str(e.errno)) if e.errno else type(e).__name__
        room = f"; {ROOM}" if e.errno in _NO_ROOM else ""
        raise StartFailed(_name(argv), f"{e.strerror or e} ({code}){room}") from e


def start(
    argv: list[str],
    log_path: str | None,
    env: dict | None = None,
    cpus: frozenset[int] | tuple[int, ...] | None = None,
    echo=None,
) -> subprocess.Popen:
    """Starts ARGV with stdout+stderr going to LOG_PATH (and to ECHO, a text stream, if given).

    LOG_PATH None: the child writes to this process's stdout and stderr.
    CPUS pins the child (and everything it starts) to those CPU ids before it
    execs, so thread-count studies see only that many cores.
    """
    preexec = functools.partial(fork_side.prepare, cpus, os.getpid())
    if log_path is None:
        return _popen(
            argv, stdin=subprocess.DEVNULL, env=env, start_new_session=True, preexec_fn=preexec
        )
    os.makedirs(os.path.dirname(os.path.abspath(log_path)), exist_ok=True)
    log = open(log_path, "wb")  # noqa: SIM115 - handed to the child / the echo thread
    if echo is None:
        try:
            return _popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                preexec_fn=preexec,
            )
        finally:
            log.close()  # the child holds its own copy
    try:
        proc = _popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            preexec_fn=preexec,
        )
    except StartFailed:
        log.close()
        raise
    muted = threading.Event()
    thread = threading.Thread(target=_tee, args=(proc.stdout, log, echo, muted), daemon=True)
    try:
        thread.start()
    except RuntimeError as e:  # no thread to copy its output: the host is out of threads
        kill([proc])
        log.close()
        raise StartFailed(_name(argv), f"no thread for its output ({e}); {ROOM}") from e
    proc._tee_thread = thread  # joined by wait_output()
    proc._muted = muted  # set by mute()
    return proc


# An error line or a TensorFlow C++ log line (E0000 00:00:...): held back a
# moment before the console sees it, so a launcher that has just seen another
# task die can mute the echo and print its one line instead.
_ALARMING = re.compile(rb"^[EWF]\d{4} |error|Traceback", re.I)
HOLD_SECONDS = 1.5


def _tee(pipe, log, echo, muted) -> None:
    with log, pipe:
        for line in iter(pipe.readline, b""):
            log.write(line)
            log.flush()
            if not muted.is_set() and _ALARMING.search(line):
                muted.wait(HOLD_SECONDS)
            if muted.is_set():
                continue
            with contextlib.suppress(Exception):  # a closed console must not kill the log
                echo.write(line.decode(errors="replace"))
                echo.flush()


def mute(proc: subprocess.Popen) -> None:
    """Stops copying an echoed child's output to the console; its log still gets it all."""
    muted = getattr(proc, "_muted", None)
    if muted is not None:
        muted.set()


def wait_output(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """Waits until an echoed child's output is fully written to its log."""
    thread = getattr(proc, "_tee_thread", None)
    if thread is not None:
        thread.join(timeout)


def run(
    argv: list[str],
    log_path: str | None,
    stop_requests: StopRequests,
    env: dict | None = None,
    cpus: frozenset[int] | tuple[int, ...] | None = None,
    grace: float | None = GRACE_SECONDS,
    relay: bool = False,
) -> int:
    """Runs ARGV to its end (output to LOG_PATH) and returns its exit code.

    A SIGINT/SIGTERM that STOP_REQUESTS catches before or while the child runs
    stops it: SIGTERM to its process group (with RELAY, the signal caught),
    GRACE seconds to record itself `interrupted` (None: as long as it takes),
    then SIGKILL.  The caller reads `stop_requests.signal_name` afterwards and
    says what the interruption means for it.  Nothing the child started
    outlives the call.
    """
    p = start(argv, log_path, env=env, cpus=cpus)
    try:
        while p.poll() is None:
            if stop_requests.signum is not None:
                sig = stop_requests.signum if relay else signal.SIGTERM
                stop([p], grace=grace, sig=sig)
                break
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=0.1)
    finally:
        kill([p])  # what the child left in its group; the child itself if it was still running
    return p.returncode


def stop(procs: list[subprocess.Popen], grace: float | None = GRACE_SECONDS, sig=None) -> None:
    """SIG (default SIGTERM) to each running child's process group, then SIGKILL after
    GRACE seconds (None: once each has ended)."""
    running = [p for p in procs if p.poll() is None]
    for p in running:
        _signal_group(p, sig or signal.SIGTERM)
    deadline = None if grace is None else time.monotonic() + grace
    for p in running:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=left)
    kill(procs)


def kill(procs: list[subprocess.Popen]) -> None:
    """SIGKILL to every child's process group (also to exited leaders' leftovers)."""
    for p in procs:
        _signal_group(p, signal.SIGKILL)
    for p in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=10)


def _signal_group(p: subprocess.Popen, sig) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(p.pid, sig)


class StopRequests:
    """Turns SIGINT/SIGTERM/SIGHUP into a flag the supervising loop polls.

    SIGHUP: the terminal or ssh session closed; the children, in sessions of
    their own, never see it, so the parent stops them as on SIGTERM.

    Used as a context manager around a loop that must clean up before it
    returns: the first signal sets `.signal_name`; the loop stops its children
    and reports an interrupted run.
    """

    def __init__(self):
        self.signal_name: str | None = None
        self.signum: int | None = None
        self._old = {}

    def __enter__(self):
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            self._old[s] = signal.signal(s, self._handle)
        return self

    def _handle(self, signum, frame):
        self.signal_name = self.signal_name or signal.Signals(signum).name
        self.signum = self.signum or signum

    def __exit__(self, *exc):
        for s, h in self._old.items():
            signal.signal(s, h)
        return False


def describe_exit(returncode: int) -> str:
    """'exited with code 3' / 'was killed by SIGKILL'."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    return f"exited with code {returncode}"


def last_error_line(log_path: str, limit: int | None = 240, or_last: bool = False) -> str | None:
    """The last line of a log that names an error, cut to LIMIT characters (None: whole).

    With OR_LAST, a log without one gives its last line; None when the log
    has no line at all (or cannot be read).
    """
    try:
        tail = safe_files.read_tail(log_path, "", TAIL_BYTES, "a child's log")
    except errors.UsageError:  # gone, or not a file a child wrote: no line to show
        return None
    lines = [x.strip() for x in tail.decode("utf-8", "replace").splitlines() if x.strip()]
    found = next((x for x in reversed(lines) if "error" in x.lower()), None)
    if found is None and or_last and lines:
        found = lines[-1]
    return None if found is None else found[:limit]
