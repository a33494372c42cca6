"""The record's I/O time: blocked on the training path, or hidden in background threads.

Blocked time is the training thread's time in metric writes, checkpoint
saves and heartbeats (and, at the end, waiting for the last checkpoint and
metrics).  Background time is what the background threads (the metric
writer's, TensorFlow's async checkpoint thread) spent writing while the run
did not wait for them: their total work less the time the run waited.
The functions here return what the job (run/train/job.py) puts in its record.
"""

from __future__ import annotations

import dataclasses
import time

from tpubench.core import errors


def close_writer(writer) -> tuple[float, str | None]:
    """WRITER's last metrics, waited for: (seconds waited, what was left unwritten or None)."""
    t0 = time.perf_counter()
    try:
        late = writer.close()
    except Exception as e:  # noqa: BLE001 - the run's measurements stand
        late = f"metric writer close failed ({errors.one_line(e)[:200]})"
    except KeyboardInterrupt:  # a second Ctrl-C: stop waiting, still write the record
        late = "the last metrics were not waited for (interrupted)"
    return time.perf_counter() - t0, late or None


@dataclasses.dataclass(frozen=True)
class Spent:
    """The training thread's own I/O time, beside what the writer and saver count."""

    heartbeat_seconds: float  # the Heartbeat action's record and lock writes
    final_seconds: float  # the end's wait for the last checkpoint and metrics
    span_seconds: float  # the loops' start to the last metrics written


def results_fields(writer, saver, spent: Spent) -> dict:
    """The record's io_* fields of WRITER's and SAVER's (or None's) time and SPENT."""
    writer_blocked = getattr(writer, "blocked_seconds", 0.0)
    writer_work = getattr(writer, "background_seconds", 0.0)
    saver_blocked = saver.blocked_seconds if saver is not None else 0.0
    saver_work = saver.background_seconds if saver is not None else 0.0
    saver_waited = saver.waited_seconds if saver is not None else 0.0
    blocked = {"metrics": writer_blocked, "checkpoints": saver_blocked}
    blocked["heartbeat"] = spent.heartbeat_seconds
    total = sum(blocked.values())
    hidden = max(0.0, writer_work - writer_blocked) + max(0.0, saver_work - saver_waited)
    span = spent.span_seconds
    return {
        "io_blocked_seconds": round(total, 3),
        "io_blocked_final_seconds": round(spent.final_seconds, 3),
        "io_blocked_detail": {k: round(v, 3) for k, v in blocked.items()},
        "io_background_seconds": round(hidden, 3),
        "io_span_seconds": round(span, 3),
        "io_blocked_share": round(total / span, 4) if span > 0 else None,
        "io_background_share": round(hidden / span, 4) if span > 0 else None,
        "io_async": bool(getattr(writer, "background", False)),
    }


def take_errors(writer) -> list[str]:
    """The background metric write errors WRITER kept since last asked (none: [])."""
    take = getattr(writer, "take_errors", None)
    return list(take()) if take is not None else []


def write_error_warning(run_dir, error: str) -> str:
    """The one console warning for the first metric write that failed under RUN_DIR."""
    return (
        f"metrics not written under {run_dir}: {error}; retrying (the record's "
        "metric_write_errors lists every failed write)"
    )


def noticeable(blocked, span) -> bool:
    """Whether BLOCKED seconds of SPAN are worth a line: a second or more, and 5% or more."""
    ok = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (blocked, span))
    return ok and span > 0 and blocked >= 1.0 and blocked / span >= 0.05


def summary_line(results: dict) -> str | None:
    """One line for the results table, or None when the I/O time is negligible
    (blocked under a second or under 5% of the span, and under a second hidden)."""
    blocked, hidden = results.get("io_blocked_seconds"), results.get("io_background_seconds")
    span = results.get("io_span_seconds")
    if blocked is None or not span:
        return None
    if not noticeable(blocked, span) and (hidden or 0.0) < 1.0:
        return None
    final = results.get("io_blocked_final_seconds") or 0.0
    text = f"{blocked:,.2f} s blocked ({100 * blocked / span:.1f}% of {span:,.2f} s"
    text += f"; {final:,.2f} s of it for the last checkpoint and metrics)" if final else ")"
    if hidden:
        text += f", {hidden:,.2f} s in background"
    return text
