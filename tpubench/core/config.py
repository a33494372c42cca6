"""Frozen run configuration.  Flags are parsed once (tpubench/cli/configs.py)
into these; nothing below the CLI reads FLAGS."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from tpubench.core.basis import Basis
from tpubench.core.precision import Precision


@dataclasses.dataclass(frozen=True)
class HardwareConfig:
    """Which devices, how many, and how replicas talk."""

    accelerator: str = "auto"
    strategy: str = "auto"
    all_reduce: str = "auto"
    parameter_device: str | None = None  # central_storage: cpu | gpu (None: cpu)
    num_gpus: int | None = None  # None: every visible GPU
    tpu: str | None = None
    num_cpu_devices: int = 1
    num_intra_threads: int = 0  # 0: TensorFlow's default
    num_inter_threads: int = 0
    cpu_kernels: str = "auto"  # hardware/cpu_kernels.py: auto | onednn | zendnn


@dataclasses.dataclass(frozen=True)
class DataConfig:
    """Where examples come from."""

    dataset: str | None = None  # None: the model's embedded/canonical dataset
    data_dir: str | None = None
    use_synthetic_data: bool = False
    deterministic: bool = False
    cache: bool = False
    read_mb_per_s: float | None = None  # an emulated disk's read rate (data/throttle.py)
    skip_corrupt: bool = False  # train on the readable records of damaged shards
    compare_synthetic: bool = False  # also run on synthetic data; report the ratio


@dataclasses.dataclass(frozen=True)
class CostConfig:
    """How the run is priced, and the peak its MFU is measured against."""

    machine: tuple[str, ...] = ()
    price_as: tuple[str, ...] = ()  # --price_as: what-if machines, not measured there
    pricing: Basis = Basis.ON_DEMAND
    price_per_hour: float | None = None
    price_catalog: str | None = None
    peak_flops: float | None = None  # --peak_flops: overrides the datasheet or probed peak


# A train run's periodic checkpoint, by time: what a kill or a preemption loses at most
# (docs/reliability.md, "Checkpoints by default"); `advise --pricing=spot` assumes it.
CHECKPOINT_EVERY_DEFAULT = "10m"
CHECKPOINT_EVERY_SECONDS = 600.0


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """One `tpubench train` invocation, fully resolved."""

    model: str = "mnist_mlp"
    model_modules: tuple[str, ...] = ()
    params: tuple[tuple[str, Any], ...] = ()
    tiny: bool = False
    global_batch_size: int | None = None  # --batch_size; None: the model's default
    # --per_replica_batch_size: one replica's batch; the global one is this x replicas.
    per_replica_batch_size: int | None = None
    train_steps: int | None = None
    train_epochs: float | None = None
    steps_per_loop: int = 1
    warmup_loops: int = 1
    eval_every_steps: int | None = None
    eval_steps: int | None = None
    target_accuracy: float | None = None
    stop_at_target: bool = True
    precision: Precision = Precision.FP32
    optimizer: str = "model"  # the model's own, or vocab.OPTIMIZERS (model/optimizer_choice.py)
    xla: bool = False
    # --xla or --noxla was given; if not, the precision may turn XLA on for a GPU
    # (core/precision.py `gpu_xla`, run/train/planning.resolve_xla).
    xla_given: bool = False
    data_format: str = "auto"
    pointwise_weight_grad: str = "auto"  # vocab.POINTWISE_WEIGHT_GRADS (run/conv_grads.py)
    batch_norm_kernel: str = "auto"  # vocab.BATCH_NORM_KERNELS (run/conv_grads.py)
    seed: int = 42
    model_dir: str | None = None
    results_dir: str = "runs"
    run_label: str | None = None  # stored in the record; tpubench-launch finds its runs by it
    checkpoint_every_steps: int | None = None
    # A checkpoint at the first loop end this many seconds after the last one (None: off);
    # --checkpoint_every (default CHECKPOINT_EVERY_DEFAULT).
    checkpoint_every_secs: float | None = CHECKPOINT_EVERY_SECONDS
    async_remote_writes: bool = True  # gs:// metric and checkpoint writes off the training path
    wait_for_lock: bool = False  # another run holds model_dir: wait instead of stopping
    shutdown_grace_secs: float = 25.0  # SIGTERM to exit, however slow the bucket
    storage_stall_secs: float = 60.0  # a gs:// call this old: a warning naming the bucket
    storage_deadline_secs: float = 600.0  # a gs:// call this old: the run stops
    profile_steps: tuple[int, int] | None = None  # START, END (from 1): a TensorBoard profile
    log_every_secs: float = 10.0
    hardware: HardwareConfig = dataclasses.field(default_factory=HardwareConfig)
    data: DataConfig = dataclasses.field(default_factory=DataConfig)
    cost: CostConfig = dataclasses.field(default_factory=CostConfig)

    def to_dict(self) -> dict:
        """The record's `config`: every setting but the batch, which a record gives once,
        as it ran (its top-level `global_batch_size` and `per_replica_batch_size`)."""
        d = dataclasses.asdict(self)
        d["params"] = dict(self.params)
        del d["global_batch_size"], d["per_replica_batch_size"]
        d["cost"]["machine"] = list(self.cost.machine)
        if self.profile_steps is not None:
            d["profile_steps"] = list(self.profile_steps)
        return d


@dataclasses.dataclass(frozen=True)
class ReportConfig:
    """One `tpubench report` invocation."""

    inputs: tuple[str, ...] = ()  # record files, local directories, gs:// prefixes
    output: str | None = None  # None: terminal tables only
    baseline: str | None = None  # group selector, e.g. "threads=1"
    published: tuple[str, ...] = ()  # published figure sets to show beside the runs
    allow_mixed: tuple[str, ...] = ()  # "params", "batch_size", "precision"
    format: str = "table"  # what stdout shows: table, markdown, csv
    title: str = "tpubench report"
    pricing: Basis = Basis.ON_DEMAND  # the basis of every dollar figure (--pricing)


@dataclasses.dataclass(frozen=True)
class AdviseConfig:
    """One `tpubench advise` invocation: exactly one of deadline, budget and qps."""

    inputs: tuple[str, ...] = ()
    model: str = ""
    deadline_seconds: float | None = None
    budget_usd: float | None = None
    epochs: float = 1.0
    to_target: bool = False
    price_catalog: str | None = None
    max_age_days: float = 180.0
    tf_version: str | None = None  # None: the installed TensorFlow's, if any
    qps: float | None = None  # serving: the load (instead of deadline or budget)
    latency_bound_seconds: float | None = None  # serving: the bound at latency_percentile
    latency_percentile: float = 99.0
    pricing: Basis = Basis.ON_DEMAND  # the basis of the answer (--pricing)
    allow_busy: bool = False  # serving: size from records measured on a busy host too


# --scenario's value that runs no LoadGen; the LoadGen scenarios are plug-ins
# (run/infer/scenarios/, whose `choices()` is the flag's every value).
CLOSED_LOOP = "closed_loop"


@dataclasses.dataclass(frozen=True)
class ScenarioConfig:
    """How `tpubench infer --scenario=...` drives the model through MLPerf's LoadGen.

    Only what every scenario shares; a scenario's own settings (the server's
    latency bound, the offline repeats) are `own`, filled from the flags the
    scenario declares (run/infer/scenarios/, cli/scenario_flags.py).  Times
    are seconds.  None means "as the user_conf, else mlperf.conf, sets it".
    The scenario as run, every value filled in, is `loadgen_conf.read(...)[0].config`.
    """

    name: str = CLOSED_LOOP  # tpubench's own timing, no LoadGen
    max_batch_size: int | None = None  # None: the largest --batch_size (or the model's)
    min_duration: float | None = None  # None: mlperf.conf's (600 s)
    min_query_count: int | None = None
    qsl_samples: int | None = None  # samples loaded before timing (performance_sample_count)
    user_conf: str | None = None  # an MLPerf user.conf laid over mlperf.conf
    # The user_conf set LoadGen's expected latency (streams) or QPS (offline):
    # runs are not sized from the closed loop.
    expected_from_user_conf: bool = False
    own: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # the scenario's own
    # The scenario's plug-in, resolved from --scenario once at the CLI edge (None: closed loop).
    plugin: Any = dataclasses.field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict:
        """The record's `config.scenario`: the shared settings and the scenario's own."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        del d["own"], d["plugin"]
        return d | dict(self.own)


