"""Remote storage operations in flight, so a watchdog can name a bucket that stopped answering.

TensorFlow's GCS client retries for many minutes and its calls cannot be
interrupted from Python, so a frozen bucket shows up only as a call that
does not return.  Every place that writes or reads a run's gs:// files
wraps the call in `op(what, path)` (or `begin`/`end` across threads, for
TensorFlow's async checkpoint); `run/train/deadlines.py` watches their ages.
Local paths are not tracked: a local disk that stalls is another story.
Pure Python, any thread.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import threading
import time

_lock = threading.Lock()
_ops: dict[int, Op] = {}
_tokens = itertools.count(1)


@dataclasses.dataclass
class Op:
    """One storage call: WHAT it does ("checkpoint save at step 200"), on PATH, since STARTED."""

    what: str
    path: str
    started: float  # time.monotonic()
    warned: bool = False  # the stall warning was given

    @property
    def bucket(self) -> str:
        """'gs://bucket' of PATH."""
        scheme, _, rest = self.path.partition("://")
        return f"{scheme}://{rest.split('/', 1)[0]}"

    def age(self, now: float | None = None) -> float:
        return (time.monotonic() if now is None else now) - self.started


def remote(path: str | None) -> bool:
    return isinstance(path, str) and "://" in path


def begin(what: str, path: str | None) -> int | None:
    """Starts tracking a call on PATH; the token for `end` (None: PATH is local)."""
    if not remote(path):
        return None
    token = next(_tokens)
    with _lock:
        _ops[token] = Op(what, path, time.monotonic())
    return token


def end(token: int | None) -> None:
    if token is not None:
        with _lock:
            _ops.pop(token, None)


@contextlib.contextmanager
def op(what: str, path: str | None):
    """Tracks the calls inside as WHAT on PATH while they run."""
    token = begin(what, path)
    try:
        yield
    finally:
        end(token)


def snapshot() -> list[Op]:
    """The calls in flight, oldest first."""
    with _lock:
        return sorted(_ops.values(), key=lambda o: o.started)


def clear() -> None:
    """Forgets every call (a new run in the same process starts clean)."""
    with _lock:
        _ops.clear()
