"""What `tpubench study run` will do: cells runnable here, not runnable, done; cost preview."""

from __future__ import annotations

import dataclasses

from tpubench.core import basis, durations, errors, money, safe_text
from tpubench.cost import catalog, pricing
from tpubench.study.run import cell_records, execute
from tpubench.study.run import cells as cells_lib


@dataclasses.dataclass(frozen=True)
class Plan:
    cells: tuple
    blocked: dict  # cell id -> what it needs
    done: frozenset  # cells with all their repeats recorded
    todo: tuple  # runnable here and not all recorded, in order
    runs: dict = dataclasses.field(default_factory=dict)  # cell id -> runs still to do
    repeats: int = 1  # runs per cell at this scale
    left_out: tuple = ()  # one line per record labelled with a cell that measured another

    @property
    def runnable(self) -> int:
        return len(self.cells) - len(self.blocked)

    def todo_runs(self) -> list[tuple]:
        """(cell, runs still to do) for each cell to run."""
        return [(c, self.runs.get(c.id, 1)) for c in self.todo]


def make(study, scale: str, host, results_dir: str) -> Plan:
    cells = cells_lib.expand(study, scale)
    repeats = study.runs_per_cell(scale)
    blocked = {c.id: c.needs(host) for c in cells if c.needs(host)}
    return counted(cells, blocked, repeats, results_dir)


def counted(cells: list, blocked: dict, repeats: int, results_dir: str) -> Plan:
    """The Plan of CELLS with REPEATS runs each: done by their own records in RESULTS_DIR
    (cell_records), to run unless BLOCKED."""
    splits = cell_records.of_cells(cells, results_dir)
    counts = execute.done_counts(splits)
    done = frozenset(c.id for c in cells if counts.get(c.id, 0) >= repeats)
    todo = tuple(c for c in cells if c.id not in blocked and c.id not in done)
    runs = {c.id: repeats - counts.get(c.id, 0) for c in todo}
    left = cell_records.left_out(splits)
    return Plan(tuple(cells), blocked, done, todo, runs, repeats, left)


def header(study, plan: Plan, scale: str, host, results_dir: str) -> list[str]:
    runs = sum(plan.runs.values())
    each = f" ({runs} run(s): {plan.repeats} per cell, for an interval)" if plan.repeats > 1 else ""
    lines = [
        f"study {study.name}: {len(plan.cells)} cell(s) at --scale={scale}; {host.name} "
        f"({host.describe()}) can run {plan.runnable}; {len(plan.done)} already recorded in "
        f"{results_dir}; {len(plan.todo)} to run{each}"
    ]
    where = f"on {host.machine}" if host.machine else "here"
    return (
        lines
        + [f"  not runnable {where}: {line}" for line in blocked_lines(plan.cells, plan.blocked)]
        + [f"  {line}" for line in plan.left_out]
    )


def blocked_lines(cells: list, blocked: dict) -> list[str]:
    """The cells this host cannot run, grouped by part and what they need."""
    groups: dict = {}
    for c in cells:
        if c.id in blocked:
            groups.setdefault((c.part.name, blocked[c.id]), []).append(c)
    out = []
    for (part, why), cs in groups.items():
        labels = ", ".join(dict.fromkeys(c.setup.label for c in cs))
        out.append(f"{part} · {labels} ({len(cs)} cell(s)): {why}")
    return out


def _hourly(setup, cat, planned: str | None = None) -> tuple[float | None, str]:
    """$/hour of SETUP's machine, else of the PLANNED one (--plan_for), else none yet.

    A TPU setup's machine names the slice to rent; a run prices the TPU it runs on
    (cells.Cell.flags): the planned one, else the one detected when it runs.
    """
    machine = planned if setup.device == "tpu" else setup.machine or planned
    if not machine:
        return None, "priced at run time from the detected hardware"
    try:
        price = pricing.hourly(machine, cat, setup.pricing or basis.DEFAULT)
    except errors.TpubenchError as e:
        return None, errors.one_line(e)
    return price.usd_per_hour, f"{machine} ({setup.pricing or basis.DEFAULT})"


def preview(study, plan: Plan, scale: str, planned: str | None = None) -> list[str]:
    """Per setup: cells to run, $/hour of its priced machine (PLANNED for a setup that names
    none), estimated time and $."""
    cat = catalog.load()
    rows, total_s, total_usd, estimated = [], 0.0, 0.0, []
    labels = [f"{c.part.name} · {c.setup.label}" for c in plan.todo]
    w = max([34, *map(len, labels)])  # the setups to run, as wide as the longest
    for part in study.parts:
        per_cell = part.scale[scale].get("seconds")
        for setup in part.setups:
            todo = [c for c in plan.todo if c.part is part and c.setup is setup]
            if not todo:
                continue
            usd_h, what = _hourly(setup, cat, planned)
            n_runs = sum(plan.runs.get(c.id, 1) for c in todo)
            secs = per_cell * n_runs if per_cell else None
            usd = usd_h * secs / 3600 if usd_h is not None and secs else None
            estimated.append(usd is not None)
            total_s += secs or 0
            total_usd += usd or 0
            est = durations.clock(secs) if secs else "n/a"
            rows.append(
                f"  {part.name + ' · ' + setup.label:<{w}} {len(todo):>5}  "
                f"{money.usd(usd_h) if usd_h is not None else '—':>9}  {est:>9}  "
                f"{money.usd(usd) if usd is not None else '—':>9}  {what}"
            )
    if not rows:
        return ["cost preview: nothing to run here"]
    head = (
        "cost preview (what these cells would cost on the machines they are priced as; "
        "running them here costs nothing extra):"
    )
    cols = f"  {'part · setup':<{w}} {'cells':>5}  {'$/hour':>9}  {'est. time':>9}  {'est. $':>9}  priced as"  # noqa: E501
    unknown = "" if all(estimated) else " (— : priced only when it runs, from what it detects)"
    foot = f"  {'total':<{w}} {len(plan.todo):>5}  {'':>9}  {durations.clock(total_s):>9}  {money.usd(total_usd):>9}{unknown}"  # noqa: E501
    return [head, cols, *rows, foot]


def cells_section(results) -> list[str]:
    """The report's "Cells" section: how many measured, not runnable (and why), not yet run."""
    total, measured, capped = len(results.cells), len(results.measured), len(results.capped)
    blocked = [c for c in results.cells if c.id in results.blocked and c.id not in results.measured]
    waiting = total - measured - capped - len(blocked)
    died = f", {capped} failed at their memory cap" if capped else ""
    out = [
        "## Cells",
        "",
        f"{total} cell(s) at --scale={results.scale}: {measured} measured{died}, {len(blocked)} "
        f"not runnable here, {waiting} not yet run.",
    ]
    out += [
        f"- not runnable {results.where}: {line}"
        for line in blocked_lines(blocked, results.blocked)
    ]
    if results.left_out:  # labelled with a cell, but measured something else
        out += ["", "Records left out (a cell's label, another measurement):", ""]
        out += [f"- {safe_text.markdown_cell(line, None)}" for line in results.left_out]
    return out + [""]
