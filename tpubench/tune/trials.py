"""One trial = one real `tpubench train` process; its run record is the result.

A subprocess per trial because thread pools, XLA and the mixed-precision
policy are set once per process in TensorFlow.  Each trial carries a label
(`--run_label`) that is a hash of the tune's identity, its setting, its steps
and its repeat number, so a rerun of the same tune finds the trials already
recorded and runs only the rest (a sweep's resume).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from tpubench.core import errors
from tpubench.storage import gcs, records
from tpubench.tune import space

# Finished trials are reused on resume; `interrupted`/`running`/`died` run again.
REUSED = ("ok", "invalid", "failed")
# A trial is on a busy host when other processes used more than this share of
# all cores while it trained (the record's host_cpu: system minus this process).
BUSY_PERCENT = 25.0
_OOM = re.compile(
    r"out of memory|\bOOM\b|ResourceExhausted|Resource exhausted|MemoryError|"
    r"failed to allocate|cannot allocate memory",
    re.I,
)


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What one trial measured (or why it measured nothing)."""

    setting: space.Setting
    steps: int
    repeat: int
    status: str  # ok, oom, invalid (NaN), failed
    batch: int | None = None  # the global batch the trial ran (the record's)
    rate: float | None = None  # examples/sec, steady state, compile excluded
    compile_seconds: float | None = None
    final_loss: float | None = None
    first_loss: float | None = None
    losses: tuple[tuple[int, float], ...] = ()  # (step, training loss) as logged
    usd_per_epoch: float | None = None
    wall_seconds: float = 0.0
    record: str | None = None
    reason: str = ""
    reused: bool = False
    busy: str = ""  # why the host was busy during the trial, or ""
    attempt: int = 0  # 1, 2..: a re-run of a trial that had a busy host
    numerics: bool = False  # a numerics check (on real data), not a speed trial


def label(
    tune_id: str, setting: space.Setting, steps: int, repeat: int, attempt=0, numerics=False
) -> str:
    parts = [dataclasses.asdict(setting), steps, repeat]
    # Only when set, so the labels of an earlier tune's plain trials still match.
    if attempt:
        parts.append({"attempt": attempt})
    if numerics:
        parts.append("numerics")
    blob = json.dumps(parts, sort_keys=True)
    return f"{tune_id}-{hashlib.sha256(blob.encode()).hexdigest()[:10]}"


class Runner:
    """Runs trials as `python -m tpubench train` (or `infer`) and reads their records back."""

    def __init__(
        self,
        tune_id: str,
        base_flags: dict,
        records_dir: str,
        work_dir: str,
        out,
        numerics=None,
        command: str = "train",
    ):
        self.tune_id = tune_id
        self.command = command  # infer: a serving trial (its STEPS is unused, 0)
        self.base_flags = base_flags
        self.numerics_flags = numerics or {}  # what a numerics check adds (real data)
        self.records_dir = records_dir
        self.work_dir = work_dir
        self.out = out
        self._known = _index(records_dir)

    def argv(self, setting, steps: int, run_label: str, numerics=False) -> list[str]:
        flags = {**self.base_flags, **setting.flags()}
        if self.command == "train":
            flags["train_steps"] = steps
            flags["model_dir"] = os.path.join(self.work_dir, "model_dirs", run_label)
        if numerics:
            flags.update(self.numerics_flags)
        flags.update(results_dir=self.records_dir, run_label=run_label)
        return [sys.executable, "-m", "tpubench", self.command, *argv_of(flags)]

    def recorded(self, setting, steps: int, repeat: int, attempt=0, numerics=False):
        """The outcome of a trial recorded by an earlier run of this tune, if any."""
        run_label = label(self.tune_id, setting, steps, repeat, attempt, numerics)
        found = self._known.get(run_label)
        if found and found[1].get("status") in REUSED:
            o = outcome(setting, steps, repeat, *found, wall=self._wall(run_label))
            return dataclasses.replace(o, reused=True, attempt=attempt, numerics=numerics)
        return None

    def _wall(self, run_label: str) -> float | None:
        """The wall time this trial's process took, as tune measured it (None: unknown)."""
        try:
            with open(os.path.join(self.work_dir, "logs", f"{run_label}.seconds")) as f:
                return float(f.read())
        except (OSError, ValueError):
            return None

    def run(self, setting, steps: int, repeat: int, attempt=0, numerics=False) -> Outcome:
        """Runs one trial to its end.

        Raises:
          InterruptedRun: SIGINT/SIGTERM reached tune (the trial is stopped and
            records itself `interrupted`; the same command resumes).
        """
        run_label = label(self.tune_id, setting, steps, repeat, attempt, numerics)
        model_dir = os.path.join(self.work_dir, "model_dirs", run_label)
        shutil.rmtree(model_dir, ignore_errors=True)  # a half-run trial starts over
        log = os.path.join(self.work_dir, "logs", f"{run_label}.log")
        os.makedirs(os.path.dirname(log), exist_ok=True)
        start = time.monotonic()
        code = _run_child(self.argv(setting, steps, run_label, numerics), log)
        wall = time.monotonic() - start
        with open(os.path.join(self.work_dir, "logs", f"{run_label}.seconds"), "w") as f:
            f.write(f"{wall:.3f}\n")  # what a resumed tune spends of its budget for this trial
        # A trial's checkpoints are never reused; its metrics.jsonl (first loss) is kept.
        for sub in ("checkpoints", "tensorboard"):
            shutil.rmtree(os.path.join(model_dir, sub), ignore_errors=True)
        self._known = _index(self.records_dir)
        found = self._known.get(run_label)
        if found is None:
            said = _last_line(log) or f"exit code {code}"
            status = "oom" if code == -signal.SIGKILL or _OOM.search(said) else "failed"
            if code == -signal.SIGKILL:
                said = "killed by SIGKILL (the kernel's out-of-memory killer, most likely)"
            return Outcome(
                setting, steps, repeat, status, wall_seconds=wall, reason=said, attempt=attempt
            )
        o = outcome(setting, steps, repeat, *found, returncode=code, wall=wall)
        return dataclasses.replace(o, attempt=attempt, numerics=numerics)


