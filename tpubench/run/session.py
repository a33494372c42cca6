"""The run session: what every command that runs a model shares.

train, infer, `train --compare_synthetic` and `data bench` all go through
here for: the model spec and its params fitted to the data manifest
(classes, vocabulary) in one place; the strategy and placement; the batch
checks; the hardware and software probe; prices; the base record and the
record of a run that failed early.  Signals while a model runs: interrupts.py.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from tpubench.core import errors
from tpubench.core.config import DataConfig
from tpubench.core.precision import Precision
from tpubench.hardware import memory_cap
from tpubench.run import epochs
from tpubench.storage import liveness, records, redaction


# ------------------------------------------------------------------ records
@dataclasses.dataclass(frozen=True)
class Invocation:
    """The command line a record describes."""

    argv: list
    flag_values: dict


def base_record(kind: str, run_id: str, config: dict | None, invocation: Invocation) -> dict:
    """The fields every record starts with, status `running`."""
    cap = memory_cap.active()  # --memory_limit: the cap this process runs under
    return {
        "schema_version": records.SCHEMA_VERSION,
        "run_id": run_id,
        "kind": kind,
        "status": "running",
        "started": records.now_iso(),
        **liveness.identity(),  # pid, host, heartbeat: `runs` tells a dead run from a live one
        "argv": redaction.redact_argv(invocation.argv),
        "flags": redaction.redact_flags(invocation.flag_values),
        "config": config,
        **({"memory_limit_bytes": cap} if cap else {}),
    }


def say(message: str) -> None:
    """A note on the console (stderr) that is not the run's error line."""

    print(f"tpubench: note: {message}", file=sys.stderr, flush=True)


def write_early_failure(record: dict, error: errors.TpubenchError, results_dir: str) -> None:
    """A run that failed before TensorFlow loaded leaves a record; ERROR learns its path.

    A usage error (flags, prices or hardware refused) before TensorFlow loads
    leaves none: no run started, and its one line says all a record would.
    A cap too small for TensorFlow's start-up is no usage error: it leaves one.
    """
    if refused(error):
        error.record_path = None
        return
    record.update(status="failed", error=str(error), finished=records.now_iso())
    try:
        error.record_path = records.write(record, results_dir)
    except Exception:  # noqa: BLE001 - results_dir may be the missing bucket itself
        # The run's own error is what the user must see; without a path the
        # error line names no record, which is the truth.
        error.record_path = None


def refused(e: BaseException) -> bool:
    """E refused the flags, prices or hardware asked for: a usage error, in a word."""
    return isinstance(e, (errors.UsageError, errors.HardwareError, errors.PriceError))


def mark_refused(record: dict, e: BaseException) -> None:
    """Marks RECORD `refused` when E refused the flags, prices or hardware asked for.

    Such a refusal after TensorFlow loaded (the strategy or the data refused
    the flags) comes once the run's record exists; nothing was measured, and
    `tpubench runs` lists such records apart from the runs that failed while
    running.  A refusal before TensorFlow loads leaves no record.
    """
    if refused(e):
        record["refused"] = True


def outcome(e: BaseException) -> tuple[str, str]:
    """(status, error) that a record gets for an exception other than an interrupt."""
    if isinstance(e, errors.RunInvalidError):
        return "invalid", str(e)
    if isinstance(e, errors.TpubenchError):
        return "failed", str(e)
    # TensorFlow's real cause, in one line (or the memory cap it reached)
    return "failed", memory_cap.explain(e) or errors.describe(e)


# ------------------------------------------------------------------ model and data
@dataclasses.dataclass(frozen=True)
class ModelRef:
    """Which model, with which --params, --tiny and --model_module."""

    name: str
    params: tuple = ()
    tiny: bool = False
    modules: tuple = ()

    @classmethod
    def of(cls, cfg) -> ModelRef:
        return cls(cfg.model, tuple(cfg.params), cfg.tiny, tuple(cfg.model_modules))


@dataclasses.dataclass(frozen=True)
class Feed:
    """How the input pipeline is fed: batch, seed and data options."""

    global_batch_size: int
    replicas: int  # the batch is split over these (workers under parameter servers)
    seed: int
    data: DataConfig
    fixed_eval_steps: bool = False


def load_spec(ref: ModelRef):
    """(spec, params) of REF, its params resolved from defaults, --tiny and --params."""
    from tpubench.model import registry

    for module in ref.modules:
        registry.load_module(module)
    spec = registry.get(ref.name)
    return spec, registry.resolve_params(spec, dict(ref.params), tiny=ref.tiny)


