"""Running a study's cells on this host: one tpubench process per cell, resumable.

A cell is done when as many records as the study's repeats carry its id as
`run_label`, measured what the cell asks (study/run/cell_records.py) and have
status ok (or invalid: a NaN loss is a result too, and running it again
would give the same; so is a run that failed at its --memory_limit).
Failed and interrupted runs run again next time.  Each cell runs through
the one child runner (children/process.py), in its own process group:
SIGINT and SIGTERM are passed to the running cell (its own handler writes
an `interrupted` record) and the study stops after it.

Each run's neighbours are measured too: the CPU time the rest of the host
used while the cell ran (/proc/stat less the cell's own rusage).  A run
during which the others used more than BUSY_SHARE of the host's cores is
marked busy in `host_load.json` and run once more.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import time

from tpubench.children import command, labels, process
from tpubench.core import errors, safe_files
from tpubench.core import host_load as busy_rule
from tpubench.hardware import memory_cap
from tpubench.storage import files, records
from tpubench.study.run import cell_records

DONE = (*records.DONE_STATUSES, "capped")  # capped: a run's status, never a record's (below)
# Others' CPU use while a cell ran, as a share of the host's cores, that marks
# the run busy (on 2 cores: half a core taken by someone else on average).
BUSY_SHARE = busy_rule.BUSY_PERCENT / 100  # of the host's cores, as everywhere else
LOAD_FILE = "host_load.json"
MAX_LOAD_BYTES = 16 << 20  # {record file: share}: some 60 bytes a run
LOAD_WHAT = "the JSON `tpubench study run` writes there"


def done_counts(splits: dict) -> dict[str, int]:
    """{cell id: how many of its own records (cell_records.of_cells' SPLITS) are done}: ok,
    invalid, or dead at the cell's memory cap."""
    return {
        cell_id: sum(1 for f in s.ours if f.run.status in DONE or memory_cap.reached(f.record))
        for cell_id, s in splits.items()
    }


def host_load(results_dir: str) -> dict[str, float]:
    """{record file name: others' share of the host's cores while it ran}."""
    path = os.path.join(results_dir, LOAD_FILE)
    try:
        loads = json.loads(safe_files.read_text(path, "", MAX_LOAD_BYTES, LOAD_WHAT))
    except (safe_files.Unreadable, ValueError):  # none yet, or cut short: measured again
        return {}
    if not isinstance(loads, dict):
        return {}
    return {k: v for k, v in loads.items() if isinstance(v, (int, float))}


def _note_load(results_dir: str, record_path: str, share: float) -> None:
    loads = host_load(results_dir)
    loads[os.path.basename(record_path)] = round(share, 3)
    files.write_atomic(
        os.path.join(results_dir, LOAD_FILE), json.dumps(loads, indent=1, sort_keys=True)
    )


def _host_cpu_seconds() -> float | None:
    """CPU seconds every process of the host has used (/proc/stat), or None."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    # user nice system idle iowait irq softirq steal: all but idle and iowait.
    used = [int(x) for i, x in enumerate(fields[1:9]) if i not in (3, 4)]
    return sum(used) / os.sysconf("SC_CLK_TCK")


class _Neighbours:
    """Others' share of the host's cores over one child's run."""

    def __enter__(self):
        self.t0, self.host0 = time.monotonic(), _host_cpu_seconds()
        self.own0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.share = None
        return self

    def __exit__(self, *exc):
        host1, wall = _host_cpu_seconds(), time.monotonic() - self.t0
        own1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if self.host0 is None or host1 is None or wall <= 0:
            return
        own = (own1.ru_utime - self.own0.ru_utime) + (own1.ru_stime - self.own0.ru_stime)
        others = max(0.0, host1 - self.host0 - own)
        self.share = others / (wall * (os.cpu_count() or 1))


def jpeg_dir(results_dir: str, examples: int) -> str:
    return os.path.join(results_dir, "data", f"photos_jpeg_{examples}")


def prepare_jpeg(path: str, examples: int, out) -> None:
    """The photos as JPEG records (the input pipeline decodes them), once per size."""
    if os.path.exists(os.path.join(path, "manifest.json")):
        return
    argv = command.python_argv(
        "tpubench",
        "data",
        "prepare",
        "--dataset=photos",
        "--record_format=jpeg",
        f"--examples={examples}",
        f"--output={path}",
        "--overwrite",
    )
    print(f"preparing JPEG data: tpubench {' '.join(argv[4:])}", file=out, flush=True)
    done = subprocess.run(
        argv, capture_output=True, text=True, check=False, env=command.child_env()
    )
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise errors.DataError(f"preparing the JPEG photos in {path} failed: {last}")


def run_cells(
    todo: list, host, results_dir: str, jpeg: str | None, out, rerun_busy: bool = True
) -> list[tuple]:
    """Runs TODO, a list of (cell, runs), in order; returns (cell, status, what) per run.

    A run that the neighbours made busy is marked in host_load.json and, with
    RERUN_BUSY (runs that a verdict will read), run once more.

    Raises:
      InterruptedRun: a signal stopped the study (the runs before it keep
        their records; the same command runs the rest).
    """
    os.makedirs(os.path.join(results_dir, "logs"), exist_ok=True)
    queue = [(cell, k) for cell, runs in todo for k in range(runs)]
    results, total, retried = [], len(queue), set()
    with process.StopRequests() as sig:
        i = 0
        while queue:
            cell, k = queue.pop(0)
            i += 1
            if sig.signum:  # it came between two runs: start no other
                _stop(sig.signum, i - 1, total, results)
            status, what, share = _run_one(
                cell, host, results_dir, jpeg, sig, f"[{i}/{total}]", out
            )
            busy = share is not None and share > BUSY_SHARE and status in DONE
            if busy:
                what += f" (busy host: others used {share * 100:.0f}% of its cores"
                if rerun_busy and (cell.id, k) not in retried and not sig.signum:
                    retried.add((cell.id, k))
                    queue.insert(0, (cell, k))
                    total += 1
                    what += "; run again"
                what += ")"
            results.append((cell, status, what))
            print(f"[{i}/{total}] {cell.id} {status}: {what}", file=out, flush=True)
            if sig.signum:
                _stop(sig.signum, i, total, results)
    return results


def _run_one(cell, host, results_dir, jpeg, sig, counter: str, out) -> tuple:
    """One run of CELL: (status, what, others' share of the host or None)."""
    print(f"{counter} {cell.id} {cell.describe()} ...", file=out, flush=True)
    # A fresh model_dir: a cell's rate is measured over its own steps,
    # never over the tail of an older attempt's checkpoint.
    shutil.rmtree(labels.model_dir(results_dir, cell.id), ignore_errors=True)
    log_path = os.path.join(results_dir, "logs", f"{cell.id}.log")
    before = {f.path for f in records.by_label(results_dir).get(cell.id, [])}
    with _Neighbours() as load:
        # The cell gets the very signal the study caught and all the time it needs
        # to record itself `interrupted`.
        code = process.run(
            cell.argv(host, results_dir, jpeg),
            log_path,
            sig,
            env=command.child_env(),
            cpus=cell.pinned(host),
            grace=None,
            relay=True,
        )
    status, what, path = _outcome(results_dir, cell, code, log_path, sig.signum, before)
    if path and load.share is not None:
        _note_load(results_dir, path, load.share)
    return status, what, load.share


def _stop(signum: int, ran: int, total: int, results: list):
    done = sum(1 for _, s, _ in results if s in DONE)
    raise errors.InterruptedRun(
        f"interrupted by {signal.Signals(signum).name} after {ran} of {total} cell(s) "
        f"({done} recorded); run the same command again to run the rest"
    )


def _outcome(results_dir: str, cell, code: int, log_path: str, signalled, before) -> tuple:
    """(status, what, path of the record this run wrote or None); BEFORE: the older ones.
    Only a record of what the cell asks is its result (cell_records)."""
    new = [f for f in records.by_label(results_dir).get(cell.id, []) if f.path not in before]
    found = list(cell_records.split(cell, new).ours)
    latest = found[-1] if found else None  # the latest start
    if latest and memory_cap.reached(latest.record):  # a measurement: this cap is too small
        return "capped", f"{latest.record['error']} (record: {latest.path})", latest.path
    if latest and latest.run.status in DONE and code == 0:
        rate = latest.run.results.examples_per_sec
        shown = f"{rate:,.1f} examples/s; " if isinstance(rate, (int, float)) else ""
        return latest.run.status, f"{shown}record: {latest.path}", latest.path
    last = process.last_error_line(log_path, limit=300, or_last=True) or ""
    # A signal that stopped the cell before it wrote a record is an interruption too.
    stopped = signalled or code in (130, 143, -signal.SIGINT, -signal.SIGTERM)
    status = (latest.run.status if latest else None) or ("interrupted" if stopped else "failed")
    return status, f"exit {code}: {last} (log: {log_path})", None
