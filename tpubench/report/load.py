"""Run records in, flat `Run` rows out: local files, directories and gs:// prefixes.

Only `ok` records are results; every other record is listed as excluded
with its reason, so a failed or interrupted trial never disappears silently.
Reading never imports TensorFlow: local files are read directly and gs://
objects through `tpubench.storage.gcs` (google-cloud-storage).
"""

from __future__ import annotations

import dataclasses

from tpubench.core import errors, host_load, money, safe_text
from tpubench.cost import catalog_rows, measured_on
from tpubench.model import model_api
from tpubench.report import record_checks, scenario_fields, skipped
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
    pricing: str | None
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


def load(inputs: list[str], pricing: str = "on_demand") -> Loaded:
    """Reads every record under INPUTS; `ok` ones become Runs, the rest Excluded.

    PRICING is the basis of every dollar figure ('on_demand' or 'spot').

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
            runs.append(_displayable(run, shared))
    if not runs and not excluded:
        raise errors.UsageError(f"no run records (*.json) found in {', '.join(inputs)}")
    return Loaded(runs, skipped.roll_up(excluded, _excluded), list(inputs))


def _excluded(*fields) -> Excluded:
    # Record text reaches tables, charts and the console: one safe line each.
    return Excluded(*(safe_text.shown(f) for f in fields))


def _displayable(run: Run, shared: dict) -> Run:
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


def from_record(record, path: str, pricing: str = "on_demand") -> tuple[Run | None, str]:
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
        dims=_dims(rec, params, named),
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
        pricing=first.pricing,
        price_dates=tuple(sorted({_dated(r) for r in first.rows})),
        price_note=rec.cost.note,
        machines=priced,
        all_machines=rec.cost.machines,
        not_measured=frozenset(measured_on.not_measured(rec.cost.machines, _ran(rec))),
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


def _dims(rec: record_view.RunRecord, params: dict, first: record_results.MachineCost) -> dict:
    """What defines a run's configuration (group.DIMENSIONS): placement, else the flags."""
    hw, placement = rec.config.hardware, rec.placement
    return {
        "kind": rec.kind,
        # Inference and training rates are different quantities: a non-train
        # kind is its own "model", so no table, chart or advice mixes them.
        "model": _model_key(rec.model.name or rec.config.model or "?", rec.kind, rec.scenario),
        "machine": _machine_name(first, _ran(rec)),
        "dataset": rec.data.name or "?",
        "params": _params_text(params),
        "tiny": bool(rec.config.tiny),
        "batch": rec.global_batch_size,
        "per_replica_batch": rec.per_replica_batch_size,
        "precision": _or(rec.config.precision, "fp32"),
        "optimizer": _or(rec.config.optimizer, "model"),
        "xla": bool(rec.config.xla),
        "accelerator": placement.accelerator or hw.accelerator,
        "strategy": placement.strategy_text or hw.strategy,
        "replicas": _or(placement.num_replicas, 1),
        "workers": _or(placement.num_workers, 1),
        "all_reduce": placement.all_reduce or hw.all_reduce,
        "threads": _or(hw.num_intra_threads, 0),
        "inter_threads": _or(hw.num_inter_threads, 0),
        "cpu_kernels": _or(hw.cpu_kernels, "auto"),
        "steps_per_loop": _or(rec.config.steps_per_loop, 1),
        "latency_bound": scenario_fields.bound_text(rec),
    }


def _ran(rec: record_view.RunRecord):
    return (rec.raw.get("hardware") or {}).get("accelerators")


def _or(value, default):
    """VALUE, or DEFAULT where an older record lacks it."""
    return default if value is None else value


def _model_key(name: str, kind: str, scenario: str | None) -> str:
    if scenario:  # LoadGen's server QPS is not a closed-loop rate
        kind = f"{kind} {scenario}"
    return name if kind == "train" else f"{name} [{kind}]"


def _dated(line: record_results.PriceRow) -> str:

    return catalog_rows.dated(line.as_of or "?", line.date_known)


def _machine_name(cost: record_results.MachineCost, ran=None) -> str:
    if cost.pricing == "override" and not cost.machine:
        return f"{money.usd(cost.usd_per_hour)}/h (--price_per_hour)"
    away = bool(measured_on.not_measured((cost,), ran))  # marked: priced from other hardware
    return measured_on.marked(cost.machine or "unpriced", away)


def input_bound(verdict: str | None) -> bool:
    """True when `--compare_synthetic` judged the run input-bound (None: not checked)."""
    return (verdict or "").lower().replace("-", "_").replace(" ", "_") == "input_bound"


def _params_text(params: dict) -> str:
    return ",".join(f"{k}={params[k]}" for k in sorted(params))
