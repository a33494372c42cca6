"""FLOPs, peak and MFU sections of run records, and the process's peak memory."""

from __future__ import annotations

import dataclasses
import resource
from typing import Any

from tpubench.core.precision import Precision


@dataclasses.dataclass(frozen=True)
class Efficiency:
    """FLOPs counted from the model's graph and the peak of what it ran on.

    `reprobe` (None, or a callable returning a fresh peak dict) is tried once
    when an MFU would pass 100% against a measured CPU peak: an MFU above
    100% is never a figure (`mfu.judged`).
    """

    counted: dict  # model_info.flops(...) or {"note": why not}
    peak: dict  # mfu.hardware_peak(...)
    reprobe: Any = None

    def train_section(self, examples_per_sec: float | None) -> dict:
        """The record's `mfu` section for training (forward + backward FLOPs)."""
        from tpubench.hardware import mfu

        if "train_flops_per_example" not in self.counted:
            return dict(self.counted)
        out = dict(self.counted)
        out.update(
            mfu.judged(out["train_flops_per_example"], examples_per_sec, self.peak, self.reprobe)
        )
        return out

    def infer_section(self, examples_per_sec: float | None) -> dict:
        """The record's `mfu` section for inference (forward FLOPs only)."""
        from tpubench.hardware import mfu

        out = dict(self.counted)
        out.update(
            mfu.judged(
                out.get("forward_flops_per_example"), examples_per_sec, self.peak, self.reprobe
            )
        )
        out["flops_counted"] = "forward pass only (inference)"
        return out


def measure(spec, params: dict, placement, hw_view, unfitted: dict | None = None) -> Efficiency:
    """Counts SPEC's FLOPs and finds the peak; HW_VIEW has precision, threads and machines.

    UNFITTED ({param: value before fitting to the data}) adds `fitted_params`
    and `parameters_unfitted`: why the count differs from `tpubench models`.
    """
    from tpubench.hardware import mfu
    from tpubench.model import model_info

    try:
        counted = model_info.flops(spec, dict(params))
        if unfitted and "parameters" in counted:
            counted["fitted_params"] = {k: f"{v} -> {params[k]}" for k, v in unfitted.items()}
            counted["parameters_unfitted"] = model_info.parameters(spec, dict(params) | unfitted)
    except Exception as e:  # noqa: BLE001 - FLOP counting must not fail a finished run
        counted = {"note": f"FLOPs could not be counted: {type(e).__name__}"}
    if "note" in counted and hw_view.skip_peak_without_flops:
        return Efficiency(counted, {})

    def peak(reprobe=False):
        return mfu.hardware_peak(
            placement,
            hw_view.precision,
            hw_view.threads,
            hw_view.machines,
            peak_flops_override=hw_view.peak_flops,
            reprobe=reprobe,
        )

    return Efficiency(counted, peak(), reprobe=lambda: peak(True))


@dataclasses.dataclass(frozen=True)
class PeakView:
    """What the peak depends on, taken from a run's config."""

    precision: Precision
    threads: int
    machines: tuple
    skip_peak_without_flops: bool = False  # train's record has only the note then
    peak_flops: float | None = None  # --peak_flops

    @classmethod
    def of(cls, cfg, train: bool) -> PeakView:
        return cls(
            cfg.precision,
            cfg.hardware.num_intra_threads,
            tuple(cfg.cost.machine),
            train,
            cfg.cost.peak_flops,
        )


def recurrent(runner, accelerator: str) -> dict | None:
    """The record's `recurrent`: which RNN implementation the traced step used (None: no
    recurrent layers)."""
    from tpubench.model import recurrent as recurrent_lib

    try:
        ops = runner.traced_op_types()
    except Exception:  # noqa: BLE001 - inspection must not fail a finished run
        ops = None
    return recurrent_lib.describe(runner.model, ops, accelerator)


def peak_rss_gib() -> float:
    """The process's peak resident memory so far, GiB."""

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3)
