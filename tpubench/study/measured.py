"""What a study has measured: each cell's records, as medians of its trials.

Only `ok` records of this study's cells count (found by their run_label);
published figures never enter here, so they never enter a median.
"""

from __future__ import annotations

import dataclasses
import statistics

from tpubench.report import load
from tpubench.study import cells as cells_lib
from tpubench.study import execute


@dataclasses.dataclass(frozen=True)
class Measured:
    """A cell's measurement: the median over its ok trials."""

    cell: cells_lib.Cell
    trials: int
    rate: float  # examples/s (training) or predictions/s (inference)
    usd_hour: float | None
    usd_epoch: float | None
    sec_epoch: float | None
    usd_million: float | None
    accelerator: str  # what the records say ran: "cpu", "gpu"
    machine: str
    pricing: str | None
    batch: int | None  # the global batch the records ran
    paths: tuple[str, ...]


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
        """What the unmeasured cells of PART (matching) need, most common first."""
        needs, matched = [], 0
        for cell in self.cells:
            if cell.part.name != part or cell.id in self.measured:
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
    study, cells: list, host, results_dir: str, scale: str, needs=None, where: str = "here"
) -> Results:
    """The recorded cells' medians; NEEDS(cell) says what an unrunnable one needs
    (default: what this host lacks; a remote run passes its executor's, WHERE "on gke")."""
    found = execute.recorded(results_dir)
    measured, blocked = {}, {}
    for cell in cells:
        why = needs(cell) if needs else cell.needs(host)
        if why:
            blocked[cell.id] = why
        runs = []
        for path, record in found.get(cell.id, []):
            run, _ = load.from_record(record, path)
            if run is not None:
                runs.append(run)
        if runs:
            measured[cell.id] = _median(cell, runs)
    return Results(study, scale, host, results_dir, tuple(cells), measured, blocked, where)


def _median(cell, runs: list) -> Measured:
    def med(values):
        values = [v for v in values if isinstance(v, (int, float))]
        return statistics.median(values) if values else None

    first = runs[-1]
    return Measured(
        cell=cell,
        trials=len(runs),
        rate=med(r.examples_per_sec for r in runs),
        usd_hour=med(r.usd_per_hour for r in runs),
        usd_epoch=med(r.usd_per_epoch for r in runs),
        sec_epoch=med(r.seconds_per_epoch for r in runs),
        usd_million=med(r.usd_per_million for r in runs),
        accelerator=str(first.dims.get("accelerator") or "?"),
        machine=first.dims.get("machine") or "?",
        pricing=first.pricing,
        batch=first.dims.get("batch"),
        paths=tuple(r.path for r in runs),
    )
