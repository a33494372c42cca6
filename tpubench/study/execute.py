"""Running a study's cells on this host: one tpubench process per cell, resumable.

A cell is done when as many records as the study's repeats carry its id as
`run_label` with status ok (or invalid: a NaN loss is a result too, and
running it again would give the same; so is a run that failed at its
--memory_limit).  Failed and interrupted runs run
again next time.  SIGINT and SIGTERM are passed to the running cell (its own
handler writes an `interrupted` record) and the study stops after it.

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

from tpubench.core import errors
from tpubench.hardware import memory_cap
from tpubench.storage import files, records
from tpubench.study import cells as cells_lib

DONE = ("ok", "invalid", "capped")  # capped: a run's status, never a record's (reached below)
# Others' CPU use while a cell ran, as a share of the host's cores, that marks
# the run busy (on 2 cores: half a core taken by someone else on average).
BUSY_SHARE = 0.25
LOAD_FILE = "host_load.json"


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


def done_counts(results_dir: str) -> dict[str, int]:
    """{run_label: how many ok/invalid records carry it}."""
    return {
        label: sum(1 for _, r in found if r.get("status") in DONE or memory_cap.reached(r))
        for label, found in recorded(results_dir).items()
    }


def done_ids(results_dir: str, repeats: int = 1) -> set[str]:
    return {label for label, n in done_counts(results_dir).items() if n >= repeats}


def host_load(results_dir: str) -> dict[str, float]:
    """{record file name: others' share of the host's cores while it ran}."""
    try:
        with open(os.path.join(results_dir, LOAD_FILE)) as f:
            loads = json.load(f)
    except (OSError, ValueError):
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
    argv = cells_lib.python_argv(
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
        argv, capture_output=True, text=True, check=False, env=cells_lib.child_env()
    )
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
    with _Signals() as sig:
        i = 0
        while queue:
            cell, k = queue.pop(0)
            i += 1
            if sig.caught:  # it came between two runs: start no other
                _stop(sig.caught, i - 1, total, results)
            status, what, share = _run_one(
                cell, host, results_dir, jpeg, sig, f"[{i}/{total}]", out
            )
            busy = share is not None and share > BUSY_SHARE and status in DONE
            if busy:
                what += f" (busy host: others used {share * 100:.0f}% of its cores"
                if rerun_busy and (cell.id, k) not in retried and not sig.caught:
                    retried.add((cell.id, k))
                    queue.insert(0, (cell, k))
                    total += 1
                    what += "; run again"
                what += ")"
            results.append((cell, status, what))
            print(f"[{i}/{total}] {cell.id} {status}: {what}", file=out, flush=True)
            if sig.caught:
                _stop(sig.caught, i, total, results)
    return results


def _run_one(cell, host, results_dir, jpeg, sig, counter: str, out) -> tuple:
    """One run of CELL: (status, what, others' share of the host or None)."""
    print(f"{counter} {cell.id} {cell.describe()} ...", file=out, flush=True)
    # A fresh model_dir: a cell's rate is measured over its own steps,
    # never over the tail of an older attempt's checkpoint.
    shutil.rmtree(cells_lib.model_dir(results_dir, cell.id), ignore_errors=True)
    cores = cell.pinned(host)
    log_path = os.path.join(results_dir, "logs", f"{cell.id}.log")
    before = {path for path, _ in recorded(results_dir).get(cell.id, [])}
    with open(log_path, "w") as log, _Neighbours() as load:
        child = subprocess.Popen(
            cell.argv(host, results_dir, jpeg),
            stdout=log,
            stderr=subprocess.STDOUT,
            env=cells_lib.child_env(),
            preexec_fn=(lambda c=cores: os.sched_setaffinity(0, c)) if cores else None,
        )
        code = sig.started(child).wait()
    status, what, path = _outcome(results_dir, cell.id, code, log_path, sig.caught, before)
    if path and load.share is not None:
        _note_load(results_dir, path, load.share)
    return status, what, load.share


def _stop(signum: int, ran: int, total: int, results: list):
    done = sum(1 for _, s, _ in results if s in DONE)
    raise errors.InterruptedRun(
        f"interrupted by {signal.Signals(signum).name} after {ran} of {total} cell(s) "
        f"({done} recorded); run the same command again to run the rest"
    )


def _outcome(results_dir: str, cell_id: str, code: int, log_path: str, signalled, before) -> tuple:
    """(status, what, path of the record this run wrote or None); BEFORE: the older ones."""
    found = [pr for pr in recorded(results_dir).get(cell_id, []) if pr[0] not in before]
    latest = max(found, key=lambda pr: pr[1].get("started") or "", default=None)
    if latest and memory_cap.reached(latest[1]):  # a measurement: this cap is too small
        return "capped", f"{latest[1]['error']} (record: {latest[0]})", latest[0]
    if latest and latest[1].get("status") in DONE and code == 0:
        rate = (latest[1].get("results") or {}).get("examples_per_sec")
        shown = f"{rate:,.1f} examples/s; " if isinstance(rate, (int, float)) else ""
        return latest[1]["status"], f"{shown}record: {latest[0]}", latest[0]
    with open(log_path, errors="replace") as f:
        lines = [x.strip() for x in f.read().splitlines() if x.strip()]
    last = next((x for x in reversed(lines) if "error" in x.lower()), lines[-1] if lines else "")
    # A signal that stopped the cell before it wrote a record is an interruption too.
    stopped = signalled or code in (130, 143, -signal.SIGINT, -signal.SIGTERM)
    status = (latest[1].get("status") if latest else None) or (
        "interrupted" if stopped else "failed"
    )
    return status, f"exit {code}: {last[:300]} (log: {log_path})", None
