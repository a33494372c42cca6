"""A train run's plan: steps, data, params, strategy and prices, resolved
before the model is built; and the record's cost and MFU sections of it.

train.py (the command) and job.py (the run) both import this module, not
each other.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import TYPE_CHECKING

from tpubench.core import bounds, errors
from tpubench.core.config import TrainConfig
from tpubench.cost import runs as cost_runs
from tpubench.run import conv_grads, efficiency, epochs, interrupts, layout, session

if TYPE_CHECKING:
    import tensorflow as tf

    from tpubench.data.manifest import Manifest
    from tpubench.hardware.placement import Placement
    from tpubench.model.model_api import ModelSpec

DEFAULT_TRAIN_STEPS = 300


@dataclasses.dataclass(frozen=True)
class Batch:
    """A train run's global batch and the replicas it splits over, checked once (`of`)."""

    global_size: int
    replicas: int

    @property
    def per_replica(self) -> int:
        """Examples one replica takes per step."""
        return self.global_size // self.replicas

    @classmethod
    def of(cls, cfg: TrainConfig, default: int, replicas: int) -> Batch:
        """--batch_size, else --per_replica_batch_size (or DEFAULT, the model's) x REPLICAS;
        a UsageError for a global batch past --batch_size's cap or not split evenly."""
        from tpubench.hardware import placement as placement_lib

        if cfg.per_replica_batch_size:
            bounds.check_global_batch(cfg.per_replica_batch_size, replicas)
        size = cfg.global_batch_size or (cfg.per_replica_batch_size or default) * replicas
        placement_lib.check_batch(size, replicas)
        return cls(size, replicas)


def total_steps(cfg: TrainConfig, epoch_examples: int, batch: int) -> int:
    """--train_steps, or --train_epochs over the epoch's examples, or the default."""
    if cfg.train_steps is not None and cfg.train_epochs is not None:
        raise errors.UsageError("give --train_steps or --train_epochs, not both")
    if cfg.train_epochs is not None:
        return max(1, math.ceil(cfg.train_epochs * epoch_examples / batch))
    return cfg.train_steps or DEFAULT_TRAIN_STEPS


@dataclasses.dataclass(frozen=True)
class Plan:
    """What the session resolved for a train run, before the model is built."""

    spec: ModelSpec
    params: dict  # fitted to the data
    strategy: tf.distribute.Strategy
    placement: Placement
    manifest: Manifest | None  # None on synthetic data
    total_steps: int
    epoch_examples: int
    batch: Batch
    prices: cost_runs.Prices
    started: float  # perf_counter when set-up began
    skipped: dict | None = None  # under --skip_corrupt: the damaged shards' summary
    fitted: dict = dataclasses.field(default_factory=dict)  # what the data changed
    unfitted: dict = dataclasses.field(default_factory=dict)  # those params before the fit
    data_format: str = "channels_last"  # the image layout the network is built in
    xla: bool = False  # whether the step compiles with XLA (resolve_xla)
    xla_reason: str | None = None  # why, when the flag was not given and XLA is on
    pointwise_matmul: bool = False  # 1x1 weight gradients as matrix products (conv_grads)
    own_batch_norm: bool = False  # batch norms train through tpubench's CPU kernel (conv_grads)
    batch_norm_note: str | None = None  # why auto could not take that kernel here

    @property
    def replicas(self) -> int:
        """Replicas the batch is split over (workers under parameter servers)."""
        return self.batch.replicas


def plan(cfg: TrainConfig, model_dir: str, started: float | None = None):
    """Plan of CFG, or None for a worker/ps task (it has served until stopped)."""
    from tpubench.data import resolve
    from tpubench.hardware import clusters
    from tpubench.hardware import strategy as strategy_lib

    started = time.perf_counter() if started is None else started
    strategy_lib.configure_host(cfg.hardware)
    ref = session.ModelRef.of(cfg)
    spec, params = session.load_spec(ref)
    layout.check(cfg.data_format, spec)
    prices = cost_runs.prices(cfg.cost)  # fail on a bad --machine before any training
    role = clusters.ps_server_role(cfg.hardware)
    if role is not None:
        return role
    strategy, placement = session.build_strategy(cfg.hardware)
    interrupts.reclaim_signals(placement)  # TensorFlow may have taken SIGTERM for itself
    data_format = layout.resolve(cfg.data_format, spec, placement.accelerator, cfg.precision)
    layout.check_host(data_format, placement.accelerator, cfg.data_format)
    if cfg.data.compare_synthetic and placement.num_workers > 1:
        raise errors.UsageError(
            "--compare_synthetic runs on one host; for a cluster, run the cluster twice "
            "(with and without --use_synthetic_data) and compare the records"
        )
    _check_buckets(cfg, model_dir, placement.is_chief)
    synced = params.get("sync_batch_norm") and placement.strategy != "tpu"
    xla, xla_reason = resolve_xla(cfg, placement, bool(synced))
    if xla and synced and placement.num_replicas > 1:
        raise errors.UsageError(
            f"--xla with --params sync_batch_norm=true on {placement.num_replicas} replicas: the "
            "all-reduce of batch statistics cannot run inside an XLA-compiled replica step; "
            "drop --xla or sync_batch_norm"
        )
    if xla and placement.strategy == "central_storage" and placement.num_replicas > 1:
        raise errors.UsageError(
            f"--xla with --strategy=central_storage on {placement.num_replicas} replicas: each "
            "replica's batch-norm and dropout state updates the one copy on the parameter "
            "device, which cannot happen inside an XLA-compiled replica step; drop --xla or "
            "use --strategy=mirrored"
        )
    ps = placement.strategy == "parameter_server"
    replicas = placement.num_workers if ps else placement.num_replicas  # workers under PS
    batch = Batch.of(cfg, spec.default_batch_size, replicas)
    data_dir, manifest = resolve.resolve(cfg.data, spec, cfg.target_accuracy)
    fixed = placement.strategy in ("multi_worker", "tpu")
    feed = session.Feed(batch.global_size, replicas, cfg.seed, cfg.data, fixed_eval_steps=fixed)
    fitted = session.fit_params(params, ref, manifest, feed, data_dir)
    changes = session.fitted_changes(params, fitted, manifest)
    unfitted = session.unfitted(params, fitted, manifest)
    params = fitted
    skipped = None
    if manifest is not None and cfg.data.skip_corrupt:
        readable = resolve.readable_records(manifest)
        params["readable_records"] = readable["readable_records"]
        skipped = readable["summary"]
    per_epoch = epochs.examples_per_epoch(spec, manifest, params)
    steps = total_steps(cfg, per_epoch, batch.global_size)
    own_bn, bn_note = conv_grads.own_batch_norm(cfg.batch_norm_kernel, placement, xla)
    if bn_note and placement.is_chief:
        session.say(bn_note)
    return Plan(
        spec,
        params,
        strategy,
        placement,
        manifest,
        steps,
        per_epoch,
        batch,
        prices,
        started,
        skipped,
        changes,
        unfitted,
        data_format,
        xla,
        xla_reason,
        conv_grads.as_matmul(cfg.pointwise_weight_grad, placement.accelerator),
        own_bn,
        bn_note,
    )


