"""The cost preview shown before a sweep launches: catalog price x estimated time.

Prices come from `tpubench prices --machine=... --format=json` run as a
subprocess (the catalog and TensorFlow-free pricing stay tpubench's; the
launcher reads only records in process).  Time per configuration
comes, best first, from an earlier record of the same configuration
(measured: one of its own, sweep/resume.py), the sweep file's `estimate: {seconds: S}` or
`estimate: {steps_per_second: R}` with `flags: {train_steps: N}`, the median
time of the configurations already done, else it is unknown and the total
says so.  Configurations already done are listed with their measured time.
Cloud executors add the VM overhead (create, install, delete) and multiply
by the number of VMs.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import subprocess

from tpubench.core import columns, durations, money
from tpubench_launch import commands, errors


@dataclasses.dataclass(frozen=True)
class Row:
    config_id: str
    describe: str
    usd_per_hour: float | None  # for the whole configuration (all its VMs)
    seconds: float | None
    source: str  # done | measured | estimate | median of done | unknown

    @property
    def usd(self) -> float | None:
        if self.usd_per_hour is None or self.seconds is None:
            return None
        return self.usd_per_hour * self.seconds / 3600


def price(machine: str, pricing: str, cache: dict) -> float:
    """USD/hour of MACHINE from tpubench's catalog.

    Raises:
      UsageError: tpubench could not price it (its one-line reason is kept).
    """
    key = (machine, pricing)
    if key not in cache:
        proc = subprocess.run(
            [
                *commands.local_tpubench(),
                "prices",
                f"--machine={machine}",
                f"--pricing={pricing}",
                "--format=json",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if proc.returncode != 0:
            lines = [x for x in proc.stderr.splitlines() if x.strip()]
            reason = lines[-1] if lines else f"exit code {proc.returncode}"
            raise errors.UsageError(f"cost preview: cannot price machine {machine!r}: {reason}")
        cache[key] = float(json.loads(proc.stdout)["usd_per_hour"])
    return cache[key]


def measured_seconds(own: dict) -> dict[str, float]:
    """Seconds each configuration's earlier run took (its record's started -> finished), newest
    wins; OWN: configuration id -> its own records (sweep/resume.py), oldest start first.

    Records that never trained (no results) are left out: their time says
    nothing about a full run.
    """
    out = {}
    for config_id, found in own.items():
        for f in found:  # oldest start first: the newest wins
            _took(out, config_id, f.record)
    return out


def _took(out: dict, config_id: str, rec: dict) -> None:
    if not (rec.get("results") or {}).get("train_wall_seconds"):
        return
    try:
        took = dt.datetime.fromisoformat(rec["finished"]) - dt.datetime.fromisoformat(
            rec["started"]
        )
    except (KeyError, TypeError, ValueError):
        return
    out[config_id] = max(took.total_seconds(), float(rec["results"]["train_wall_seconds"]))


def estimate(config, sweep, measured: dict, typical: float | None) -> tuple[float | None, str]:
    """(seconds, where the figure comes from) for one configuration."""
    if config.id in measured:
        return measured[config.id], "measured"
    if config.seconds is not None:  # a run's own estimate (runs:)
        return float(config.seconds), "estimate"
    est = sweep.estimate
    if est.get("seconds") is not None:
        return float(est["seconds"]), "estimate"
    rate = est.get("steps_per_second")
    steps = config.train_flags().get("train_steps")
    if rate and steps:
        return float(steps) / float(rate), "estimate"
    if typical is not None:
        return typical, "median of done"
    return None, "unknown"


def rows(sweep, configs, resumed, pricing: str, vms_of, overhead_seconds: float = 0.0):
    """One row per configuration (done ones too); RESUMED: sweep/resume.find's answer;
    VMS_OF(config) is how many machines it holds.

    A configuration that is not done is estimated, best first, from its own
    earlier record, the sweep file's estimate, or the median time of the
    configurations already done.
    """
    cache: dict = {}
    measured, done = measured_seconds(resumed.own), resumed.done
    times = sorted(measured[c.id] for c in configs if c.id in done and c.id in measured)
    typical = times[len(times) // 2] if times else None
    out = []
    for c in configs:
        machine = c.settings.get("machine")
        per_hour = price(machine, pricing, cache) * vms_of(c) if machine else None
        seconds, source = estimate(c, sweep, measured, typical)
        if c.id in done:
            source = "done"
        elif seconds is not None:
            seconds += overhead_seconds
        out.append(Row(c.id, c.describe(), per_hour, seconds, source))
    return out


def render(rows: list[Row], title: str, cols: int | None = None) -> str:
    """Aligned text within COLS (the console's): one line per configuration, the total to run
    and what is done; the configuration's description comes last and folds under itself."""
    head = ("config", "$/hour", "est. time", "est. $", "time from", "what")
    body = [
        (
            r.config_id,
            money.usd(r.usd_per_hour),
            _duration(r.seconds),
            money.usd(r.usd),
            r.source,
            r.describe,
        )
        for r in rows
    ]
    todo = [r for r in rows if r.source != "done"]
    done = [r for r in rows if r.source == "done"]
    body.append(_total("total", f"{len(todo)} to run", todo))
    if done:
        body.append(_total("done", f"{len(done)} recorded (measured)", done))
    table = columns.aligned([head, *body], right=frozenset({1, 2, 3}), cols=cols)
    return "\n".join([columns.fold(title, cols), *table])


def _total(name: str, what: str, rows: list[Row]) -> tuple:
    known = [r.usd for r in rows if r.usd is not None]
    timed = [r.seconds for r in rows if r.seconds is not None]
    seconds = sum(timed) if timed or not rows else None
    usd = money.usd(sum(known)) if known else ("$0" if not rows else "n/a")
    missing = len(rows) - len(known)
    if missing and known:
        usd += f" + {missing} not estimated"
    return (name, "", _duration(seconds), usd, "", what)


def total_usd(rows: list[Row]) -> float:
    """Estimated USD of the configurations still to run."""
    return sum(r.usd for r in rows if r.usd is not None and r.source != "done")


def _duration(seconds: float | None) -> str:
    return "n/a" if seconds is None else durations.clock(seconds)
