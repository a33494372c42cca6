"""Is an `ok` record's data fit to compare?  The true reason when it is not.

A record is data from anywhere: a hand-edited file, a colleague's bucket.
JSON allows NaN and Infinity, any integer (a batch size of 2**200) and any
type in any field.  Reports sort, sum and divide these numbers, so one bad
field would stop the whole report with an internal TypeError or
OverflowError.  `problem` names the first field that is not what
tpubench writes, and what is accepted, and the record is listed among the
records that are not results.  Pure Python.
"""

from __future__ import annotations

import dataclasses
import math

from tpubench.storage.record_results import LoadGenTraits

# Bounds far past any real run, well inside what a float and a table can
# hold: a rate above 1e12 examples/s or a batch above 2**31 is not a
# measurement, it is a damaged or forged record.
MAX_RATE = 1e12
MAX_COUNT = 2**31
MAX_EXAMPLES = 10**15
MAX_SECONDS = 1e9
MAX_USD = 1e9


def _is_real(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _number(x, low: float, high: float, *, above: bool = False, integer: bool = False) -> str:
    """'' when X is in range, else what it is (for the reason)."""
    if integer and (not isinstance(x, int) or isinstance(x, bool)):
        return f"{_kind(x)}; accepted: a whole number"
    if not _is_real(x):
        return f"{_kind(x)}; accepted: a number"
    if isinstance(x, float) and not math.isfinite(x):
        return f"{x}; accepted: a finite number"
    if (x <= low if above else x < low) or x > high:
        shown = _big(x) if isinstance(x, float) or abs(x) > 10**12 else str(x)
        bound = f"> {low:g}" if above else f">= {low:g}"
        return f"{shown}; accepted: {bound} and at most {high:.4g}"
    return ""


def _big(x) -> str:
    try:
        return f"{x:.4g}"
    except OverflowError:  # an int past float's range (2**2000); str() of it may refuse too
        return f"an integer of {x.bit_length():,} bits"


def _kind(x) -> str:
    if isinstance(x, (dict, list, str, bool)) or x is None:
        return f"of type {type(x).__name__}" if x is not None else "missing"
    return f"of type {type(x).__name__}"


def _get(record: dict, path: str):
    node = record
    for part in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


# (field, low, high, strictly above low, whole number); None (absent) is accepted.
_NUMBERS = (
    ("results.step_time_p50", 0, MAX_SECONDS, False, False),
    ("global_batch_size", 1, MAX_COUNT, False, True),
    ("per_replica_batch_size", 1, MAX_COUNT, False, True),
    ("examples_per_epoch", 1, MAX_EXAMPLES, False, True),
    ("results.eval.accuracy", -MAX_USD, MAX_USD, False, False),
    ("results.target.target", -MAX_USD, MAX_USD, False, False),
    ("results.target.seconds", 0, MAX_SECONDS, False, False),
    ("results.input_diagnosis.ratio", 0, MAX_RATE, False, False),
    ("placement.num_replicas", 1, MAX_COUNT, False, True),
    ("placement.num_workers", 1, MAX_COUNT, False, True),
    ("config.hardware.num_intra_threads", 0, MAX_COUNT, False, True),
    ("config.hardware.num_inter_threads", 0, MAX_COUNT, False, True),
    ("config.steps_per_loop", 1, MAX_COUNT, False, True),
    ("hardware.cpu.affinity_cores", 1, MAX_COUNT, False, True),
    ("hardware.cpu.logical_cores", 1, MAX_COUNT, False, True),
)
_SECTIONS = ("results", "config", "placement", "model", "data", "cost", "hardware", "software")
_TEXTS = (
    "kind",
    "model.name",
    "config.model",
    "data.name",
    "config.precision",
    "placement.accelerator",
    "placement.strategy",
    "placement.all_reduce",
    "placement.parameter_device",
    "software.tensorflow",
    "finished",
    "started",
    "results.input_diagnosis.verdict",
    "cost.note",
)
_MACHINE_NUMBERS = (
    "usd_per_hour",
    "usd_per_epoch",
    "usd_per_million_examples",
    "usd_per_million_predictions",
    "hours_per_epoch",
)


def problem(record: dict) -> str | None:
    """Why RECORD's figures cannot be compared (one clause), or None when they can."""
    for section in _SECTIONS + ("results.eval", "results.target", "config.hardware"):
        value = _get(record, section)
        if value is not None and not isinstance(value, dict):
            return f"{section} is {_kind(value)}; accepted: a mapping"
    rate = _get(record, "results.examples_per_sec")
    if rate is not None:
        bad = _number(rate, 0, MAX_RATE, above=True)
        if bad:
            return f"results.examples_per_sec is {bad}"
    for field, low, high, above, integer in _NUMBERS:
        value = _get(record, field)
        if value is not None:
            bad = _number(value, low, high, above=above, integer=integer)
            if bad:
                return f"{field} is {bad}"
    for field in _TEXTS:
        value = _get(record, field)
        if value is not None and not isinstance(value, str):
            return f"{field} is {_kind(value)}; accepted: text"
    params = _get(record, "model.params")
    if params is not None and not isinstance(params, dict):
        return f"model.params is {_kind(params)}; accepted: a mapping"
    return (
        _machines_problem(_get(record, "cost.machines"))
        or _curve_problem(_get(record, "loadgen.curve"))
        or _traits_problem(record.get("loadgen"))
    )


def _machines_problem(machines) -> str | None:
    if machines is None:
        return None
    if not isinstance(machines, list):
        return f"cost.machines is {_kind(machines)}; accepted: a list"
    for i, m in enumerate(machines):
        if not isinstance(m, dict):
            return f"cost.machines[{i}] is {_kind(m)}; accepted: a mapping"
        for key in ("machine", "pricing"):
            if m.get(key) is not None and not isinstance(m[key], str):
                return f"cost.machines[{i}].{key} is {_kind(m[key])}; accepted: text"
        for key in _MACHINE_NUMBERS:
            if m.get(key) is not None:
                bad = _number(m[key], 0, MAX_USD)
                if bad:
                    return f"cost.machines[{i}].{key} is {bad}"
        rows = m.get("rows")
        if rows is not None and not (
            isinstance(rows, list) and all(isinstance(r, dict) for r in rows)
        ):
            return f"cost.machines[{i}].rows is not a list of mappings"
    return None


# loadgen.curve[]: (key, low, high, strictly above low); None (absent) is accepted.
_CURVE_NUMBERS = (
    ("qps", 0, MAX_RATE, True),
    ("target_qps", 0, MAX_RATE, True),
    ("latency_seconds", 0, MAX_SECONDS, False),
    ("latency_percentile", 0, 100, False),
)


def _curve_problem(curve) -> str | None:
    """The server runs' points (report/serving_plots.py draws them, advise reads them)."""
    if curve is None:
        return None
    if not isinstance(curve, list):
        return f"loadgen.curve is {_kind(curve)}; accepted: a list"
    for i, p in enumerate(curve):
        where = f"loadgen.curve[{i}]"
        if not isinstance(p, dict):
            return f"{where} is {_kind(p)}; accepted: a mapping"
        for key, low, high, above in _CURVE_NUMBERS:
            if p.get(key) is not None:
                bad = _number(p[key], low, high, above=above)
                if bad:
                    return f"{where}.{key} is {bad}"
        for key in ("valid", "confirmation", "overloaded"):
            if p.get(key) is not None and not isinstance(p[key], bool):
                return f"{where}.{key} is {_kind(p[key])}; accepted: true or false"
        if p.get("run") is not None and not isinstance(p["run"], str):
            return f"{where}.run is {_kind(p['run'])}; accepted: text"
        bad = _machines_problem(p.get("machines"))
        if bad:
            return bad.replace("cost.machines", f"{where}.machines", 1)
    return None


def _traits_problem(loadgen) -> str | None:
    """loadgen.traits: what reports read of a scenario instead of its name (scenario_fields.py).

    A trait that is not true or false would decide, by its truth, how the report reads the
    record (a fleet sized on a bound it was not judged at); absent, the record's scenario
    gives them (storage/record_migrations.loadgen_traits).
    """
    if not isinstance(loadgen, dict) or "traits" not in loadgen:
        return None
    traits = loadgen["traits"]
    if not isinstance(traits, dict):
        return f"loadgen.traits is {_kind(traits)}; accepted: a mapping"
    for f in dataclasses.fields(LoadGenTraits):
        if f.name in traits and not isinstance(traits[f.name], bool):
            return f"loadgen.traits.{f.name} is {_kind(traits[f.name])}; accepted: true or false"
    return None
