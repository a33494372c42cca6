"""Signals while LoadGen holds the main thread: seen at once, whatever the query rate.

Python runs a signal handler only when the main thread returns to the
interpreter, and LoadGen's test holds the main thread for its whole run.
The SUT used to act on a signal when LoadGen next issued a query or the SUT
served a batch: at a low --target_qps that could be many seconds after
SIGTERM, past the shutdown grace.  `watching` points the C-level wakeup fd
at a pipe (written even while the main thread is inside LoadGen), and a
thread that sees a byte there notes the signal and calls the SUT's
`on_signal`, which writes the interrupted record and ends the process.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading

from tpubench.run import interrupts


@contextlib.contextmanager
def watching(signals, act):
    """While the block runs, a signal is noted in SIGNALS and ACT() called within 0.2 s."""
    if signals is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    r, w = os.pipe()
    os.set_blocking(w, False)
    stop = threading.Event()
    previous = signal.set_wakeup_fd(w, warn_on_full_buffer=False)

    def watch():
        while not stop.is_set():
            ready, _, _ = select.select([r], [], [], 0.2)
            if not ready:
                continue
            for code in os.read(r, 64):
                try:
                    sig = signal.Signals(code)
                except ValueError:
                    continue
                stopping = sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
                if stopping and sig.name not in signals:
                    interrupts.release_slow_disks()
                    signals.append(sig.name)
            if signals:
                act()

    thread = threading.Thread(target=watch, name="loadgen-signals", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=1)
        signal.set_wakeup_fd(previous)
        os.close(r)
        os.close(w)
