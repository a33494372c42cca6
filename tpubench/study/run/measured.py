"""What a study has measured: each cell's records, as the mean of its runs with a 95% interval.

Only `ok` records of this study's cells count: found by their run_label,
and only those that measured what their cell asks (study/run/cell_records.py;
the others are named in the report and left out);
published figures never enter here, so they never enter a mean.  Runs the
neighbours made busy (execute.host_load) are left out when enough quiet ones
remain; otherwise they count and the cell is marked busy.
"""

from __future__ import annotations

import dataclasses
import math
import os
import statistics

from tpubench.core.basis import Basis
from tpubench.hardware import memory_cap
from tpubench.report import load
from tpubench.study.run import cell_records, execute, ran_on
from tpubench.study.run import cells as cells_lib

# Student's t at 97.5% for 1..10 degrees of freedom (a two-sided 95% interval).
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)


def interval(values: list[float]) -> tuple[float, float] | None:
    """The 95% interval of the mean of VALUES (Student's t), or None for fewer than two."""
    if len(values) < 2:
        return None
    mean, sd = statistics.fmean(values), statistics.stdev(values)
    t = _T95[len(values) - 2] if len(values) - 1 <= len(_T95) else 1.96
    half = t * sd / math.sqrt(len(values))
    return mean - half, mean + half


@dataclasses.dataclass(frozen=True)
class Measured:
    """A cell's measurement: the mean over its ok runs (interval: 95%, None below two runs)."""

    cell: cells_lib.Cell
    trials: int
    rate: float  # examples/s (training) or predictions/s (inference)
    usd_hour: float | None
    usd_epoch: float | None
    sec_epoch: float | None
    usd_million: float | None
    accelerator: str  # what the records say ran: "cpu", "gpu"
    machine: str
    pricing: Basis | None
    batch: int | None  # the global batch the records ran
    paths: tuple[str, ...]
    rate_ci: tuple[float, float] | None = None
    usd_epoch_ci: tuple[float, float] | None = None
    busy: bool = False  # measured while the neighbours used a share of the host
    chips: int | None = None  # the machine's GPUs or TPU chips (None: CPU only)
    ran_on: tuple[str, ...] = ()  # what its runs' records say they ran on (ran_on.describe)
    epoch: tuple = (None, None)  # (examples, dataset) of its $/epoch (cost/epoch.py)

    def per_chip(self, value: float | None) -> float | None:
        """VALUE (a rate, a $/hour) per GPU or TPU chip; None on a CPU-only machine."""
        return value / self.chips if self.chips and value is not None else None


@dataclasses.dataclass(frozen=True)
class Results:
    study: object  # spec.Study
    scale: str
    host: cells_lib.Host
    results_dir: str
    cells: tuple[cells_lib.Cell, ...]
    measured: dict  # cell id -> Measured
    blocked: dict  # cell id -> what the cell needs
    where: str = "here"  # where the blocked cells cannot run: "here", "on gke", ...
    repeats: int = 1  # runs per cell a verdict needs at this scale
    # cell id -> its memory cap, for cells whose runs died at that cap and none
    # ran ok: a result, not a cell to run again (capped_cells)
    capped: dict = dataclasses.field(default_factory=dict)
    pricing: str | None = None  # --pricing: every dollar figure's basis (None: each setup's)
    left_out: tuple = ()  # one line per record labelled with a cell that measured another

    def of(self, part: str, **match) -> list[Measured]:
        """Measured cells of PART whose model/data/setup label match."""
        out = []
        for cell in self.cells:
            m = self.measured.get(cell.id)
            if m is None or cell.part.name != part:
                continue
            if match.get("model") and cell.model.model != match["model"]:
                continue
            if match.get("data") and cell.data != match["data"]:
                continue
            if match.get("setup") and cell.setup.label != match["setup"]:
                continue
            out.append(m)
        return out

    def missing(self, part: str, **match) -> list[str]:
        """What the unmeasured cells of PART (matching) need, most common first.

        Cells that died at their memory cap are results, not missing.
        """
        needs, matched = [], 0
        for cell in self.cells:
            if cell.part.name != part or cell.id in self.measured or cell.id in self.capped:
                continue
            if match.get("setup") and cell.setup.label != match["setup"]:
                continue
            if match.get("model") and cell.model.model != match["model"]:
                continue
            matched += 1
            needs.append(self.blocked.get(cell.id) or "a run of `tpubench study run` here")
        if not matched and not self.of(part, **match):
            return [f"a scale that has these cells (not in --scale={self.scale})"]
        return list(dict.fromkeys(needs))  # the file's order: the smallest machine first


