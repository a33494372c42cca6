"""What defines a run's configuration: the dimensions (group.DIMENSIONS) runs are grouped by.

Placement where the record has it, else the flags; older records' missing
fields take the defaults they ran with; a non-train kind is its own
"model", so no table, chart or advice mixes inference and training rates.
report/load.py calls `of` for each run it loads.
"""

from __future__ import annotations

from tpubench.core import money, precision
from tpubench.core.basis import Basis
from tpubench.cost import measured_on
from tpubench.report import scenario_fields
from tpubench.storage import record_results, record_view


def of(rec: record_view.RunRecord, params: dict, first: record_results.MachineCost) -> dict:
    """What defines a run's configuration (group.DIMENSIONS): placement, else the flags."""
    hw, placement = rec.config.hardware, rec.placement
    return {
        "kind": rec.kind,
        # Inference and training rates are different quantities: a non-train
        # kind is its own "model", so no table, chart or advice mixes them.
        "model": _model_key(rec.model.name or rec.config.model or "?", rec.kind, rec.scenario),
        "machine": _machine_name(first, accelerators_ran(rec)),
        "dataset": rec.data.name or "?",
        "params": _params_text(params),
        "tiny": bool(rec.config.tiny),
        "batch": rec.global_batch_size,
        "per_replica_batch": rec.per_replica_batch_size,
        "precision": precision.recorded(rec.config.precision) or rec.config.precision,
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


def accelerators_ran(rec: record_view.RunRecord):
    """The accelerators REC's run probed (its record's hardware section)."""
    return (rec.raw.get("hardware") or {}).get("accelerators")


def _or(value, default):
    """VALUE, or DEFAULT where an older record lacks it."""
    return default if value is None else value


def _model_key(name: str, kind: str, scenario: str | None) -> str:
    if scenario:  # LoadGen's server QPS is not a closed-loop rate
        kind = f"{kind} {scenario}"
    return name if kind == "train" else f"{name} [{kind}]"


def _machine_name(cost: record_results.MachineCost, ran=None) -> str:
    if cost.pricing == Basis.OVERRIDE and not cost.machine:
        return f"{money.usd(cost.usd_per_hour)}/h (--price_per_hour)"
    away = bool(measured_on.not_measured((cost,), ran))  # marked: priced from other hardware
    return measured_on.marked(cost.machine or "unpriced", away)


def _params_text(params: dict) -> str:
    return ",".join(f"{k}={params[k]}" for k in sorted(params))
