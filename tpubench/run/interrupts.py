"""Signals while a model runs: SIGINT, SIGTERM, SIGHUP and a closed stdout.

Each becomes `Interrupted` between loops, so a run checkpoints and writes an
`interrupted` record; in a multi-worker cluster the signal is only noted and
the workers agree on when to stop (stopping.py).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import stat
import sys


class Interrupted(Exception):
    """SIGINT/SIGTERM/SIGHUP while a model runs, or stdout closed under it."""


def is_interrupt(e: BaseException) -> bool:
    return isinstance(e, (KeyboardInterrupt, Interrupted))


SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Signals(list):
    """The names of the signals received; `quiet()` stops them raising (while a
    checkpoint is saved after the first one, a second Ctrl-C must not abort it).

    In a multi-worker cluster they never raise (`defer()`): a worker that
    stopped wherever the signal found it would leave the others waiting in
    a collective, so the workers agree between loops instead (stopping.py).
    """

    raising = True
    deferred = False

    def check(self) -> None:
        """Raises Interrupted if a signal came that TensorFlow swallowed."""
        if self:
            raise Interrupted(self[-1])

    def defer(self) -> None:
        self.deferred = True
        self.raising = False

    @contextlib.contextmanager
    def quiet(self):
        self.raising = False
        try:
            yield
        finally:
            self.raising = not self.deferred


_ACTIVE: list = []  # (Signals, handler) of the innermost interruptible(), while it runs


def reclaim_signals(placement) -> None:
    """Re-installs the run's signal handlers once a strategy is built; defers them in a cluster.

    A multi-worker strategy starts TensorFlow's coordination service, whose
    preemption notifier installs its own C++ SIGTERM handler: from then on
    SIGTERM never reached Python and a worker trained on until SIGKILL.
    """
    if not _ACTIVE:
        return
    received, handler = _ACTIVE[-1]
    for s in SIGNALS:
        signal.signal(s, handler)
    from tpubench.run import stopping

    if stopping.needed(placement):
        received.defer()


def current() -> Signals | None:
    """The Signals of the innermost interruptible() running now (None outside one)."""
    return _ACTIVE[-1][0] if _ACTIVE else None


def stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (`tpubench train | head -1`).

    A pipe with no reader reports POLLERR on its write end; Python ignores
    SIGPIPE, so without this the run would learn it only at its last print.
    """

    try:
        fd = sys.stdout.fileno()
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return False
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(ev & select.POLLERR for _, ev in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


def release_slow_disks() -> None:
    """A stop signal arrived: an emulated slow disk (--read_mb_per_s) lets its queued reads
    through, since TensorFlow waits for its in-flight reads before the process can stop.

    Called by whichever thread sees the signal first: the Python handler, or
    a thread reading the wakeup fd while the main thread is inside TensorFlow
    (train's deadline watcher, infer's LoadGen watcher).
    """
    throttle = sys.modules.get("tpubench.data.throttle")
    if throttle is not None:
        throttle.release(by_signal=True)


@contextlib.contextmanager
def interruptible():
    """SIGINT, SIGTERM and SIGHUP raise Interrupted; yields the Signals received.

    SIGINT too: a process started in the background by a shell inherits
    SIGINT as ignored.  SIGHUP: an ssh session dropped.  The names are kept
    apart from the exception: raised while TensorFlow traces a step, its
    message comes back rewritten (or the exception is lost), so the loop
    also checks them between loops (the StopOnSignal action).
    """
    received = Signals()

    def _raise(signum, frame):
        received.append(signal.Signals(signum).name)
        release_slow_disks()
        if received.raising:
            raise Interrupted(received[-1])

    handlers = {s: signal.signal(s, _raise) for s in SIGNALS}
    _ACTIVE.append((received, _raise))
    try:
        yield received
    finally:
        _ACTIVE.remove((received, _raise))
        for s, h in handlers.items():
            signal.signal(s, h)
