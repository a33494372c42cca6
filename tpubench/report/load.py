"""Run records in, flat `Run` rows out: local files, directories and gs:// prefixes.

Only `ok` records are results; every other record is listed as excluded
with its reason, so a failed or interrupted trial never disappears silently.
Reading never imports TensorFlow: local files are read directly and gs://
objects through `tpubench.storage.gcs` (google-cloud-storage).
"""

from __future__ import annotations

import dataclasses

from tpubench.core import basis, errors, host_load, money, safe_text
from tpubench.cost import catalog_rows, measured_on
from tpubench.model import model_api
from tpubench.report import displayable, record_checks, run_dims, scenario_fields, skipped
from tpubench.storage import liveness, record_results, record_text, record_view, records

# Model params the controller adds at run time: they describe the run, not
# the network, and are compared on their own (batch) or not at all (seed).
_RUNTIME_PARAMS = frozenset(model_api.RUNTIME_PARAMS)


@dataclasses.dataclass(frozen=True)
class Excluded:
    """A record (or file) that is not a result, and why."""

    path: str
    run_id: str
    model: str
    status: str
    reason: str


@dataclasses.dataclass(frozen=True)
class Run:
    """The figures of one `ok` run record that reports compare.

    `dims` holds what defines its configuration (see group.DIMENSIONS); the
    other fields are measurements and their context.  Cost figures are those
    of the record's first priced machine, `machine`; `machines` keeps every
    priced machine of the record for `advise`.
    """

    path: str
    run_id: str
    dims: dict
    params: dict
    examples_per_sec: float
    step_time_p50: float | None
    examples_per_epoch: int | None
    accuracy: float | None
    target: float | None
    target_seconds: float | None
    usd_per_hour: float | None
    usd_per_epoch: float | None
    usd_per_million: float | None
    pricing: basis.Basis | None
    price_dates: tuple[str, ...]
    price_note: str | None
    machines: tuple[record_results.MachineCost, ...]
    host_cores: int | None
    tf_version: str | None
    finished: str | None
    input_verdict: str | None
    input_ratio: float | None
    chips: int | None = None  # the machine's GPUs or TPU chips; None on a CPU-only machine
    serving: dict | None = None  # an `infer --scenario` record: LoadGen's figures (serving.py)
    # Every machine of the record on every basis: training advise prices their names anew.
    all_machines: tuple[record_results.MachineCost, ...] = ()
    checkpoint_every: float | None = None  # seconds between its periodic checkpoints; None: off
    not_measured: frozenset = frozenset()  # machine names priced from other hardware
    busy: str = ""  # what other processes used of the host while it ran, when too much

    @property
    def seconds_per_epoch(self) -> float | None:
        if not self.examples_per_epoch:
            return None
        return self.examples_per_epoch / self.examples_per_sec


@dataclasses.dataclass
class Loaded:
    runs: list[Run]
    excluded: list[Excluded]
    sources: list[str]


def expand(inputs: list[str]) -> list[tuple[str, bool]]:
    """(path, named) for each record file: NAMED is False for files found by a scan.

    Directories are scanned recursively for *.json (hidden entries skipped);
    a gs:// URL ending in .json is one object, any other gs:// URL a prefix.
    """
    if not inputs:
        raise errors.UsageError(
            "give run records, directories or gs:// prefixes, e.g. `tpubench report runs/`"
        )
    out: list[tuple[str, bool]] = []
    for item in inputs:
        out += [(path, path == item) for path in records.find(item)]
    return out


def load(inputs: list[str], pricing: basis.Basis = basis.DEFAULT) -> Loaded:
    """Reads every record under INPUTS; `ok` ones become Runs, the rest Excluded.

    PRICING is the basis of every dollar figure (on demand or spot).

    A file named explicitly that is not a record is an error; a non-record
    JSON file met while scanning a directory is listed as excluded.  A run
    id seen twice (overlapping inputs) counts once.
    """
    runs, excluded, seen, shared = [], [], set(), {}
    for path, named in expand(list(inputs)):
        try:
            # read_text refuses files over record_text.MAX_RECORD_BYTES
            record = records.parse(record_text.read_text(path), path)
        except errors.UsageError as e:
            if named:
                raise
            excluded.append(_excluded(path, "", "", "skipped", str(e).replace(f"{path} ", "", 1)))
            continue
        if record["run_id"] in seen:
            continue
        seen.add(record["run_id"])
        try:
            run, reason = from_record(record, path, pricing)
        except (ArithmeticError, AttributeError, LookupError, TypeError, ValueError) as e:
            # One record with fields of the wrong type must not stop the report.
            run, reason = None, f"fields of the wrong type ({type(e).__name__}: {e})"
        if run is None:
            excluded.append(
                _excluded(path, record["run_id"], _name_of(record), _status(record), reason)
            )
        else:
            runs.append(displayable.shared_line(run, shared))
    if not runs and not excluded:
        raise errors.UsageError(f"no run records (*.json) found in {', '.join(inputs)}")
    return Loaded(runs, skipped.roll_up(excluded, _excluded), list(inputs))