def fit_params(params: dict, ref: ModelRef, manifest, feed: Feed, data_dir) -> dict:
    """PARAMS for one run: batch, seed and data options, and the head and
    vocabulary fitted to the data the model reads (unless --params set them)."""
    from tpubench.model import model_api

    out = model_api.run_params(params, feed.global_batch_size, feed.replicas)
    out.update(
        seed=feed.seed,
        data_dir=data_dir,
        deterministic=feed.data.deterministic,
        cache=feed.data.cache,
        fixed_eval_steps=feed.fixed_eval_steps,
    )
    if feed.data.read_mb_per_s:  # only when set: records without it keep their params
        out["read_mb_per_s"] = feed.data.read_mb_per_s
    own = dict(ref.params)
    if manifest is not None:
        for key, value in manifest.fitted_params().items():
            if key in out and key not in own:
                out[key] = value
    return out


def fitted_changes(before: dict, after: dict, manifest) -> dict:
    """What fitting to the data changed, for the record and the console.

    {"num_classes": "1000 -> 8", "images": "32x32x3 resized to 224x224 ..."}:
    the params whose value the data set, and how images meet the model's size.
    """
    if manifest is None:
        return {}
    out = {
        k: f"{before[k]} -> {after[k]}"
        for k in manifest.fitted_params()
        if k in before and k in after and before[k] != after[k]
    }
    out.update(manifest.image_fit(after))
    return out


def unfitted(before: dict, after: dict, manifest) -> dict:
    """{param: its value before fitting} for the params fitting to the data changed."""
    if manifest is None:
        return {}
    return {
        k: before[k]
        for k in manifest.fitted_params()
        if k in before and k in after and before[k] != after[k]
    }


def fitted_from_data(params: dict, manifest) -> dict:
    """The params a run took from its data (for a synthetic twin of the same size)."""
    if manifest is None:
        return {}
    return {k: params[k] for k in manifest.fitted_params() if k in params}


def check_batches(batches: tuple, replicas: int) -> None:
    """Every batch size of a sweep must split evenly over the replicas."""
    bad = [b for b in batches if b % replicas]
    if bad:
        raise errors.UsageError(
            f"--batch_size={','.join(map(str, batches))}: {', '.join(map(str, bad))} not "
            f"divisible by the {replicas} replicas; accepted: multiples of {replicas}"
        )


def check_machine(cfg) -> None:
    """Refuses, before TensorFlow loads and with no record, a --machine whose
    accelerators this host cannot run (a GPU machine on a host with no GPU)."""
    from tpubench.cost import runs as cost_runs
    from tpubench.hardware import placement

    cost_runs.check_host(
        cfg.cost,
        accelerator=cfg.hardware.accelerator,
        tpu=cfg.hardware.tpu,
        no_gpu=placement.no_gpu_reason(),
        tpu_host=placement.on_tpu_vm(),
    )


def full_eval_batches(spec, manifest, params: dict, batch: int, requested: int | None) -> int:
    """Eval steps when every batch must be full: at most the eval split's whole BATCHes."""
    examples = epochs.examples_per_epoch(spec, manifest, params, manifest.eval_split())
    full = max(1, examples // batch)
    return min(requested or full, full)


def data_section(spec, manifest, params: dict) -> dict:
    """The record's `data`: the manifest's identity, or what synthetic batches look like."""
    if manifest is not None:
        return manifest.identity()
    return {"name": "synthetic", "element_spec": str(spec.element_spec(params))}


# ------------------------------------------------------------------ hardware
def build_strategy(hw) -> tuple[Any, Any]:
    """(strategy, placement) for HW (strategy.build)."""
    from tpubench.hardware import strategy

    return strategy.build(hw)


def probe(placement, precision: Precision = Precision.FP32) -> dict:
    """The record's `hardware` and `software` sections; a note when bf16 on this CPU is slow."""
    from tpubench.hardware import amx
    from tpubench.hardware import probe as probe_lib

    cpu = probe_lib.cpu()
    if precision is Precision.BF16 and placement.accelerator == "cpu":
        slow = amx.slow_bf16(cpu)
        if slow:
            say(slow)
    return {
        "hardware": {"cpu": cpu, "accelerators": probe_lib.accelerators(placement)},
        "software": probe_lib.software(),
    }


def accelerators_priced(placement) -> int:
    """Accelerators a run holds, for pricing (0 on CPU)."""
    return 0 if placement.accelerator == "cpu" else placement.num_replicas


# The batch keys of a run's params: a record gives the batch once, at its top level.
_BATCH_PARAMS = ("batch_size", "global_batch_size", "per_replica_batch_size")


def recorded_params(params) -> dict:
    """A record's `model.params`: PARAMS less the batch (`global_batch_size` and
    `per_replica_batch_size` are the record's own fields; an infer sweep's params
    are those of its first batch size, so they could not say every record's)."""
    return {k: v for k, v in params.items() if k not in _BATCH_PARAMS}


def plain(d):
    """D with every value JSON-able (tuples as lists, other objects as str)."""
    if isinstance(d, dict):
        return {k: plain(v) for k, v in d.items()}
    if isinstance(d, (list, tuple)):
        return [plain(v) for v in d]
    if isinstance(d, (str, int, float, bool)) or d is None:
        return d
    return str(d)
