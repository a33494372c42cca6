"""A typed, read-only view of a run record: fields to read instead of string keys.

The record on disk stays the JSON document `records.write` writes (its keys
are the format); `records.typed(record)` migrates it to the current schema
and builds this view, so the console texts, the report and advise read
`rec.results.step_time_p50`, not `record.get("results", {}).get(...)`.

Every field is optional, as in the JSON: a record of an earlier version, a
failed run or an infer record lacks sections, and a missing value is None
(a missing section is an empty one; a missing optional sub-section, such as
`results.eval`, is None).  Values are as written; a section that is present
but not a mapping is a TypeError naming the field, which readers of many
records turn into "fields of the wrong type" for that record alone.  `raw`
keeps the mapping a section was built from, for code that takes the dict
(redaction, rerun, writing a record back).
"""

from __future__ import annotations

import dataclasses
from typing import Any

# ---------------------------------------------------------------- building


def _sub(cls, optional: bool = False):
    """A field holding section CLS (None when OPTIONAL and absent)."""
    meta = {"section": cls, "optional": optional}
    if optional:
        return dataclasses.field(default=None, metadata=meta)
    return dataclasses.field(default_factory=lambda: build(cls, {}), metadata=meta)


def _rows(cls):
    """A field holding a tuple of CLS built from a JSON list of mappings."""
    return dataclasses.field(default=(), metadata={"rows": cls})


def _raw():
    return dataclasses.field(default_factory=dict, repr=False, compare=False)


def build(cls, value, name: str = "record"):
    """CLS from mapping VALUE: each field from the key of its name, sections recursively."""
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise TypeError(f"field {name!r} is {type(value).__name__}, not a mapping")
    kw: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name == "raw":
            kw["raw"] = value
            continue
        if f.name not in value:
            continue
        v, sub, rows = value[f.name], f.metadata.get("section"), f.metadata.get("rows")
        if sub is not None:
            if f.metadata.get("optional") and not v:
                continue  # absent or empty: None, as `if record.get(...)` read it
            v = build(sub, v, f.name)
        elif rows is not None:
            if not isinstance(v, (list, tuple)):
                raise TypeError(f"field {f.name!r} is {type(v).__name__}, not a list")
            v = tuple(build(rows, x, f.name) for x in v)
        kw[f.name] = v
    return cls(**kw)


# ---------------------------------------------------------------- sections


@dataclasses.dataclass(frozen=True)
class HardwareFlags:
    """config.hardware: the hardware flags the run was given."""

    accelerator: str | None = None
    strategy: str | None = None
    all_reduce: str | None = None
    num_intra_threads: int | None = None
    num_inter_threads: int | None = None


@dataclasses.dataclass(frozen=True)
class Config:
    """config: the resolved flags (core/config.py's to_dict) plus the run's model_dir."""

    model: str | None = None
    precision: str | None = None
    xla: bool = False
    tiny: bool = False
    steps_per_loop: int | None = None
    model_dir: str | None = None
    hardware: HardwareFlags = _sub(HardwareFlags)
    raw: dict = _raw()


@dataclasses.dataclass(frozen=True)
class Placement:
    """placement: what the strategy ran on."""

    accelerator: str | None = None
    strategy: str | None = None
    num_replicas: int | None = None
    num_workers: int | None = None
    all_reduce: str | None = None

    @property
    def parameter_server(self) -> bool:
        """Workers stepping on their own batch shares (the rate is split by workers)."""
        return self.strategy == "parameter_server" and bool(self.num_workers)


@dataclasses.dataclass(frozen=True)
class Model:
    name: str | None = None
    params: dict = dataclasses.field(default_factory=dict)
    target_metric: str | None = None
    data_format: str | None = None
    fitted_to_data: dict | None = None


@dataclasses.dataclass(frozen=True)
class Skipped:
    """data.skipped: what --skip_corrupt left out."""

    examples_skipped: int = 0
    damaged_files: tuple = ()


@dataclasses.dataclass(frozen=True)
class Data:
    name: str | None = None
    skipped: Skipped | None = _sub(Skipped, optional=True)


@dataclasses.dataclass(frozen=True)
class Eval:
    """results.eval: the last evaluation; its metrics by name in `raw`."""

    examples: int | None = None
    loss: float | None = None
    accuracy: float | None = None
    split: str | None = None
    raw: dict = _raw()

    def metric(self, name: str):
        return self.raw.get(name)


@dataclasses.dataclass(frozen=True)
class Target:
    metric: str | None = None
    mode: str | None = None
    target: float | None = None
    step: int | None = None
    seconds: float | None = None
    reached: bool = True


@dataclasses.dataclass(frozen=True)
class HostCpu:
    samples: int | None = None
    cores: int | None = None
    system_percent_mean: float | None = None
    system_percent_p90: float | None = None
    process_percent_mean: float | None = None


@dataclasses.dataclass(frozen=True)
class InputDiagnosis:
    """results.input_diagnosis: --compare_synthetic's verdict."""

    verdict: str | None = None
    ratio: float | None = None
    real_examples_per_sec: float | None = None
    synthetic_examples_per_sec: float | None = None
    host_cpu_real: HostCpu = _sub(HostCpu)
    host_cpu_synthetic: HostCpu = _sub(HostCpu)
    raw: dict = _raw()


