"""`python -m tpubench.testing.local_gcs`: a local GCS server as a process.

Prints the environment to export, then serves until Ctrl-C or SIGTERM; its
state directory (certificate, key, `gcs.env`) is removed when it stops, and
one left by a server killed outright is removed at the next start.  The
server itself is local_gcs.LocalGCS.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import signal
import sys
import time

from tpubench.storage.liveness import pid_alive
from tpubench.testing import local_gcs

ENV_FILE = "gcs.env"


def default_state_dir() -> str:
    from tpubench.storage import cache

    return cache.path("local-gcs")


def clear_stale(state_dir: str) -> list[str]:
    """Removes server directories (`server-PID`) whose process is gone; returns their paths."""
    removed = []
    if not os.path.isdir(state_dir):
        return removed
    for name in sorted(os.listdir(state_dir)):
        pid = name.removeprefix("server-")
        if name.startswith("server-") and pid.isdigit() and not pid_alive(int(pid)):
            shutil.rmtree(os.path.join(state_dir, name), ignore_errors=True)
            removed.append(os.path.join(state_dir, name))
    env_file = os.path.join(state_dir, ENV_FILE)
    if os.path.exists(env_file) and not _env_owner_alive(env_file):
        os.remove(env_file)
    return removed


def _env_owner_alive(env_file: str) -> bool:
    try:
        with open(env_file) as f:
            first = f.readline()
    except OSError:
        return False
    match = re.search(r"pid (\d+)", first)
    return bool(match) and pid_alive(int(match.group(1)))


def _print_env(state_dir: str, timeout: float) -> int:
    env_file = os.path.join(state_dir, ENV_FILE)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(env_file) and _env_owner_alive(env_file):
            with open(env_file) as f:
                sys.stdout.write(f.read())
            return 0
        time.sleep(0.2)
    print(
        f"local_gcs: error: no running local GCS server wrote {env_file} within {timeout:.0f} s; "
        "start one with `python -m tpubench.testing.local_gcs --bucket=NAME &` "
        "(with the same --state_dir)",
        file=sys.stderr,
    )
    return 1


def _on_sigterm(signum, frame):
    # A second signal during cleanup must not cut the cleanup short.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt  # unwinds through main's finally: the state directory goes


def main(argv=None):

    logging.getLogger("gcp_storage_emulator").setLevel(logging.CRITICAL)
    parser = argparse.ArgumentParser(
        description="A local Google Cloud Storage server for TensorFlow's own gs:// file system."
    )
    parser.add_argument("--bucket", action="append", default=None, help="bucket(s) to create")
    parser.add_argument(
        "--state_dir",
        default=None,
        help="where the certificate, key and gcs.env live (default: user cache local-gcs/)",
    )
    parser.add_argument(
        "--print_env",
        action="store_true",
        help="wait for a running server (up to --timeout s) and print its export lines",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds --print_env waits")
    args = parser.parse_args(argv)
    state_dir = os.path.abspath(os.path.expanduser(args.state_dir or default_state_dir()))
    if args.print_env:
        return _print_env(state_dir, args.timeout)
    # Handlers first: a signal at any point after this removes what was made.
    signal.signal(signal.SIGTERM, _on_sigterm)
    signal.signal(signal.SIGINT, _on_sigterm)  # also when started with `&` (SIGINT ignored)
    workdir = os.path.join(state_dir, f"server-{os.getpid()}")
    env_file = os.path.join(state_dir, ENV_FILE)
    server = None
    try:
        os.makedirs(state_dir, exist_ok=True)
        for path in clear_stale(state_dir):
            print(f"# removed stale local GCS state {path} (its server is gone)", flush=True)
        os.makedirs(workdir)
        server = local_gcs.LocalGCS(
            workdir=workdir, buckets=args.bucket or ["tpubench-test"]
        ).start()
        lines = [f"# local GCS server (pid {os.getpid()}); export these where tpubench runs:"]
        lines += [f"export {k}={v!s}" for k, v in server.env().items()]
        text = "\n".join(lines) + "\n"
        tmp = f"{env_file}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, env_file)
        sys.stdout.write(text)
        print(
            f"# buckets: {', '.join('gs://' + b for b in server.buckets)}; "
            f"environment also in {env_file}  (Ctrl-C or kill stops and removes it)",
            flush=True,
        )
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        if server is not None:
            server.stop()
        try:
            with open(env_file) as f:
                mine = f"(pid {os.getpid()})" in f.readline()
            if mine:
                os.remove(env_file)
        except OSError:
            pass
        shutil.rmtree(workdir, ignore_errors=True)
    return 0
