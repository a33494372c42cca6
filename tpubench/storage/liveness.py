"""Whether a run that a record or a lock calls `running` is still alive.

A record and a model_dir lock carry the pid and host of the process that
wrote them, and a heartbeat time the run refreshes between loops (the
Heartbeat action).  A run is dead when its pid is gone on this host, or
when its heartbeat is older than STALE_SECS (another host: killed, out of
memory, or its VM lost).  Pure Python.
"""

from __future__ import annotations

import datetime as dt
import os
import socket

HEARTBEAT_SECS = 60.0  # how often a run refreshes its heartbeat (between loops)
# A run whose heartbeat is older than this is dead: long enough for a slow
# first compile or a long eval between two loops.
STALE_SECS = 20 * 60.0


def host() -> str:
    return socket.gethostname()


def identity() -> dict:
    """{"pid", "host", "heartbeat"} of this process, now."""
    return {"pid": os.getpid(), "host": host(), "heartbeat": now_iso()}


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def death(holder: dict, now: dt.datetime | None = None) -> str | None:
    """Why the process HOLDER describes (pid, host, heartbeat) is dead, or None if it may live."""
    pid, where, beat = holder.get("pid"), holder.get("host"), holder.get("heartbeat")
    if isinstance(pid, int) and not isinstance(pid, bool) and where == host():
        if pid == os.getpid():
            return None
        if not pid_alive(pid):
            return f"pid {pid} is gone on host {where}"
    if isinstance(beat, str):
        try:
            when = dt.datetime.fromisoformat(beat)
        except ValueError:
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.timezone.utc)
        now = now or dt.datetime.now(dt.timezone.utc)
        age = (now - when).total_seconds()
        if age > STALE_SECS:
            return f"no heartbeat from pid {pid} on host {where} since {beat} ({age / 60:.0f} min)"
    return None


def status(record: dict, now: dt.datetime | None = None) -> str:
    """RECORD's status, with `died` for a `running` run whose process is dead."""
    stored = record.get("status")
    if stored == "running" and death(record, now) is not None:
        return "died"
    return stored
