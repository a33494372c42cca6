"""Many valid run records from one real one, for tests and benches of the readers.

`copies` turns one record a real `tpubench train` wrote into as many trials
as asked: each with its own run id and throughput, and every figure that
follows from the throughput (step times, hours, dollars, examples per
dollar, MFU) scaled to match, so `report` and `advise` read them as they
would read real trials.  Everything else (per-loop timings, hardware,
software, prices' rows) is the real record's, so each copy is as large as a
real record.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator, Sequence

# Fields that grow with the throughput, and fields that shrink with it.
_RATES = ("examples_per_sec", "examples_per_sec_per_replica")
_TIMES = ("step_time_mean", "step_time_p50", "step_time_p90", "step_time_p99")
_COST_RATES = ("examples_per_usd", "examples_per_sec_per_chip")
_COST_TIMES = ("hours_per_epoch", "usd_per_epoch", "usd_per_million_examples")


def copies(template: dict, rates: Sequence[float], prefix: str = "copy") -> Iterator[dict]:
    """One record per rate in RATES: TEMPLATE at that examples/sec, run id PREFIX-00000, ..."""
    base = float(template["results"]["examples_per_sec"])
    width = max(5, len(str(len(rates))))
    for i, rate in enumerate(rates):
        factor = float(rate) / base
        rec = copy.deepcopy(template)
        rec["run_id"] = f"{prefix}-{i:0{width}d}"
        results = rec["results"]
        _scale(results, _RATES, factor)
        _scale(results, _TIMES, 1.0 / factor)
        for machine in rec.get("cost", {}).get("machines", []):
            _scale(machine, _COST_RATES, factor)
            _scale(machine, _COST_TIMES, 1.0 / factor)
        if isinstance(rec.get("mfu"), dict):
            _scale(rec["mfu"], ("mfu",), factor)
        yield rec


def write(template: dict, rates: Sequence[float], directory: str, prefix: str = "copy") -> int:
    """Writes `copies(...)` as DIRECTORY/<run_id>.json (compact JSON); returns how many."""
    os.makedirs(directory, exist_ok=True)
    n = 0
    for rec in copies(template, rates, prefix):
        with open(os.path.join(directory, f"{rec['run_id']}.json"), "w") as f:
            json.dump(rec, f)
        n += 1
    return n


def _scale(node: dict, names: Sequence[str], factor: float) -> None:
    for name in names:
        value = node.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            node[name] = value * factor
