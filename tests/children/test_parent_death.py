"""Children never outlive their parent: a hang-up stops them, and so does the parent's death."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time

from tpubench.children import process

CHILD = textwrap.dedent(
    """
    import os, pathlib, signal, sys, time
    def say(path, text):  # whole or not at all: the test may look at any moment
        pathlib.Path(path + ".tmp").write_text(text)
        os.replace(path + ".tmp", path)
    def on_term(*_):
        say(sys.argv[1], "SIGTERM")
        sys.exit(0)
    signal.signal(signal.SIGTERM, on_term)
    say(sys.argv[1] + ".up", "up")
    time.sleep(120)
    """
)

PARENT = textwrap.dedent(
    """
    import sys, time
    from tpubench.children import process
    child = process.start([sys.executable, "-c", sys.argv[1], sys.argv[2]], None)
    print(child.pid, flush=True)
    time.sleep(120)
    """
)


def _wait(path, seconds=30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists():
            return True
        time.sleep(0.05)
    return False


def test_a_child_gets_sigterm_when_its_parent_is_killed_outright(tmp_path):
    """SIGKILL to the parent (an OOM kill, a closed container): the child, in its own
    session, would train on under PID 1; the kernel's parent-death signal stops it."""
    said = tmp_path / "child"
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, CHILD, str(said)], stdout=subprocess.PIPE, text=True
    )
    child_pid = int(parent.stdout.readline())
    try:
        assert _wait(tmp_path / "child.up"), "the child never started"
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        assert _wait(said), "the child outlived its parent without a signal"
        assert said.read_text() == "SIGTERM"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child_pid, signal.SIGKILL)


def test_a_hang_up_is_a_stop_request_like_sigterm():
    """The terminal closed: SIGHUP reaches the parent only (children have their own sessions),
    so the supervising loop must see it to stop them."""
    with process.StopRequests() as stop:
        os.kill(os.getpid(), signal.SIGHUP)
        deadline = time.monotonic() + 5
        while stop.signal_name is None and time.monotonic() < deadline:
            time.sleep(0.01)
    assert stop.signal_name == "SIGHUP" and stop.signum == signal.SIGHUP
