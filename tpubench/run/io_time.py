"""The record's I/O time: blocked on the training path, or hidden in background threads.

Blocked time is the training thread's time in metric writes, checkpoint
saves and heartbeats (and, at the end, waiting for the last checkpoint and
metrics).  Background time is what the background threads (the metric
writer's, TensorFlow's async checkpoint thread) spent writing while the run
did not wait for them: their total work less the time the run waited.
"""

from __future__ import annotations

import time

from tpubench.core import errors


def close_writer(job) -> None:
    """JOB's last metrics, waited for; the writes' errors and the I/O time in the record."""
    t0 = time.perf_counter()
    try:
        late = job.writer.close()
    except Exception as e:  # noqa: BLE001 - the run's measurements stand
        late = f"metric writer close failed ({errors.one_line(e)[:200]})"
    except KeyboardInterrupt:  # a second Ctrl-C: stop waiting, still write the record
        late = "the last metrics were not waited for (interrupted)"
    job.final_io_seconds += time.perf_counter() - t0
    report_errors(job)
    if late:
        job.warn(f"{late} (under {job.run_dir})")
    results = job.record.get("results")
    if isinstance(results, dict) and job.path_start is not None:
        span = time.perf_counter() - job.path_start
        results.update(results_fields(job, span))


def results_fields(job, span: float) -> dict:
    """The record's io_* fields for JOB; SPAN: the loops' start to the last metrics written."""
    writer_blocked = getattr(job.writer, "blocked_seconds", 0.0)
    writer_work = getattr(job.writer, "background_seconds", 0.0)
    saver = job.saver
    saver_blocked = saver.blocked_seconds if saver is not None else 0.0
    saver_work = saver.background_seconds if saver is not None else 0.0
    saver_waited = saver.waited_seconds if saver is not None else 0.0
    blocked = {"metrics": writer_blocked, "checkpoints": saver_blocked}
    blocked["heartbeat"] = job.heartbeat_seconds
    total = sum(blocked.values())
    hidden = max(0.0, writer_work - writer_blocked) + max(0.0, saver_work - saver_waited)
    return {
        "io_blocked_seconds": round(total, 3),
        "io_blocked_final_seconds": round(job.final_io_seconds, 3),
        "io_blocked_detail": {k: round(v, 3) for k, v in blocked.items()},
        "io_background_seconds": round(hidden, 3),
        "io_span_seconds": round(span, 3),
        "io_blocked_share": round(total / span, 4) if span > 0 else None,
        "io_background_share": round(hidden / span, 4) if span > 0 else None,
        "io_async": bool(getattr(job.writer, "background", False)),
    }


def report_errors(job) -> None:
    """Background metric write errors: the first on the console, each in the record."""
    take = getattr(job.writer, "take_errors", None)
    for error in take() if take is not None else []:
        first = not job.record.get("metric_write_errors")
        job.record.setdefault("metric_write_errors", []).append(error)
        if first:
            job.warn(
                f"metrics not written under {job.run_dir}: {error}; retrying (the record's "
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