def collect(
    study,
    cells: list,
    host,
    results_dir: str,
    scale: str,
    needs=None,
    where: str = "here",
    pricing: Basis | None = None,
) -> Results:
    """The recorded cells' means; NEEDS(cell) says what an unrunnable one needs
    (default: what this host lacks; a remote run passes its executor's, WHERE "on gke").

    Dollar figures are on PRICING (`--pricing`), else on each setup's own
    basis (the seed's); a record keeps both bases where the catalog has them.
    """
    splits = cell_records.of_cells(cells, results_dir)
    found = {cell_id: list(s.ours) for cell_id, s in splits.items()}
    loads = execute.host_load(results_dir)
    repeats = study.runs_per_cell(scale)
    measured, blocked = {}, {}
    for cell in cells:
        why = needs(cell) if needs else cell.needs(host)
        if why:
            blocked[cell.id] = why
        runs, busy, hardware = [], set(), {}
        for f in found.get(cell.id, []):
            path = f.path
            basis = pricing or cell.setup.pricing or Basis.ON_DEMAND
            run, _ = load.from_record(f.record, path, basis)
            if run is not None:
                runs.append(run)
                hardware[run.path] = ran_on.describe(f.record)
                if loads.get(os.path.basename(path), 0) > execute.BUSY_SHARE:
                    busy.add(run.path)
        runs = choose(runs, busy, repeats)
        if runs:
            m = _mean(cell, runs, any(r.path in busy for r in runs))
            ran = tuple(dict.fromkeys(hardware[r.path] for r in runs))
            measured[cell.id] = dataclasses.replace(m, ran_on=ran)
    capped = capped_cells(cells, measured, found)
    return Results(
        study,
        scale,
        host,
        results_dir,
        tuple(cells),
        measured,
        blocked,
        where,
        repeats,
        capped,
        pricing,
        cell_records.left_out(splits),
    )


def capped_cells(cells, measured: dict, found: dict) -> dict:
    """Cell id -> its memory cap, for CELLS not MEASURED whose records in FOUND (cell id ->
    the cell's own records, cell_records) died at that cap."""
    out = {}
    for cell in cells:
        if cell.id in measured or not cell.setup.memory:
            continue
        if any(memory_cap.reached(f.record) for f in found.get(cell.id, [])):
            out[cell.id] = cell.setup.memory
    return out


def choose(runs: list, busy: set, repeats: int) -> list:
    """The runs a cell's figures come from: the quiet ones when there are REPEATS of
    them, else all (and the cell is marked busy)."""
    quiet = [r for r in runs if r.path not in busy]
    return quiet if len(quiet) >= repeats else runs


def _mean(cell, runs: list, busy: bool) -> Measured:
    def numbers(values):
        return [v for v in values if isinstance(v, (int, float))]

    def mean(values):
        values = numbers(values)
        return statistics.fmean(values) if values else None

    first = runs[-1]
    return Measured(
        cell=cell,
        trials=len(runs),
        rate=mean(r.examples_per_sec for r in runs),
        usd_hour=mean(r.usd_per_hour for r in runs),
        usd_epoch=mean(r.usd_per_epoch for r in runs),
        sec_epoch=mean(r.seconds_per_epoch for r in runs),
        usd_million=mean(r.usd_per_million for r in runs),
        accelerator=str(first.dims.get("accelerator") or "?"),
        machine=first.dims.get("machine") or "?",
        pricing=first.pricing,
        batch=first.dims.get("batch"),
        paths=tuple(r.path for r in runs),
        rate_ci=interval(numbers(r.examples_per_sec for r in runs)),
        usd_epoch_ci=interval(numbers(r.usd_per_epoch for r in runs)),
        busy=busy,
        chips=first.chips,
        epoch=(first.examples_per_epoch, first.dims.get("dataset")),
    )
