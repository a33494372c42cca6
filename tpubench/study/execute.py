"""Running a study's cells on this host: one tpubench process per cell, resumable.

A cell is done when a record in the results directory carries its id as
`run_label` with status ok (or invalid: a NaN loss is a result too, and
running it again would give the same).  Failed and interrupted cells run
again next time.  SIGINT and SIGTERM are passed to the running cell (its own
handler writes an `interrupted` record) and the study stops after it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

from tpubench.core import errors
from tpubench.storage import records
from tpubench.study import cells as cells_lib

DONE = ("ok", "invalid")


def recorded(results_dir: str) -> dict[str, list[tuple[str, dict]]]:
    """Records under RESULTS_DIR by run_label: {label: [(path, record), ...]}."""
    out: dict[str, list] = {}
    if "://" not in results_dir and not os.path.isdir(results_dir):
        return out
    for path in records.find(results_dir):
        if "/model_dirs/" in path or "/data/" in path:
            continue  # metrics and manifests, not records
        try:
            record = records.read(path)
        except errors.TpubenchError:
            continue
        label = record.get("run_label")
        if label:
            out.setdefault(label, []).append((path, record))
    return out


def done_ids(results_dir: str) -> set[str]:
    return {
        label
        for label, found in recorded(results_dir).items()
        if any(r.get("status") in DONE for _, r in found)
    }


def jpeg_dir(results_dir: str, examples: int) -> str:
    return os.path.join(results_dir, "data", f"photos_jpeg_{examples}")


def prepare_jpeg(path: str, examples: int, out) -> None:
    """The photos as JPEG records (the input pipeline decodes them), once per size."""
    if os.path.exists(os.path.join(path, "manifest.json")):
        return
    argv = [
        sys.executable,
        "-m",
        "tpubench",
        "data",
        "prepare",
        "--dataset=photos",
        "--record_format=jpeg",
        f"--examples={examples}",
        f"--output={path}",
        "--overwrite",
    ]
    print(f"preparing JPEG data: tpubench {' '.join(argv[3:])}", file=out, flush=True)
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise errors.DataError(f"preparing the JPEG photos in {path} failed: {last}")


class _Signals:
    """Passes SIGINT/SIGTERM to the running cell and remembers that one came."""

    def __init__(self):
        self.child: subprocess.Popen | None = None
        self.caught: int | None = None
        self.passed_to: subprocess.Popen | None = None
        self._old = {}

    def __enter__(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc):
        for sig, old in self._old.items():
            signal.signal(sig, old)

    def _handle(self, signum, _frame):
        self.caught = signum
        if self.child and self.child.poll() is None:
            self.child.send_signal(signum)
            self.passed_to = self.child

    def started(self, child: subprocess.Popen) -> subprocess.Popen:
        """CHILD is the running process now; a signal that came while it started reaches it."""
        self.child = child
        if self.caught and self.passed_to is not child and child.poll() is None:
            child.send_signal(self.caught)
            self.passed_to = child
        return child


def run_cells(todo: list, host, results_dir: str, jpeg: str | None, out) -> list[tuple]:
    """Runs TODO in order; returns (cell, status, what) per cell that ran.

    Raises:
      InterruptedRun: a signal stopped the study (the cells before it keep
        their records; the same command runs the rest).
    """
    logs = os.path.join(results_dir, "logs")
    os.makedirs(logs, exist_ok=True)
    results = []
    with _Signals() as sig:
        for i, cell in enumerate(todo, 1):
            if sig.caught:  # it came between two cells: start no other
                _stop(sig.caught, i - 1, len(todo), results)
            print(f"[{i}/{len(todo)}] {cell.id} {cell.describe()} ...", file=out, flush=True)
            # A fresh model_dir: a cell's rate is measured over its own steps,
            # never over the tail of an older attempt's checkpoint.
            shutil.rmtree(cells_lib.model_dir(results_dir, cell.id), ignore_errors=True)
            cores = cell.pinned(host)
            log_path = os.path.join(logs, f"{cell.id}.log")
            with open(log_path, "w") as log:
                child = subprocess.Popen(
                    cell.argv(host, results_dir, jpeg),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    preexec_fn=(lambda c=cores: os.sched_setaffinity(0, c)) if cores else None,
                )
                code = sig.started(child).wait()
            status, what = _outcome(results_dir, cell.id, code, log_path)
            results.append((cell, status, what))
            print(f"[{i}/{len(todo)}] {cell.id} {status}: {what}", file=out, flush=True)
            if sig.caught:
                _stop(sig.caught, i, len(todo), results)
    return results


def _stop(signum: int, ran: int, total: int, results: list):
    done = sum(1 for _, s, _ in results if s in DONE)
    raise errors.InterruptedRun(
        f"interrupted by {signal.Signals(signum).name} after {ran} of {total} cell(s) "
        f"({done} recorded); run the same command again to run the rest"
    )


def _outcome(results_dir: str, cell_id: str, code: int, log_path: str) -> tuple[str, str]:
    found = recorded(results_dir).get(cell_id, [])
    latest = max(found, key=lambda pr: pr[1].get("started") or "", default=None)
    if latest and latest[1].get("status") in DONE and code == 0:
        rate = (latest[1].get("results") or {}).get("examples_per_sec")
        shown = f"{rate:,.1f} examples/s; " if isinstance(rate, (int, float)) else ""
        return latest[1]["status"], f"{shown}record: {latest[0]}"
    with open(log_path, errors="replace") as f:
        lines = [x.strip() for x in f.read().splitlines() if x.strip()]
    last = next((x for x in reversed(lines) if "error" in x.lower()), lines[-1] if lines else "")
    status = latest[1].get("status") if latest else "failed"
    return status or "failed", f"exit {code}: {last[:300]} (log: {log_path})"