def argv_of(flags: dict) -> list[str]:
    out = []
    for name, value in flags.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out.append(f"--{name}" if value else f"--no{name}")
        elif isinstance(value, (list, tuple)):
            out.append(f"--{name}={','.join(str(v) for v in value)}")
        else:
            out.append(f"--{name}={value}")
    return out


def outcome(setting, steps, repeat, path, record, returncode=0, wall=None) -> Outcome:
    """An Outcome from a trial's run record."""
    res = record.get("results") or {}
    status = record.get("status")
    reason = str(record.get("error") or record.get("reason") or "")
    if status == "ok":
        kind = "ok"
    elif status == "invalid":
        kind = "invalid"
    else:
        kind = "oom" if _OOM.search(reason) or returncode == -signal.SIGKILL else "failed"
    machines = (record.get("cost") or {}).get("machines") or []
    if wall is None:
        wall = _recorded_wall(record)
    losses = _losses(record)
    return Outcome(
        setting=setting,
        steps=steps,
        repeat=repeat,
        status=kind,
        batch=record.get("global_batch_size"),
        rate=_num(res.get("examples_per_sec")),
        compile_seconds=_num(res.get("compile_seconds")),
        final_loss=_num(res.get("final_loss")),
        first_loss=losses[0][1] if losses else None,
        losses=losses,
        usd_per_epoch=_num(machines[0].get("usd_per_epoch")) if machines else None,
        wall_seconds=wall,
        record=path,
        reason=reason or (f"exit code {returncode}" if kind == "failed" else ""),
        busy=busy_host(res.get("host_cpu")),
    )


def _num(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def busy_host(host_cpu) -> str:
    """Why the host was busy while the trial trained ('' if it was not), from its record."""
    if not isinstance(host_cpu, dict):
        return ""
    system = _num(host_cpu.get("system_percent_mean"))
    mine = _num(host_cpu.get("process_percent_mean"))
    if system is None or mine is None:
        return ""
    others = system - mine
    if others <= BUSY_PERCENT:
        return ""
    return f"other processes used {others:.0f}% of the {host_cpu.get('cores', '?')} cores"


def _losses(record: dict) -> tuple[tuple[int, float], ...]:
    """The training loss curve, (step, loss) as logged (metrics.jsonl): what the guard compares."""
    model_dir = (record.get("config") or {}).get("model_dir") or ""
    path = os.path.join(model_dir, "metrics.jsonl")
    if not model_dir or gcs.is_gcs(model_dir) or not os.path.isfile(path):
        return ()
    out = {}
    try:
        with open(path) as f:
            for line in f:
                row = json.loads(line)
                loss, step = _num(row.get("train/loss")), row.get("step")
                if loss is not None and isinstance(step, int):
                    out[step] = loss
    except (OSError, ValueError, AttributeError):
        return ()
    return tuple(sorted(out.items()))


def _recorded_wall(record: dict) -> float:
    """A reused trial's cost in the budget: startup plus its start-to-finish span."""

    try:
        a = dt.datetime.fromisoformat(record["started"])
        b = dt.datetime.fromisoformat(record["finished"])
        span = (b - a).total_seconds()
    except (KeyError, TypeError, ValueError):
        span = 0.0
    return span + float(record.get("startup_seconds") or 0.0)


def _index(records_dir: str) -> dict[str, tuple[str, dict]]:
    """run_label -> (path, record) of the latest record of each label in RECORDS_DIR."""
    if not gcs.is_gcs(records_dir) and not os.path.isdir(records_dir):
        return {}
    out: dict[str, tuple[str, dict]] = {}
    for path in records.find(records_dir):
        try:
            rec = records.read(path)
        except errors.TpubenchError:
            continue  # not a record (a summary, a stray file): nothing to resume from
        lab = rec.get("run_label")
        if lab and (lab not in out or str(rec.get("started")) >= str(out[lab][1].get("started"))):
            out[lab] = (path, rec)
    return out


def _run_child(argv: list[str], log: str) -> int:
    """Runs ARGV with output to LOG; a signal to tune stops the child first, then raises."""
    caught: list[int] = []

    def _stop(signum, frame):
        caught.append(signum)

    old = {s: signal.signal(s, _stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with open(log, "w") as f:
            # Its own process group: a Ctrl-C at the terminal reaches tune only,
            # and tune stops the trial with one SIGTERM (it records `interrupted`).
            p = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
            while p.poll() is None:
                if caught:
                    p.terminate()
                    try:
                        p.wait(timeout=60)
                    except subprocess.TimeoutExpired:
                        p.kill()
                        p.wait()
                    name = signal.Signals(caught[0]).name
                    raise errors.InterruptedRun(
                        f"interrupted by {name}; run the same command again to resume "
                        "(finished trials are reused)"
                    )
                time.sleep(0.1)
        return p.returncode
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _last_line(log: str) -> str:
    try:
        with open(log, errors="replace") as f:
            lines = [x.strip() for x in f if x.strip()]
    except OSError:
        return ""
    for line in reversed(lines):
        if "error" in line.lower():
            return line
    return lines[-1] if lines else ""
