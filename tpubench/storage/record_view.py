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

from tpubench.storage import record_migrations
from tpubench.storage.record_fields import build
from tpubench.storage.record_fields import raw as _raw
from tpubench.storage.record_fields import sub as _sub
from tpubench.storage.record_results import Cost, LoadGen, Mfu, Results

# ---------------------------------------------------------------- sections


@dataclasses.dataclass(frozen=True)
class HardwareFlags:
    """config.hardware: the hardware flags the run was given."""

    accelerator: str | None = None
    strategy: str | None = None
    all_reduce: str | None = None
    num_intra_threads: int | None = None
    num_inter_threads: int | None = None
    cpu_kernels: str | None = None


@dataclasses.dataclass(frozen=True)
class Config:
    """config: the resolved flags (core/config.py's to_dict) plus the run's model_dir."""

    model: str | None = None
    precision: str | None = None
    xla: bool = False
    tiny: bool = False
    steps_per_loop: int | None = None
    optimizer: str | None = None  # --optimizer ("model": the model's own); older records: none
    model_dir: str | None = None
    results_dir: str | None = None
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
    parameter_device: str | None = None  # central_storage: where the variables lived

    @property
    def parameter_server(self) -> bool:
        """Workers stepping on their own batch shares (the rate is split by workers)."""
        return self.strategy == "parameter_server" and bool(self.num_workers)

    @property
    def strategy_text(self) -> str | None:
        """The strategy as tables show it: central_storage names its variables' device."""
        if self.strategy == "central_storage" and self.parameter_device:
            return f"{self.strategy}/{self.parameter_device}"
        return self.strategy


@dataclasses.dataclass(frozen=True)
class Model:
    name: str | None = None
    params: dict = dataclasses.field(default_factory=dict)  # the model's, less the batch
    target_metric: str | None = None
    data_format: str | None = None
    fitted_to_data: dict | None = None
    optimizer: str | None = None  # what trained: "sgd", or "model (RMSprop)"


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
    """One run record, typed.  The batch is given once (schema 2), as it ran:
    `global_batch_size` (all replicas together, what --batch_size gives) and
    `per_replica_batch_size`; neither `config` nor `model.params` repeats it."""

    run_id: str | None = None
    schema_version: int = 1
    kind: str = "train"
    status: str | None = None
    error: str | None = None
    started: str | None = None
    finished: str | None = None
    heartbeat: str | None = None
    record_path: str | None = None
    argv: list | None = None  # the command line, credentials redacted
    flags: dict | None = None  # every flag's value, what `tpubench rerun` repeats
    startup_seconds: float | None = None
    examples_per_epoch: int | None = None
    global_batch_size: int | None = None
    per_replica_batch_size: int | None = None
    scenario: str | None = None  # infer --scenario: the LoadGen scenario
    config: Config = _sub(Config)
    placement: Placement = _sub(Placement)
    model: Model = _sub(Model)
    data: Data = _sub(Data)
    results: Results = _sub(Results)
    mfu: Mfu = _sub(Mfu)
    cost: Cost = _sub(Cost)
    weights: Weights = _sub(Weights)
    startup: Startup = _sub(Startup)
    loadgen: LoadGen = _sub(LoadGen)
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
    return build(RunRecord, record_migrations.loadgen_traits(record))
