"""What one tune trial measured, read from its run record: an Outcome, and a score.

`outcome` turns a trial's record (and its metrics.jsonl's loss curve) into
an Outcome: its status (ok, oom, invalid, failed), rate, compile time,
$/epoch on the trial's own price basis, wall time and busy-host mark;
`score` ranks a setting's outcomes for the objective.  tune/trials.py runs
the trials.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import re
import signal
import statistics

from tpubench.core import host_load, money, safe_files
from tpubench.cost import epoch
from tpubench.storage import gcs
from tpubench.tune import space

MAX_METRICS_BYTES = 64 << 20  # a trial's metrics.jsonl: a line a logged step
OOM = re.compile(
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
    epoch: str = ""  # what its $/epoch counts: '1 epoch = ...' (cost/epoch.py)
    wall_seconds: float = 0.0
    record: str | None = None
    reason: str = ""
    reused: bool = False
    busy: str = ""  # why the host was busy during the trial, or ""
    attempt: int = 0  # 1, 2..: a re-run of a trial that had a busy host
    numerics: bool = False  # a numerics check (on real data), not a speed trial

    def said(self, why: str | None = None) -> str:
        """What the trial measured, as its line says it; WHY: the reason it is disqualified."""
        if self.status == "ok":
            text = f"{self.rate:,.1f} examples/s (compile {self.compile_seconds or 0:.1f} s)"
        elif self.status == "oom":
            text = "out of memory"
        else:
            text = f"{self.status}: {self.reason}"
        if why:
            text += f"; DISQUALIFIED: {why}"
        if self.busy and not self.numerics:  # a loss does not depend on the host's load
            text += f"; busy host ({self.busy}): marked"
        return text + (" [recorded earlier]" if self.reused else "")


def score(outcomes: list[Outcome], objective: str) -> float:
    """Higher is better: the median rate, or minus the median $/epoch."""
    if objective == "cost":
        usd = [o.usd_per_epoch for o in outcomes if o.usd_per_epoch]
        if usd:
            return -statistics.median(usd)
    rates = [o.rate for o in outcomes if o.rate]
    return statistics.median(rates) if rates else 0.0


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
        kind = "oom" if OOM.search(reason) or returncode == -signal.SIGKILL else "failed"
    cost = record.get("cost") or {}
    # The trial's own basis: --pricing, passed to every trial.
    machines = money.on_basis(cost.get("machines") or [], money.record_basis(cost))
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
        epoch=epoch.of_record(record) if kind == "ok" else "",
        wall_seconds=wall,
        record=path,
        reason=reason or (f"exit code {returncode}" if kind == "failed" else ""),
        busy=host_load.busy(res.get("host_cpu")),
    )


def _num(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _losses(record: dict) -> tuple[tuple[int, float], ...]:
    """The training loss curve, (step, loss) as logged (metrics.jsonl): what the guard compares."""
    model_dir = (record.get("config") or {}).get("model_dir") or ""
    path = os.path.join(model_dir, "metrics.jsonl")
    if not model_dir or gcs.is_gcs(model_dir):
        return ()
    out = {}
    try:
        text = safe_files.read_text(path, "", MAX_METRICS_BYTES, "a run's metrics.jsonl")
        for line in text.splitlines():
            if line.strip():
                row = json.loads(line)
                loss, step = _num(row.get("train/loss")), row.get("step")
                if loss is not None and isinstance(step, int):
                    out[step] = loss
    except (safe_files.Unreadable, ValueError, AttributeError):
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
