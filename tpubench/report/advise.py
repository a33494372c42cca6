"""`tpubench advise`: the cheapest configuration that meets a deadline, or the
fastest within a budget, from measured records and catalog prices.

Time comes from the records (median throughput over trials, or median time
to the target accuracy); prices come from the catalog now, on-demand and
spot side by side in two labelled columns, for every machine the records
were priced as; the advice itself is on the one basis `--pricing` names.  Measured
figures can mislead a decision in known ways, so the answer warns when
records are old, come from another TensorFlow version, measured a tiny
variant, or were input-bound.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

from tpubench.core import basis, durations, errors, money, safe_text
from tpubench.core.basis import Basis
from tpubench.core.config import AdviseConfig
from tpubench.cost import catalog as catalog_lib
from tpubench.cost import catalog_rows, epoch, measured_on, pricing
from tpubench.report import advise_caveats, load, render, stats, tables
from tpubench.report import group as group_lib


@dataclasses.dataclass
class Candidate:
    """One configuration priced as one machine."""

    group: group_lib.Group
    machine: str
    seconds: float  # median time for the job
    seconds_slow: float  # at the slow end of the interval
    usd_per_hour: dict  # pricing -> USD/hour or None
    price_dates: dict  # pricing -> "as_of" text
    what_if: bool = False  # priced as a machine its runs did not run on (measured_on)

    def usd(self, which: str) -> float | None:
        rate = self.usd_per_hour.get(which)
        return None if rate is None else self.seconds / 3600.0 * rate


def _job_seconds(g: group_lib.Group, cfg: AdviseConfig) -> tuple[float, float] | None:
    if cfg.to_target:
        iv = stats.median_interval([r.target_seconds for r in g.runs])
        return None if iv is None else (iv.median, iv.high)
    examples = [r.examples_per_epoch for r in g.runs if r.examples_per_epoch]
    rate = stats.median_interval([r.examples_per_sec for r in g.runs])
    if not examples:
        return None
    work = cfg.epochs * sorted(examples)[len(examples) // 2]
    return work / rate.median, work / rate.low


def candidates(groups: list[group_lib.Group], cfg: AdviseConfig, cat) -> tuple[list, list]:
    """(candidates, notes): each group x each machine its records were priced as."""
    out, notes = [], []
    for g in groups:
        if any(r.dims.get("kind") == "data_bench" for r in g.runs):
            notes.append(
                f"{g.label}: left out (`tpubench data bench` times the input pipeline alone; "
                "no model step to run or price)"
            )
            continue
        secs = _job_seconds(g, cfg)
        if secs is None:
            why = "no run reached the target" if cfg.to_target else "no epoch size recorded"
            notes.append(f"{g.label}: left out ({why})")
            continue
        machines = dict.fromkeys(m.machine for r in g.runs for m in r.all_machines)
        for machine in machines:
            overrides = [
                m.usd_per_hour
                for r in g.runs
                for m in r.all_machines
                if m.machine == machine and m.pricing == Basis.OVERRIDE
            ]
            prices, dates = {}, {}
            for which in basis.CHOSEN:
                if overrides:  # --price_per_hour: the user's price, no catalog row
                    prices[which] = overrides[0] if which == Basis.ON_DEMAND else None
                    dates[which] = Basis.OVERRIDE
                    continue
                try:
                    hourly = pricing.hourly(machine, cat, which)
                except errors.TpubenchError:
                    prices[which], dates[which] = None, ""
                    continue
                prices[which] = hourly.usd_per_hour
                dates[which] = ", ".join(
                    sorted({catalog_rows.dated(x.as_of, x.date_known) for x in hourly.lines})
                )
            if not machine or all(v is None for v in prices.values()):
                notes.append(f"{g.label} as {machine or 'an unpriced machine'}: no price")
                continue
            away = any(machine in r.not_measured for r in g.runs)
            out.append(Candidate(g, machine, secs[0], secs[1], prices, dates, away))
    return out, notes


def _meets(c: Candidate, cfg: AdviseConfig, which: str) -> bool:
    if cfg.deadline_seconds is not None:
        return c.seconds <= cfg.deadline_seconds and c.usd(which) is not None
    cost = c.usd(which)
    return cost is not None and cost <= cfg.budget_usd


def _yes(c: Candidate, cfg: AdviseConfig, which: str) -> str:
    if c.usd(which) is None:
        return "n/a"
    return "yes" if _meets(c, cfg, which) else "no"


def choose(cands: list[Candidate], cfg: AdviseConfig, which: str) -> str:
    """One line: the pick under WHICH pricing, its runner-up and the reason."""
    ok = [c for c in cands if _meets(c, cfg, which)]
    name = which.replace("_", "-")
    if cfg.deadline_seconds is not None:
        ok.sort(key=lambda c: (c.usd(which), c.seconds))
        goal = f"finish within {durations.short(cfg.deadline_seconds)}"
    else:
        ok.sort(key=lambda c: (c.seconds, c.usd(which)))
        goal = f"cost at most {render.money(cfg.budget_usd)}"
    if not ok:
        priced = [c for c in cands if c.usd(which) is not None]
        if not priced:
            return f"{name}: no configuration has a {name} price in the catalog"
        best = (
            min(priced, key=lambda c: c.seconds)
            if cfg.deadline_seconds is not None
            else min(priced, key=lambda c: c.usd(which))
        )
        return (
            f"{name}: no configuration can {goal}; the closest is {_name(best)}: "
            f"{durations.short(best.seconds)} for {render.money(best.usd(which))}"
        )
    pick = ok[0]
    best = "cheapest" if cfg.deadline_seconds is not None else "fastest"
    line = (
        f"{name}: {_name(pick)}: {durations.short(pick.seconds)} for "
        f"{render.money(pick.usd(which))} ({best} of {len(ok)} that {goal})"
    )
    if len(ok) > 1:
        r = ok[1]
        if cfg.deadline_seconds is not None:
            extra = r.usd(which) / pick.usd(which) - 1 if pick.usd(which) else 0.0
            why = f"{extra:+.0%} cost"
        else:
            why = f"{r.seconds / pick.seconds - 1:+.0%} time"
        line += (
            f"; runner-up {_name(r)}: {durations.short(r.seconds)} for "
            f"{render.money(r.usd(which))} ({why})"
        )
    if cfg.deadline_seconds is not None and pick.seconds_slow > cfg.deadline_seconds:
        line += (
            f"; at the slow end of its interval it takes {durations.short(pick.seconds_slow)}, "
            "past the deadline"
        )
    return line


def _name(c: Candidate) -> str:
    label = c.group.label
    name = label if c.machine in label else f"{label} as {c.machine}"
    if c.what_if:  # never a recommendation from other hardware without saying so
        name += f" ({measured_on.MARK}: priced from runs on other hardware)"
    return name


def advise(cfg: AdviseConfig, now: dt.datetime | None = None) -> str:
    """The advice as text: candidates, picks per pricing, warnings."""
    if (cfg.deadline_seconds is None) == (cfg.budget_usd is None):
        raise errors.UsageError("give exactly one of --deadline (e.g. 2h) and --budget (USD)")
    loaded = load.load(list(cfg.inputs), cfg.pricing)
    # Records' names are loaded as shown (safe_text); --model is matched the same way.
    cfg = dataclasses.replace(cfg, model=safe_text.shown(cfg.model))
    runs = [r for r in loaded.runs if r.dims["model"] == cfg.model]
    if not runs:
        models = sorted({r.dims["model"] for r in loaded.runs})
        raise errors.UsageError(
            f"no ok runs of model {cfg.model!r} in {', '.join(cfg.inputs)}; "
            f"models with ok runs: {', '.join(models) or 'none'}"
        )
    groups = group_lib.group(runs)
    # Batch and precision are choices advice may weigh; another network is not.
    notes = group_lib.check_comparable(groups, allow=("batch_size", "precision"), hint="")
    cands, skipped = candidates(groups, cfg, catalog_lib.load(cfg.price_catalog))
    if not cands:
        raise errors.UsageError(f"no priced configuration of {cfg.model}: {'; '.join(skipped)}")
    job = "to the target accuracy" if cfg.to_target else f"for {cfg.epochs:g} epoch(s)"
    unit = epoch.note(
        [(g.label, r.examples_per_epoch, r.dims["dataset"]) for g in groups for r in g.runs]
    )
    job += f"; {unit}" if unit and not cfg.to_target else ""
    other = cfg.pricing.other
    t = tables.Table(
        "advise",
        f"{cfg.model}: configurations {job} (time: median over trials; slow end of the interval)",
        [
            "configuration",
            "machine",
            "trials",
            "time",
            "slow end",
            "$ on-demand",
            "$ spot",
            "meets (on-demand / spot)",
            "prices as of",
        ],
        [
            [
                " · ".join(p for p in c.group.label.split(" · ") if p != c.group.dims["machine"]),
                measured_on.marked(c.machine, c.what_if),
                str(len(c.group.runs)),
                durations.short(c.seconds),
                durations.short(c.seconds_slow),
                render.money(c.usd(Basis.ON_DEMAND)),
                render.money(c.usd(Basis.SPOT)),
                " / ".join(_yes(c, cfg, which) for which in basis.CHOSEN),
                " / ".join(d for d in dict.fromkeys(c.price_dates.values()) if d) or "n/a",
            ]
            for c in sorted(cands, key=lambda c: c.seconds)
        ],
        [],
        [],
        # Dropped last-first to fit: the other basis's dollars first; the answer's never.
        lesser=("slow end", "trials", "prices as of", f"$ {other.replace('_', '-')}"),
        kept=(f"$ {cfg.pricing.replace('_', '-')}", "meets (on-demand / spot)"),
        elsewhere="`tpubench report --output=DIR`'s files",
    )
    used = {d for c in cands for text in c.price_dates.values() for d in text.split(", ") if d}
    out = [render.terminal(t), catalog_lib.age_note(used)]
    if any(c.what_if for c in cands):
        out.append(measured_on.FOOTNOTE)
    out.append(f"Advice, on {money.prices_on(cfg.pricing)}:")
    out.append(f"  {choose(cands, cfg, cfg.pricing)}")
    out.append(f"  (other basis: {money.prices_on(other)})")
    if cfg.pricing == Basis.SPOT:
        out.append(f"  ({advise_caveats.spot_note([c.group for c in cands])})")
    warn = advise_caveats.warnings(groups, cfg, now or dt.datetime.now(dt.timezone.utc))
    extra = (
        notes
        + skipped
        + [
            f"excluded: {x.run_id or x.path}: {x.reason}"
            for x in loaded.excluded
            if x.model in (cfg.model, "")
        ]
    )
    if warn or extra:
        out.append("Warnings:")
        out += [f"  - {w}" for w in warn + extra]
    return "\n".join(out) + "\n"