def _excluded(*fields) -> Excluded:
    # Record text reaches tables, charts and the console: one safe line each.
    return Excluded(*(safe_text.shown(f) for f in fields))


def _name_of(record: dict) -> str:
    """The model's name for an excluded record, which may not even have a typed view."""
    model = record.get("model")
    name = model.get("name") if isinstance(model, dict) else None
    cfg = record.get("config")
    name = name or (cfg.get("model", "") if isinstance(cfg, dict) else "")
    return name if isinstance(name, str) else repr(name)


def _status(record: dict):
    return liveness.status(record)


def _status_reason(rec: record_view.RunRecord) -> str | None:
    status = rec.status
    if status == "ok":
        return None
    if status == "running":
        dead = liveness.death(rec.raw)
        if dead is not None:
            return f"died: {dead}"
        if not rec.heartbeat:  # written before runs recorded a heartbeat
            return "no final record: still running, or killed before it finished"
        return "no final record: the run is still going"
    return rec.error or f"status {status}"


def from_record(record, path: str, pricing: basis.Basis = basis.DEFAULT) -> tuple[Run | None, str]:
    """(Run, "") for a result, or (None, why it is not one); RECORD is a dict or RunRecord.

    Its dollar figures are on PRICING (the record keeps every basis it was priced on).
    """
    raw = record.raw if isinstance(record, record_view.RunRecord) else record
    if isinstance(raw, dict) and raw.get("status") == "ok":  # a result: are its figures sane?
        bad = record_checks.problem(raw)
        if bad:
            return None, f"figures unfit to compare: {bad}"
    rec = record if isinstance(record, record_view.RunRecord) else record_view.view(record)
    reason = _status_reason(rec)
    if reason:
        return None, reason
    rate = rec.results.examples_per_sec
    if not isinstance(rate, (int, float)) or not rate > 0:
        return None, "no throughput was measured (too few steps after warm-up?)"
    params = {k: v for k, v in (rec.model.params or {}).items() if k not in _RUNTIME_PARAMS}
    priced = tuple(money.on_basis(rec.cost.machines, pricing))
    first = priced[0] if priced else record_results.MachineCost()
    # The configuration's machine is the one it ran as, whatever the basis.
    named = rec.cost.machines[0] if rec.cost.machines else first
    target = rec.results.target or record_results.Target()
    cpu = rec.hardware.cpu
    run = Run(
        path=path,
        run_id=rec.run_id,
        dims=run_dims.of(rec, params, named),
        params=params,
        examples_per_sec=float(rate),
        step_time_p50=rec.results.step_time_p50,
        examples_per_epoch=rec.examples_per_epoch,
        accuracy=rec.results.eval.accuracy if rec.results.eval else None,
        target=target.target,
        target_seconds=target.seconds if target.reached else None,
        usd_per_hour=first.usd_per_hour,
        usd_per_epoch=first.usd_per_epoch,
        usd_per_million=first.usd_per_million_examples or first.usd_per_million_predictions,
        pricing=basis.recorded(first.pricing) if first.pricing else None,
        price_dates=tuple(sorted({_dated(r) for r in first.rows})),
        price_note=rec.cost.note,
        machines=priced,
        all_machines=rec.cost.machines,
        not_measured=frozenset(
            measured_on.not_measured(rec.cost.machines, run_dims.accelerators_ran(rec))
        ),
        host_cores=cpu.affinity_cores or cpu.logical_cores,
        tf_version=rec.software.tensorflow,
        finished=rec.finished or rec.started,
        input_verdict=rec.results.input_diagnosis.verdict if rec.results.input_diagnosis else None,
        input_ratio=rec.results.input_diagnosis.ratio if rec.results.input_diagnosis else None,
        chips=_chips(first),
        serving=scenario_fields.serving(rec, first, pricing),
        checkpoint_every=rec.raw.get("config", {}).get("checkpoint_every_secs"),
        busy=host_load.busy(rec.results.host_cpu),
    )
    return run, ""


def _chips(cost: record_results.MachineCost) -> int | None:
    n = cost.num_accelerators
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None


def _dated(line: record_results.PriceRow) -> str:

    return catalog_rows.dated(line.as_of or "?", line.date_known)


def input_bound(verdict: str | None) -> bool:
    """True when `--compare_synthetic` judged the run input-bound (None: not checked)."""
    return (verdict or "").lower().replace("-", "_").replace(" ", "_") == "input_bound"
