"""A real full filesystem for fault tests: a small tmpfs in a user namespace.

`unshare -rm` gives the command its own mount namespace, where a tmpfs of
64 KiB is mounted over a directory and filled.  Where user namespaces are
off (some containers and CI runners) the tests that need it skip.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest


def _probe(script: str) -> None:
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script, "sh", "true"], capture_output=True, timeout=30
    )
    if probe.returncode != 0:
        pytest.skip(f"no user namespaces here to mount a small tmpfs: {probe.stderr!r}")


def full_disk(mountpoint) -> list[str]:
    """A command prefix that runs its command with MOUNTPOINT a full 64 KiB tmpfs."""
    mountpoint.mkdir(exist_ok=True)
    script = (
        f'mount -t tmpfs -o size=64k tmpfs "{mountpoint}" && '
        f'(head -c 200000 /dev/zero > "{mountpoint}/fill") 2>/dev/null; exec "$@"'
    )
    _probe(script)
    return ["unshare", "-rm", "sh", "-c", script, "sh"]


def fills_when(mountpoint, pattern: str) -> list[str]:
    """A command prefix: MOUNTPOINT is an empty 1 MiB tmpfs until a file matching
    PATTERN (a shell glob under MOUNTPOINT) appears, then it is filled to the last byte."""
    mountpoint.mkdir(exist_ok=True)
    script = (
        f'mount -t tmpfs -o size=1m tmpfs "{mountpoint}" || exit 97; "$@" & pid=$!; '
        f'while kill -0 $pid 2>/dev/null && ! ls "{mountpoint}"/{pattern} >/dev/null 2>&1; '
        f'do sleep 0.02; done; (head -c 2000000 /dev/zero > "{mountpoint}/fill") 2>/dev/null; '
        "wait $pid"
    )
    _probe(f'mount -t tmpfs -o size=1m tmpfs "{mountpoint}" && exec "$@"')
    return ["unshare", "-rm", "sh", "-c", script, "sh"]


def fills_then_frees(mountpoint, pattern: str, kept, snapshot) -> list[str]:
    """A command prefix that runs its command twice on MOUNTPOINT, a 16 MiB tmpfs.

    The first time, the tmpfs fills to the last byte once a file matching
    PATTERN appears; its stdout, stderr and exit code go to KEPT/first.{out,err,rc}
    and, the fill removed, the tmpfs is copied to KEPT/first (and the folder
    SNAPSHOT, if there, to KEPT/snapshot).  Then the same
    command runs again (its output is the prefix's own); the tmpfs is then
    copied to KEPT/second.  A resume after a full disk, on the same files."""
    mountpoint.mkdir(exist_ok=True)
    kept.mkdir(exist_ok=True)
    script = (
        f'mount -t tmpfs -o size=16m tmpfs "{mountpoint}" || exit 97; '
        f'"$@" > "{kept}/first.out" 2> "{kept}/first.err" & pid=$!; '
        f'while kill -0 $pid 2>/dev/null && ! ls "{mountpoint}"/{pattern} >/dev/null 2>&1; '
        f'do sleep 0.02; done; (head -c 40000000 /dev/zero > "{mountpoint}/fill") 2>/dev/null; '
        f'wait $pid; echo $? > "{kept}/first.rc"; rm "{mountpoint}/fill"; '
        f'cp -r "{mountpoint}" "{kept}/first"; cp -r "{snapshot}" "{kept}/snapshot" 2>/dev/null; '
        f'"$@"; rc=$?; cp -r "{mountpoint}" "{kept}/second"; exit $rc'
    )
    _probe(f'mount -t tmpfs -o size=16m tmpfs "{mountpoint}" && exec "$@"')
    return ["unshare", "-rm", "sh", "-c", script, "sh"]
