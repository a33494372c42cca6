"""A loaded run as a report shows it: every text one safe, bounded line, repeats shared.

Record text reaches tables, charts and the console, so each text a `Run`
shows passes through core/safe_text.py here; and 10,000 runs must hold their
numbers, not copies of their records, so a value many runs repeat is one
object (report/load.py calls `shared_line` for each run it keeps).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from tpubench.core import safe_text
from tpubench.storage import record_results

if TYPE_CHECKING:
    from tpubench.report.load import Run


def shared_line(run: Run, shared: dict) -> Run:
    """RUN with every text it shows made one safe, bounded line (the record keeps all).

    Only what readers use is kept (a machine's `raw` mapping is dropped), and a value
    many runs repeat (a name, a price row, a date) is one object SHARED by all: 10,000
    runs hold their numbers, not copies of their records (docs/reliability.md).
    """

    def clean(value):
        if isinstance(value, str):
            return _one(shared, safe_text.shown(value))
        if dataclasses.is_dataclass(value) and not isinstance(value, type):  # MachineCost
            fields = [f.name for f in dataclasses.fields(value) if f.init]
            kept = {f: {} if f == "raw" else clean(getattr(value, f)) for f in fields}
            return _one(shared, dataclasses.replace(value, **kept))
        if isinstance(value, dict):
            return {clean(k): clean(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return _one(shared, type(value)(clean(v) for v in value))
        return value

    texts = ("path", "run_id", "pricing", "price_note", "tf_version", "finished", "input_verdict")
    return dataclasses.replace(
        run,
        dims=clean(run.dims),
        params=clean(run.params),
        machines=clean(run.machines),
        all_machines=clean(run.all_machines),
        price_dates=clean(run.price_dates),
        serving=clean(run.serving),
        **{name: clean(getattr(run, name)) for name in texts},
    )


def _one(shared: dict, value):
    """The object equal to VALUE that SHARED already holds (VALUE itself the first time).

    Only texts, price rows and tuples of them are shared: their equality is
    their identity (a machine's cost differs from run to run anyway, and
    1 == 1.0 == True must never turn one record's number into another's).
    """
    if isinstance(value, tuple) and all(
        isinstance(v, (str, record_results.PriceRow)) for v in value
    ):
        return shared.setdefault((tuple, value), value)
    if type(value) is str or isinstance(value, record_results.PriceRow):
        return shared.setdefault((type(value), value), value)
    return value
