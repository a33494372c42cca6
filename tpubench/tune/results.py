"""A finished search as a ranked table, the winner per objective and the winner's flag file.

Pure Python.  Each setting is ranked by its trials at the longest length it
reached (a setting that earned longer runs ranks above one that did not),
then by its median rate (or $/epoch); the spread is the range of its
repeats.  The winner is the one the rounds settled on (search.Result.winner,
decide.py) when they ran.  Numerics checks (their own runs on real data)
are not speed trials and are not rows; trials at another batch size are
rows apart (`status` "apart"): another batch trains another way.  Compile
time is each trial's own (`results.compile_seconds`), never part of a rate.
"""

from __future__ import annotations

import dataclasses
import statistics

from tpubench.children import command
from tpubench.tune import outcomes, search, space

OBJECTIVES = ("throughput", "cost")


@dataclasses.dataclass(frozen=True)
class Row:
    setting: space.Setting
    name: str
    status: str  # ok, oom, failed, disqualified, apart (another batch size)
    steps: int
    n: int = 0
    rate: float | None = None  # median examples/sec
    low: float | None = None
    high: float | None = None
    usd_per_epoch: float | None = None
    epoch: str = ""  # what its $/epoch counts (its trials' records)
    speedup: float | None = None  # over the plain defaults at the same trial length
    compile_seconds: float | None = None
    note: str = ""
    records: tuple[str, ...] = ()
    busy: int = 0  # of its runs counted, those on a busy host


def rows(result: search.Result, default: space.Setting, objective: str) -> list[Row]:
    """Every setting tried: measured ones ranked best first, then the rest with why."""
    by: dict[space.Setting, list[outcomes.Outcome]] = {}
    for o in result.outcomes:
        if not o.numerics:
            by.setdefault(o.setting, []).append(o)
    good, bad = [], []
    for s, outs in by.items():
        name = s.describe(default, result.default_batch)
        ok = [o for o in outs if o.status == "ok"]
        if s in result.disqualified:
            bad.append(_row_of(s, name, ok or outs, "disqualified", result.disqualified[s]))
        elif not ok:
            o = outs[-1]
            bad.append(Row(s, name, o.status, o.steps, note=o.reason, records=_paths(outs)))
        else:
            steps = max(o.steps for o in ok)
            row = _row_of(s, name, [o for o in ok if o.steps == steps], "ok", "")
            base = [o.rate for o in by.get(default, []) if o.status == "ok" and o.steps == steps]
            speed = row.rate / statistics.median(base) if base and row.rate else None
            row = dataclasses.replace(row, speedup=speed)
            if s in result.other_batches:
                note = "another batch size trains differently: reported apart"
                bad.append(dataclasses.replace(row, status="apart", note=note))
            else:
                good.append(row)
    good.sort(key=lambda r: (r.steps, _score(r, objective)), reverse=True)
    return good + bad


def _row_of(s, name, outs, status, note) -> Row:
    rates = [o.rate for o in outs if o.rate]
    usd = [o.usd_per_epoch for o in outs if o.usd_per_epoch]
    comp = [o.compile_seconds for o in outs if o.compile_seconds is not None]
    return Row(
        setting=s,
        name=name,
        status=status,
        steps=max(o.steps for o in outs),
        n=len(rates),
        rate=statistics.median(rates) if rates else None,
        low=min(rates) if rates else None,
        high=max(rates) if rates else None,
        usd_per_epoch=statistics.median(usd) if usd else None,
        epoch=next((o.epoch for o in outs if o.epoch), ""),
        compile_seconds=statistics.median(comp) if comp else None,
        note=note,
        records=_paths(outs),
        busy=sum(1 for o in outs if o.busy),
    )


def _paths(outs) -> tuple[str, ...]:
    return tuple(o.record for o in outs if o.record)


def _score(r: Row, objective: str) -> float:
    if objective == "cost" and r.usd_per_epoch:
        return -r.usd_per_epoch
    return r.rate or 0.0


def winners(ranked: list[Row], settled: space.Setting | None = None) -> dict[str, Row]:
    """The winner per objective: SETTLED (the rounds' choice), else the best measured longest.

    On one machine $/epoch is price/rate, so the rounds' choice wins both."""
    ok = [r for r in ranked if r.status == "ok"]
    if not ok:
        return {}
    chosen = next((r for r in ok if r.setting == settled), None)
    if chosen:
        return {"throughput": chosen, "cost": chosen}
    longest = max(r.steps for r in ok)
    final = [r for r in ok if r.steps == longest]
    out = {"throughput": max(final, key=lambda r: r.rate or 0.0)}
    priced = [r for r in final if r.usd_per_epoch]
    out["cost"] = min(priced, key=lambda r: r.usd_per_epoch) if priced else out["throughput"]
    return out


def flagfile(model_flags: dict, winner: Row, comment: str) -> str:
    """A flag file `tpubench train --flagfile=FILE` takes as is: the user's flags + the winner's."""
    flags = {**model_flags, **winner.setting.flags()}
    lines = [f"# {line}" for line in comment.splitlines()]
    return "\n".join(lines + command.flags_argv(flags)) + "\n"


def other_batch(ranked: list[Row], result: search.Result, default: space.Setting):
    """(the fastest short trial at another batch size, its rate over the same setting's short
    trials at the default batch or None), or None if no other batch ran."""
    apart = [r for r in ranked if r.status == "apart" and r.rate]
    if not apart:
        return None
    best = max(apart, key=lambda r: r.rate)
    same = dataclasses.replace(best.setting, batch_size=default.batch_size)
    base = [
        o.rate
        for o in result.outcomes
        if o.setting == same and o.steps == best.steps and o.status == "ok" and o.rate
    ]
    return best, (best.rate / statistics.median(base) if base else None)


def summary(ranked: list[Row], result: search.Result, wins: dict, extra: dict) -> dict:
    """The tune's summary document (tune.json): plain JSON, no TensorFlow needed to read."""

    def row(r: Row) -> dict:
        d = dataclasses.asdict(r)
        d["setting"] = r.setting.flags()
        d["records"] = list(r.records)
        return d

    v = result.verdict
    ratio = v.ratio if v else None
    return {
        **extra,
        "answer": v.text() if v else None,
        "decided": bool(v and v.decided),
        "ratio": dataclasses.asdict(ratio) if ratio else None,
        "vs_defaults": dataclasses.asdict(result.vs_defaults) if result.vs_defaults else None,
        "numerics_checks": [line for _, line in result.checks],
        "busy_reruns": [o.record for o in result.busy if o.record],
        "ranked": [row(r) for r in ranked],
        "winners": {k: row(v) for k, v in wins.items()},
        "notes": list(result.notes),
        "trials": len(result.outcomes),
        "spent_seconds": round(result.spent_seconds, 1),
    }