def resolve_xla(cfg: TrainConfig, placement, synced: bool) -> tuple[bool, str | None]:
    """Whether the step compiles with XLA, and why when the flag did not say.

    --xla/--noxla as given; unset, on where the precision asks for it on a
    GPU (bf16: `precision.gpu_xla`), except where XLA cannot compile the step:
    synchronized batch norm over several replicas, parameter servers (either kind).
    """
    if cfg.xla_given:
        return cfg.xla, None
    several = synced and placement.num_replicas > 1
    if (
        cfg.precision.gpu_xla
        and placement.accelerator == "gpu"
        and not several
        and placement.strategy not in ("parameter_server", "central_storage")
    ):
        return True, (
            f"{cfg.precision} on a GPU compiles with XLA unless --noxla: without it TensorFlow "
            "leaves batch norm, ReLU and residual additions unfused for bf16 (docs/gpu.md)"
        )
    return cfg.xla, None


def check_buckets_early(cfg: TrainConfig) -> None:
    """The gs:// access checks, before TensorFlow is imported (google-cloud-storage only).

    A missing bucket or permission is refused in one line in about a second,
    not after TensorFlow's import and a model build, and leaves no failed
    record (its results_dir may be the missing bucket).  Outside a cluster
    (no TF_CONFIG) this process is the chief and checks its writes too;
    a cluster's tasks are checked again in `plan`, where roles are known.
    """
    import os

    _check_buckets(cfg, cfg.model_dir or cfg.results_dir, is_chief=not os.environ.get("TF_CONFIG"))


def _check_buckets(cfg: TrainConfig, model_dir: str, is_chief: bool) -> None:
    """Fails before training when a gs:// location cannot be read or written."""
    from tpubench.storage import gcs

    if gcs.is_gcs(cfg.data.data_dir):
        gcs.check_access(cfg.data.data_dir, write=False)
    if not is_chief:
        return
    for path in {model_dir, cfg.results_dir}:
        if path and gcs.is_gcs(path):
            gcs.check_access(path, write=True)


def describe(p: Plan) -> dict:
    """The record's model, placement and data sections and its batch sizes, from the plan."""
    spec = p.spec
    data = session.data_section(spec, p.manifest, p.params)
    if p.manifest is None:
        data["examples_per_epoch_assumed"] = p.epoch_examples
        data["canonical_dataset"] = spec.datasets[0] if spec.datasets else None
    if p.skipped is not None:
        data["skipped"] = p.skipped
    model = {
        "name": spec.name,
        "description": spec.description,
        "params": session.plain(session.recorded_params(p.params)),
        "target_metric": spec.target_metric,
        "target_mode": spec.target_mode,
        "data_format": p.data_format,
        "pointwise_weight_grad": conv_grads.describe(p.pointwise_matmul),
        "batch_norm_kernel": "tpubench" if p.own_batch_norm else "tensorflow",
    }
    if p.batch_norm_note:
        model["batch_norm_note"] = p.batch_norm_note
    return dict(
        model=model | ({"fitted_to_data": p.fitted} if p.fitted else {}),
        placement=session.plain(p.placement.__dict__),
        data=data,
        global_batch_size=p.batch.global_size,
        per_replica_batch_size=p.batch.per_replica,
        train_steps=p.total_steps,
        examples_per_epoch=p.epoch_examples,
    )


def cost_section(p: Plan, results: dict, prices: cost_runs.Prices | None = None) -> dict:
    """The record's `cost` section; PRICES (of what ran) replace the up-front ones."""
    target = results.get("target") or {}
    usage = cost_runs.Usage(
        results.get("examples_per_sec"),
        results["train_wall_seconds"],
        session.accelerators_priced(p.placement),
        examples_per_epoch=p.epoch_examples,
        seconds_to_target=target.get("seconds"),
    )
    return cost_runs.train_costs(prices or p.prices, usage)


def mfu_section(cfg: TrainConfig, p: Plan, results: dict) -> dict:
    view = efficiency.PeakView.of(cfg, train=True)
    measured = efficiency.measure(p.spec, p.params, p.placement, view, p.unfitted)
    return measured.train_section(results.get("examples_per_sec"))