@dataclasses.dataclass(frozen=True)
class InferConfig:
    """One `tpubench infer` invocation (a sweep over batch sizes), fully resolved."""

    model: str = "mnist_mlp"
    model_modules: tuple[str, ...] = ()
    params: tuple[tuple[str, Any], ...] = ()
    tiny: bool = False
    global_batch_sizes: tuple[int, ...] = ()  # --batch_size; empty: the model's default
    num_batches: int = 100
    num_warmup_batches: int = 5
    max_seconds: float | None = None
    precision: Precision = Precision.FP32
    xla: bool = False
    data_format: str = "auto"
    seed: int = 42
    checkpoint: str | None = None
    model_dir: str | None = None  # a training run's model_dir to take weights from
    fold_batch_norm: str = "auto"  # vocab.FOLD_BATCH_NORMS (run/conv_grads.folds)
    check_accuracy: bool = True
    eval_steps: int | None = None
    results_dir: str = "runs"
    run_label: str | None = None  # stored in every record of the sweep; studies find cells by it
    log_every_secs: float = 10.0
    hardware: HardwareConfig = dataclasses.field(default_factory=HardwareConfig)
    data: DataConfig = dataclasses.field(
        default_factory=lambda: DataConfig(use_synthetic_data=True)
    )
    cost: CostConfig = dataclasses.field(default_factory=CostConfig)
    scenario: ScenarioConfig = dataclasses.field(default_factory=ScenarioConfig)

    def to_dict(self) -> dict:
        """The record's `config`: every setting but the batch sizes (each record of the
        sweep gives its own at the top level, the whole sweep's in `sweep.batch_sizes`)."""
        d = dataclasses.asdict(dataclasses.replace(self, scenario=ScenarioConfig()))
        d["params"] = dict(self.params)
        d["scenario"] = self.scenario.to_dict()
        del d["global_batch_sizes"]
        d["cost"]["machine"] = list(self.cost.machine)
        return d


@dataclasses.dataclass(frozen=True)
class DataBenchConfig:
    """One `tpubench data bench`: a model's input pipeline over a prepared directory."""

    model: str = "resnet50"
    data_dir: str | None = None
    model_modules: tuple[str, ...] = ()
    params: tuple[tuple[str, str], ...] = ()
    tiny: bool = False
    batch_size: int | None = None  # None: the model's default
    batches: int = 50
    warmup: int = 5
    split: str = "train"
    seed: int = 0
    deterministic: bool = False
    cache: bool = False
    read_mb_per_s: float | None = None
    format: str = "table"
    results_dir: str | None = None  # a run record goes here; None: no record
    run_label: str | None = None

    def to_dict(self) -> dict:
        """The record's `config`: every setting but the batch (the record's top level)."""
        d = dataclasses.asdict(self)
        d["params"] = dict(self.params)
        del d["batch_size"]
        return d