@dataclasses.dataclass(frozen=True)
class Results:
    """results: throughput, timings, losses (train) or latencies (infer)."""

    examples_per_sec: float | None = None
    examples_per_sec_per_replica: float | None = None
    note: str | None = None
    step_time_p50: float | None = None
    step_time_p90: float | None = None
    step_time_p99: float | None = None
    step_time_samples: int | None = None
    time_to_first_loop: float | None = None
    compile_seconds: float | None = None
    steady_state_after_loops: int | None = None
    steps_run: int | None = None
    train_wall_seconds: float | None = None
    pause_seconds: float | None = None
    final_loss_loop_mean: float | None = None
    eval: Eval | None = _sub(Eval, optional=True)
    eval_note: str | None = None
    target: Target | None = _sub(Target, optional=True)
    host_cpu: HostCpu | None = _sub(HostCpu, optional=True)
    input_diagnosis: InputDiagnosis | None = _sub(InputDiagnosis, optional=True)
    latency_p50: float | None = None
    latency_p90: float | None = None
    latency_p99: float | None = None
    first_batch_seconds: float | None = None
    timed_batches: int | None = None
    timed_seconds: float | None = None
    raw: dict = _raw()


@dataclasses.dataclass(frozen=True)
class Mfu:
    train_flops_per_example: float | None = None
    forward_flops_per_example: float | None = None
    mfu: float | None = None
    mfu_note: str | None = None
    note: str | None = None
    peak_flops: float | None = None
    peak_source: str | None = None
    mfu_measured_peak: float | None = None
    peak_flops_measured: float | None = None
    peak_measured_source: str | None = None
    parameters: int | None = None
    parameters_unfitted: int | None = None
    fitted_params: dict | None = None


@dataclasses.dataclass(frozen=True)
class PriceRow:
    """One price line a cost row used (cost/catalog.py)."""

    row_key: str | None = None
    as_of: str | None = None
    date_known: bool = True
    status: str | None = None
    source: str | None = None


@dataclasses.dataclass(frozen=True)
class MachineCost:
    """cost.machines[]: one machine the run was priced as."""

    machine: str | None = None
    pricing: str | None = None
    usd_per_hour: float | None = None
    usd_per_epoch: float | None = None
    usd_per_million_examples: float | None = None
    usd_per_million_predictions: float | None = None
    usd_run: float | None = None
    usd_to_target: float | None = None
    rows: tuple[PriceRow, ...] = _rows(PriceRow)
    raw: dict = _raw()


@dataclasses.dataclass(frozen=True)
class Cost:
    examples_per_epoch: int | None = None
    note: str | None = None
    machines: tuple[MachineCost, ...] = _rows(MachineCost)


@dataclasses.dataclass(frozen=True)
class Weights:
    """weights (infer): random, or restored from a checkpoint."""

    source: str | None = None
    path: str | None = None
    step: int | None = None
    seed: int | None = None


@dataclasses.dataclass(frozen=True)
class Startup:
    """startup (infer): time to the first prediction."""

    time_to_first_prediction: float | None = None
    model_ready_seconds: float | None = None
    batch_size: int | None = None


@dataclasses.dataclass(frozen=True)
class Cpu:
    affinity_cores: int | None = None
    logical_cores: int | None = None


@dataclasses.dataclass(frozen=True)
class Hardware:
    cpu: Cpu = _sub(Cpu)


@dataclasses.dataclass(frozen=True)
class Software:
    tensorflow: str | None = None


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """One run record, typed.  Batch sizes keep the record's names: `global_batch_size`
    (all replicas together, what --batch_size gives) and `per_replica_batch_size`."""

    run_id: str | None = None
    schema_version: int = 1
    kind: str = "train"
    status: str | None = None
    error: str | None = None
    started: str | None = None
    finished: str | None = None
    heartbeat: str | None = None
    record_path: str | None = None
    startup_seconds: float | None = None
    examples_per_epoch: int | None = None
    global_batch_size: int | None = None
    per_replica_batch_size: int | None = None
    config: Config = _sub(Config)
    placement: Placement = _sub(Placement)
    model: Model = _sub(Model)
    data: Data = _sub(Data)
    results: Results = _sub(Results)
    mfu: Mfu = _sub(Mfu)
    cost: Cost = _sub(Cost)
    weights: Weights = _sub(Weights)
    startup: Startup = _sub(Startup)
    hardware: Hardware = _sub(Hardware)
    software: Software = _sub(Software)
    raw: dict = _raw()

    @property
    def model_name(self) -> str:
        """The model's name, or the --model flag of a record that never described it."""
        name = self.model.name or self.config.model or ""
        return name if isinstance(name, str) else repr(name)


def view(record: dict) -> RunRecord:
    """The typed view of RECORD (a current-schema dict; records.typed migrates first)."""
    model = record.get("model")
    if isinstance(model, str):  # a model named by a bare string: read it as the name
        record = record | {"model": {"name": model}}
    return build(RunRecord, record)
