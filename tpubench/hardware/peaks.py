"""Peak FLOP/s: accelerator datasheets per precision, and measured matmul probes.

MFU is only as true as its peak.  Datasheet rows name the math mode (an H100's
"fp32" matmuls run on TF32 tensor cores at 494.7 TFLOP/s dense; plain fp32 is
66.9) and give dense, never sparse, figures.  CPU peaks are measured: matmul
probes per precision (one n^3 product, and a batch of eight (n/2)^3 ones
in one op; the faster kept), several trials; the cache keeps the highest quiet probe,
and a probe taken while other processes hold the CPU never replaces it.  A GPU probe measures what
the card reaches beside its datasheet figure.

The cache is `$TPUBENCH_CACHE/cpu_peaks_v2.json` (default
~/.cache/tpubench/cpu_peaks_v2.json); `tpubench peak --reprobe` refreshes it.
Version 1 (`cpu_peaks.json`, one 2048^3 product summed whole) understated
AMX's bf16 peak by 20-25% and is no longer read.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import time

from tpubench.core.precision import Precision
from tpubench.hardware import matmul_probe
from tpubench.storage import cache as cache_lib

CACHE_FILE = "cpu_peaks_v2.json"
DATASHEET_AS_OF = "2026-11-23"  # when the rows were transcribed (docs/cost.md)


@dataclasses.dataclass(frozen=True)
class Sheet:
    """One datasheet row: dense TFLOP/s of one accelerator at one precision."""

    tflops: float
    math: str
    source: str


_NV = "NVIDIA {} datasheet"
# Dense TFLOP/s per chip/GPU.  "fp32" is what an fp32 run's matmuls use under
# TensorFlow's defaults: TF32 tensor cores on Ampere and later (TF32 is on by
# default), plain FP32 before.  "fp32_plain" is the CUDA-core rate.
DATASHEET: dict[str, dict[Precision | str, Sheet]] = {
    "h100-sxm": {
        Precision.FP32: Sheet(494.7, "TF32 tensor cores, dense", _NV.format("H100 SXM")),
        "fp32_plain": Sheet(66.9, "FP32 CUDA cores", _NV.format("H100 SXM")),
        Precision.BF16: Sheet(989.4, "BF16 tensor cores, dense", _NV.format("H100 SXM")),
        Precision.FP16: Sheet(989.4, "FP16 tensor cores, dense", _NV.format("H100 SXM")),
        "fp8": Sheet(1978.9, "FP8 tensor cores, dense", _NV.format("H100 SXM")),
    },
    "h100-pcie": {
        Precision.FP32: Sheet(378.0, "TF32 tensor cores, dense", _NV.format("H100 PCIe")),
        "fp32_plain": Sheet(51.2, "FP32 CUDA cores", _NV.format("H100 PCIe")),
        Precision.BF16: Sheet(756.5, "BF16 tensor cores, dense", _NV.format("H100 PCIe")),
        Precision.FP16: Sheet(756.5, "FP16 tensor cores, dense", _NV.format("H100 PCIe")),
        "fp8": Sheet(1513.0, "FP8 tensor cores, dense", _NV.format("H100 PCIe")),
    },
    "a100": {
        Precision.FP32: Sheet(156.0, "TF32 tensor cores, dense", _NV.format("A100")),
        "fp32_plain": Sheet(19.5, "FP32 CUDA cores", _NV.format("A100")),
        Precision.BF16: Sheet(312.0, "BF16 tensor cores, dense", _NV.format("A100")),
        Precision.FP16: Sheet(312.0, "FP16 tensor cores, dense", _NV.format("A100")),
    },
    "l4": {
        Precision.FP32: Sheet(60.0, "TF32 tensor cores, dense (120 sparse)", _NV.format("L4")),
        "fp32_plain": Sheet(30.3, "FP32 CUDA cores", _NV.format("L4")),
        Precision.BF16: Sheet(121.0, "BF16 tensor cores, dense (242 sparse)", _NV.format("L4")),
        Precision.FP16: Sheet(121.0, "FP16 tensor cores, dense (242 sparse)", _NV.format("L4")),
        "fp8": Sheet(242.0, "FP8 tensor cores, dense (485 sparse)", _NV.format("L4")),
    },
    "a10g": {
        Precision.FP32: Sheet(62.5, "TF32 tensor cores, dense (A10 figure)", _NV.format("A10")),
        "fp32_plain": Sheet(31.2, "FP32 CUDA cores (A10 figure)", _NV.format("A10")),
        Precision.BF16: Sheet(125.0, "BF16 tensor cores, dense (A10 figure)", _NV.format("A10")),
        Precision.FP16: Sheet(125.0, "FP16 tensor cores, dense (A10 figure)", _NV.format("A10")),
    },
    "v100": {
        Precision.FP32: Sheet(
            15.7, "FP32 CUDA cores (no TF32 before Ampere)", _NV.format("V100 SXM2")
        ),
        Precision.FP16: Sheet(125.0, "FP16 tensor cores", _NV.format("V100 SXM2")),
    },
    "t4": {
        Precision.FP32: Sheet(8.1, "FP32 CUDA cores", _NV.format("T4")),
        Precision.FP16: Sheet(65.0, "FP16 tensor cores", _NV.format("T4")),
    },
    "p100": {
        Precision.FP32: Sheet(9.3, "FP32 (PCIe card)", _NV.format("P100 PCIe")),
        Precision.FP16: Sheet(18.7, "FP16 (PCIe card; no tensor cores)", _NV.format("P100 PCIe")),
    },
    "k80": {
        Precision.FP32: Sheet(4.37, "FP32, one GK210 (half a K80 board), boost", _NV.format("K80"))
    },
}
_TPU = {"tpu-v2": 45.0, "tpu-v3": 123.0, "tpu-v4": 275.0, "tpu-v5e": 197.0, "tpu-v5p": 459.0,
        "tpu-v6e": 918.0}  # fmt: skip
for _name, _bf16 in _TPU.items():
    _src = f"Google Cloud TPU {_name.removeprefix('tpu-')} system architecture page"
    DATASHEET[_name] = {
        Precision.BF16: Sheet(_bf16, "BF16 MXU, per chip", _src),
        Precision.FP32: Sheet(_bf16, "fp32 inputs in one bf16 MXU pass (the TPU default)", _src),
    }
DATASHEET["h200"] = DATASHEET["h100-sxm"]  # same Hopper compute; more memory


def accelerator_key(device_name: str) -> str | None:
    """'NVIDIA H100 80GB HBM3' -> 'h100-sxm', 'NVIDIA H100 PCIe' -> 'h100-pcie', 'TPU v4' ->
    'tpu-v4'; None for a device the table does not know."""
    from tpubench.cost import detect

    name = device_name.lower()
    if "tpu" in name:
        return detect.accelerator_id("tpu", name)
    ident = detect.accelerator_id("gpu", name)
    if ident == "h100":
        return "h100-pcie" if "pcie" in name else "h100-sxm"
    if ident in ("a100-40gb", "a100-80gb"):
        return "a100"
    return ident


def datasheet(key: str, precision: Precision) -> Sheet | None:
    """The row an MFU at `precision` is measured against (FP32 = TF's default math)."""
    return DATASHEET.get(key, {}).get(precision)


# --------------------------------------------------------------------- CPU


def cpu_precisions(isa: list[str]) -> list[Precision]:
    """Precisions this CPU computes natively: fp32; bf16 with AMX or AVX512-BF16; fp16 with
    AMX-FP16 or AVX512-FP16."""
    out = [Precision.FP32]
    if {"amx_bf16", "avx512_bf16"} & set(isa):
        out.append(Precision.BF16)
    if {"amx_fp16", "avx512_fp16"} & set(isa):
        out.append(Precision.FP16)
    return out


def consistent(peaks_by_threads: dict[int, float]) -> bool:
    """True when a peak never falls as threads rise (5% measurement slack)."""
    ordered = [peaks_by_threads[t] for t in sorted(peaks_by_threads)]
    return all(b >= 0.95 * a for a, b in itertools.pairwise(ordered))


def _key(cpu_model: str, threads: int, precision: Precision, tf_version: str, n: int) -> str:
    raw = f"{cpu_model}|{threads}|{precision}|{tf_version}|{n}"
    return hashlib.sha1(raw.encode()).hexdigest()[:16]


class _BusyMeter:
    """Other processes' CPU use since it was made (also while this process probes)."""

    def __init__(self):
        import psutil

        self._me = psutil.Process()
        self._me.cpu_percent(None)
        psutil.cpu_percent(None)

    def others(self) -> float:
        import psutil

        total = psutil.cpu_percent(None)
        mine = self._me.cpu_percent(None) / (psutil.cpu_count() or 1)
        return max(total - mine, 0.0)


def busy_percent(interval: float = 0.5, since: _BusyMeter | None = None) -> float:
    """System CPU use by other processes, in percent of all cores: over the next
    `interval` seconds, or since the meter SINCE was made (a probe's duration)."""
    meter = since or _BusyMeter()
    if since is None:
        time.sleep(interval)
    return meter.others()


def cpu_peak(
    cpu_model: str,
    threads: int,
    precision: Precision = Precision.FP32,
    *,
    reprobe: bool = False,
    n: int = 2048,
    trials: int = 5,
    busy_limit: float = 25.0,
) -> dict:
    """A CPU's matmul peak at `threads` intra-op threads and `precision`, cached.

    The cache keeps quiet probes (other processes used at most BUSY_LIMIT % of
    the CPU before and during the probe), and of those the highest: a peak is
    the best the machine reached.  A busy probe never replaces or lowers a
    quiet one.  Measured afresh only when nothing is cached, when `reprobe`,
    when the cached entry was itself busy, or when the cached peaks of this
    CPU fall as threads rise; and in the last three cases only on a quiet
    machine (a busy one gets the cached entry, with a note, at once).

    Returns:
      {"flops", "method", "threads", "precision", "cached", "trials", "spread",
      "busy_percent", "kind", "note"}: KIND is "cached quiet probe", "quiet
      probe" (measured now), "busy probe" or "cached busy probe"; NOTE says
      why a probe was not taken or not kept ("" when nothing to say).
    """
    import tensorflow as tf

    cache = cache_lib.load_entries(CACHE_FILE, _ENTRY, _ENTRY_OPTIONAL)
    key = _key(cpu_model, threads, precision, tf.__version__, n)
    same = {
        e["threads"]: e["flops"]
        for e in cache.values()
        if e.get("cpu_model") == cpu_model and e.get("precision") == precision
    }
    cached = cache.get(key)
    quiet_cached = cached is not None and cached.get("quiet", True)
    if cached is not None and not reprobe and quiet_cached and consistent(same):
        return _as(cached, True, "")
    busy = busy_percent()
    if cached is not None and busy > busy_limit:
        why = _not_probed(cached, reprobe, consistent(same), busy)
        return _as(cached, True, why)
    meter = _BusyMeter()
    entry = matmul_probe.cpu(tf, n, trials, precision)
    busy = max(busy, busy_percent(since=meter))
    entry |= {
        "cpu_model": cpu_model,
        "threads": threads,
        "precision": precision,
        "busy_percent": round(busy, 1),
        "measured": time.strftime("%Y-%m-%d"),
        "quiet": busy <= busy_limit,
    }
    if not entry["quiet"]:
        if quiet_cached:
            return _as(cached, True, f"a probe now was busy ({busy:.0f}% CPU used by others)")
        # Cached until a quiet probe replaces it, so a busy box does not re-probe every run.
        cache[key] = entry
        cache_lib.store_json(CACHE_FILE, cache)
        return _as(entry, False, "")
    if quiet_cached and entry["flops"] < cached["flops"]:
        return _as(
            cached,
            True,
            f"a quiet probe now reached {entry['flops'] / 1e9:,.1f} GFLOP/s, lower: "
            "kept the cached peak (the cache keeps the highest quiet probe)",
        )
    # Entries at more threads that fall below this one were the busy ones.
    cache = {
        k: e
        for k, e in cache.items()
        if not (
            e.get("cpu_model") == cpu_model
            and e.get("precision") == precision
            and e.get("threads", 0) > threads
            and e.get("flops", 0) < 0.95 * entry["flops"]
        )
    }
    cache[key] = entry
    cache_lib.store_json(CACHE_FILE, cache)
    return _as(entry, False, "")


# A cached probe's shape (anything else in the file is dropped and measured again).
_ENTRY = {"flops": cache_lib.NUMBER, "method": cache_lib.TEXT}
_ENTRY_OPTIONAL = {
    "cpu_model": cache_lib.TEXT,
    "precision": cache_lib.TEXT,
    "threads": cache_lib.COUNT,
    "trials": cache_lib.COUNT,
    "spread": cache_lib.NUMBER,
    "busy_percent": cache_lib.NUMBER,
    "quiet": cache_lib.FLAG,
    "measured": cache_lib.TEXT,
}


def _as(entry: dict, cached: bool, note: str) -> dict:
    quiet = entry.get("quiet", True)
    kind = ("cached " if cached else "") + ("quiet probe" if quiet else "busy probe")
    out = entry | {"cached": cached, "kind": kind, "note": note}
    if not quiet:
        out["method"] += f"; machine busy: {entry.get('busy_percent', 0):.0f}% CPU used by others"
    return out


def _not_probed(cached: dict, reprobe: bool, consistent_now: bool, busy: float) -> str:
    """Why a cached entry was used on a busy machine instead of a fresh probe."""
    busy_text = f"not re-measured: machine busy ({busy:.0f}% CPU used by others)"
    later = " - run `tpubench peak --reprobe` on a quiet machine"
    if not cached.get("quiet", True):
        return f"{busy_text}; the cached peak was measured busy too{later}"
    if not consistent_now:
        return f"{busy_text}; the cached peaks of this CPU fall as threads rise{later}"
    if reprobe:
        return f"{busy_text}; kept the cached quiet peak of {cached.get('measured', '?')}"
    return ""
