"""A train run's parts built from its plan: the Runner, and where its metrics go.

`runner`: the Runner with the plan's spec, strategy, layout and kernels;
`background_writes`: whether gs:// writes leave the training thread;
`writer`: the run's metric writer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tpubench.core.config import TrainConfig
from tpubench.run.train import planning
from tpubench.storage.run_dir import RunDir

if TYPE_CHECKING:
    from tpubench.run.runner import Runner


def runner(cfg: TrainConfig, p: planning.Plan) -> Runner:
    """The Runner for plan P (a parameter-server run steps on the per-replica batch)."""
    from tpubench.run import runner as runner_lib

    ps = p.placement.strategy == "parameter_server"
    return runner_lib.Runner(
        p.spec,
        p.params,
        p.strategy,
        cfg.precision,
        p.xla,
        step_batch=p.params["per_replica_batch_size"] if ps else None,
        data_format=p.data_format,
        optimizer=cfg.optimizer,
        pointwise_matmul=p.pointwise_matmul,
        own_batch_norm=p.own_batch_norm,
    )


def background_writes(cfg: TrainConfig, p: planning.Plan, run_dir: RunDir) -> bool:
    """gs:// writes off the training path: asked for, on gs://, and one process
    writing (workers of a cluster save together; their copies are removed at once)."""
    single = p.placement.num_workers == 1 and p.placement.strategy != "parameter_server"
    return cfg.async_remote_writes and run_dir.is_gcs and single


def writer(p: planning.Plan, run_dir: RunDir, record: dict, step: int, background: bool):
    """The metric writer from STEP on (the chief's; nothing elsewhere)."""
    from tpubench.run.train import loop

    return loop.writer(run_dir, p.placement.is_chief, record.get("run_id"), step, background)
