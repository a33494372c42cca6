"""Model FLOPs utilisation: FLOPs per example x examples/sec over peak.

FLOPs come from the model's own step graph (tpubench.model.flops); peaks
from a table of published accelerator figures, or, for CPUs, from a
measured matmul probe cached per machine (an achievable peak, not a
datasheet one: say so when reporting).
"""

from __future__ import annotations

import os

from tpubench.core.precision import Precision


def accelerator_key(device_name: str) -> str | None:
    """Maps a device description ('Tesla V100-SXM2-16GB', 'TPU v4') to a datasheet key."""
    from tpubench.hardware import peaks

    return peaks.accelerator_key(device_name)


def peak_flops(key: str, precision: Precision) -> float | None:
    """Datasheet FLOP/s of `key` at `precision` (dense, TF's default math), None if unknown."""
    from tpubench.hardware import peaks

    sheet = peaks.datasheet(key, precision)
    return sheet.tflops * 1e12 if sheet else None


def hardware_peak(
    placement,
    precision: Precision,
    num_intra_threads: int,
    machines=(),
    *,
    peak_flops_override: float | None = None,
    reprobe: bool = False,
) -> dict:
    """{"peak_flops", "peak_source", ...} for what a strategy runs on.

    A CPU peak names which probe it is (`peak_kind`: a cached quiet probe, a
    quiet probe measured now, or a busy one, whose MFU is overstated) in
    `peak_source` too, with the probe's date when it came from the cache.

    `--peak_flops` wins.  CPUs: the measured matmul probe at the run's thread
    count and precision (fp32's when the CPU has no native bf16/fp16).
    GPUs/TPUs: the datasheet row of the probed device or a `--machine` part at
    `precision`, with its math mode, times the replicas; on a GPU also the
    measured matmul peak ("peak_flops_measured").
    """

    from tpubench.hardware import matmul_probe, peaks, probe

    if peak_flops_override:
        return {"peak_flops": peak_flops_override, "peak_source": "--peak_flops (given)"}
    if placement.accelerator == "cpu":
        cpu = probe.cpu()
        threads = num_intra_threads or len(os.sched_getaffinity(0))
        native = peaks.cpu_precisions(cpu.get("isa", []))
        which = precision if precision in native else Precision.FP32
        peak = peaks.cpu_peak(cpu["model"], threads, which, reprobe=reprobe)
        emulated = "" if which == precision else f"; no native {precision} on this CPU"
        kind = peak.get("kind", "quiet probe")
        when = f" of {peak['measured']}" if peak.get("cached") and peak.get("measured") else ""
        out = {
            "peak_flops": peak["flops"],
            "peak_source": f"measured: {peak['method']}; {kind}{when}; "
            f"{_threads(threads)}{emulated}",
            "peak_precision": which,
            "peak_kind": kind,
            "peak_busy_percent": peak.get("busy_percent"),
        }
        if peak.get("note"):
            out["peak_note"] = peak["note"]
        return out
    names = [a["name"] for a in probe.accelerators(placement)] + list(machines)
    key = next((k for k in map(accelerator_key, names) if k), None)
    sheet = peaks.datasheet(key, precision) if key else None
    out = {
        "peak_flops": sheet.tflops * 1e12 * placement.num_replicas if sheet else None,
        "peak_source": f"datasheet: {key} {precision}, {sheet.math} ({sheet.source})"
        if sheet
        else (f"datasheet: {key} has no {precision} row" if key else "unknown accelerator"),
    }
    if placement.accelerator == "gpu":
        try:
            measured = matmul_probe.gpu(precision)
        except Exception as e:  # noqa: BLE001 - a probe must not fail a finished run
            measured = None
            out["peak_measured_note"] = f"GPU probe failed: {type(e).__name__}"
        if measured:
            out["peak_flops_measured"] = measured["flops"] * placement.num_replicas
            out["peak_measured_source"] = f"measured: {measured['method']}"
    return out


def mfu(
    train_flops_per_example: float | None, examples_per_sec: float | None, peak: float | None
) -> float | None:
    if not (train_flops_per_example and examples_per_sec and peak):
        return None
    return train_flops_per_example * examples_per_sec / peak


def judged(flops_per_example, examples_per_sec, peak: dict, reprobe=None) -> dict:
    """MFU against the peak (and the measured GPU peak), refusing a figure above 100%.

    Args:
      flops_per_example: FLOPs one example costs (train step or forward pass).
      examples_per_sec: the measured rate.
      peak: `hardware_peak`'s dict.
      reprobe: a callable returning a fresh `hardware_peak` dict, tried once
        when the MFU would pass 100% against a measured CPU peak.

    Returns:
      {"mfu": fraction or None, "mfu_measured_peak": ..., "mfu_note": why None}
      plus the peak fields (updated when re-probed).  An MFU above 100% is
      never returned as a figure: the peak is wrong, and the note says how to
      fix it.
    """
    out = dict(peak)
    value = mfu(flops_per_example, examples_per_sec, out.get("peak_flops"))
    if value is not None and value > 1 and reprobe and out["peak_source"].startswith("measured"):
        out.update(reprobe())
        out["peak_reprobed"] = True
        value = mfu(flops_per_example, examples_per_sec, out.get("peak_flops"))
    if value is not None and value > 1:
        out["mfu"] = None
        out["mfu_over_100"] = value
        out["mfu_note"] = (
            f"not shown: {100 * value:.1f}% would exceed 100%, so the peak "
            f"({out['peak_flops'] / 1e9:,.1f} GFLOP/s, {out['peak_source']}) is wrong; run "
            "`tpubench peak --reprobe` on a quiet machine or pass --peak_flops=FLOP/s"
        )
    else:
        out["mfu"] = value
    if out.get("peak_kind", "").endswith("busy probe") and out["mfu"] is not None:
        # A busy probe's peak is low, so an MFU against it is high.
        out["mfu_peak_warning"] = (
            f"the peak was measured on a busy machine ({out.get('peak_busy_percent')}% CPU used "
            "by others), so it is low and this MFU overstated; run `tpubench peak --reprobe` on "
            "a quiet machine (later runs use it) or pass --peak_flops=FLOP/s"
        )
    measured = out.get("peak_flops_measured")
    if measured:
        m = mfu(flops_per_example, examples_per_sec, measured)
        out["mfu_measured_peak"] = m if m is not None and m <= 1 else None
    return out


def _threads(n: int) -> str:
    return f"{n} thread" + ("" if n == 1 else "s")
