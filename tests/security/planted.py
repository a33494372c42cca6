"""What a user (or another user) can plant where tpubench reads a file (issue 58, class C).

Each kind is made for real: a FIFO (os.mkfifo: an open for reading waits
for a writer for ever), a symlink to /dev/zero (a read never ends), a
directory, and a sparse file of 2 GiB (no disk spent).  `tpubench` runs
the real command with a timeout, so a hang fails the test, not the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import one_line_error

BIN = os.path.dirname(sys.executable)
HUGE = 2 << 30


def fifo(path):
    os.mkfifo(path)


def zero_link(path):
    os.symlink("/dev/zero", path)


def directory(path):
    os.mkdir(path)


def huge(path):
    with open(path, "wb") as f:
        f.truncate(HUGE)


# kind -> (plant it at a path, what the one line says about it)
KINDS = {
    "fifo": (fifo, "is a FIFO (named pipe), not a regular file"),
    "dev_zero_link": (zero_link, "is a device, not a regular file"),
    "directory": (directory, "is a directory, not a regular file"),
    "huge": (huge, f"holds {HUGE:,} bytes"),
}


def replace(path, kind: str) -> None:
    """PATH (a file there now, or none) replaced by KIND."""
    if os.path.lexists(path):
        os.remove(path)
    KINDS[kind][0](path)


def tpubench(cwd, *args, timeout=300, env=None) -> subprocess.CompletedProcess:
    """`tpubench ARGS` run in CWD; a run still going after TIMEOUT seconds fails the test."""
    full = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    full.update(env or {})
    return subprocess.run(
        [os.path.join(BIN, "tpubench"), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=full,
        timeout=timeout,
    )


def one_line(proc) -> str:
    """conftest.one_line_error, once `tpubench: note:` lines (a first build) are set aside."""
    kept = [x for x in proc.stderr.splitlines() if not x.startswith("tpubench: note:")]
    proc.stderr = "\n".join(kept)
    return one_line_error(proc)
