"""What `tpubench tune` searches: the settings that change speed but not the model.

Pure Python.  `Host` holds the facts that decide which values are worth a
trial (the CPU's bf16 paths, the GPUs' tensor cores, the core count, a
ZenDNN plug-in in this environment);
`axes` turns them, the model's traits and the user's fixed flags into the
ordered axes of the search, and says why every value left out was left out.
"""

from __future__ import annotations

import dataclasses

from tpubench.core.precision import Precision

AXES = (
    "batch_size",
    "steps_per_loop",
    "precision",
    "cpu_kernels",
    "xla",
    "data_format",
    "threads",
)
# The train flags an axis sets: given on the command line, the axis is fixed.
AXIS_FLAGS = {
    "batch_size": ("batch_size",),
    "precision": ("precision",),
    "cpu_kernels": ("cpu_kernels",),
    "xla": ("xla",),
    "data_format": ("data_format",),
    "threads": ("num_intra_threads", "num_inter_threads"),
    "steps_per_loop": ("steps_per_loop",),
}
# Tensor cores: fp16 from Volta (7.0), bf16 from Ampere (8.0).
FP16_TENSOR_CORES = 7.0
BF16_TENSOR_CORES = 8.0
CPU_BF16_ISA = ("amx_bf16", "avx512_bf16")
CPU_FP16_ISA = ("amx_fp16",)
KERNEL_NAMES = {"auto": "TF's kernels", "onednn": "oneDNN", "zendnn": "ZenDNN"}


@dataclasses.dataclass(frozen=True)
class Host:
    """The facts of the machine the trials run on (hardware/probe.py and nvidia-smi)."""

    accelerator: str  # cpu, gpu or tpu
    cores: int
    isa: tuple[str, ...] = ()
    gpus: tuple[tuple[str, float | None], ...] = ()  # (name, compute capability)
    # Why this CPU's TensorFlow cannot run channels-first ops ("" where it can).
    no_nchw: str = ""
    # The ZenDNN plug-in's version where this environment has one ("" where not); out of
    # the repr that names a tune (api.tune_id adds it where set), so earlier tunes resume.
    zentf: str = dataclasses.field(default="", repr=False)

    def describe(self) -> str:
        if self.accelerator == "gpu" and self.gpus:
            name, cc = self.gpus[0]
            return f"{len(self.gpus)}x {name} (compute capability {cc})"
        if self.accelerator == "tpu":
            return "TPU"
        bf16 = [f for f in CPU_BF16_ISA if f in self.isa]
        zendnn = f"; ZenDNN plug-in zentf {self.zentf}" if self.zentf else ""
        return f"CPU, {self.cores} core(s); bf16 paths: {', '.join(bf16) or 'none'}{zendnn}"


@dataclasses.dataclass(frozen=True)
class Setting:
    """One point of the space; None means train's default for that flag."""

    batch_size: int | None = None
    precision: Precision = Precision.FP32
    xla: bool = False
    data_format: str = "auto"
    intra: int = 0
    inter: int = 0
    steps_per_loop: int = 1
    cpu_kernels: str = "auto"  # hardware/cpu_kernels.py: auto | onednn | zendnn

    def flags(self) -> dict:
        """The train flags this setting passes (defaults left out)."""
        out: dict = {}
        if self.batch_size is not None:
            out["batch_size"] = self.batch_size
        out["precision"] = self.precision
        out["xla"] = self.xla
        out["data_format"] = self.data_format
        if self.intra:
            out["num_intra_threads"] = self.intra
        if self.inter:
            out["num_inter_threads"] = self.inter
        out["steps_per_loop"] = self.steps_per_loop
        if self.cpu_kernels != "auto":
            out["cpu_kernels"] = self.cpu_kernels
        return out

    def with_axis(self, axis: str, value) -> Setting:
        if axis == "threads":
            return dataclasses.replace(self, intra=value[0], inter=value[1])
        return dataclasses.replace(self, **{axis: value})

    def describe(self, default: Setting, batch_default: int | None) -> str:
        """What differs from DEFAULT, e.g. 'batch 256, bf16, xla'; 'defaults' if nothing."""
        parts = []
        if self.batch_size != default.batch_size:
            parts.append(f"batch {self.batch_size}")
        if self.precision != default.precision:
            parts.append(self.precision)
        if self.xla != default.xla:
            parts.append("xla" if self.xla else "no xla")
        if self.data_format != default.data_format:
            parts.append({"channels_first": "NCHW", "channels_last": "NHWC"}[self.data_format])
        if (self.intra, self.inter) != (default.intra, default.inter):
            parts.append(f"threads {self.intra or 'tf'}/{self.inter or 'tf'}")
        if self.steps_per_loop != default.steps_per_loop:
            parts.append(f"{self.steps_per_loop} steps/loop")
        if self.cpu_kernels != default.cpu_kernels:
            parts.append(KERNEL_NAMES[self.cpu_kernels])
        return ", ".join(parts) or "defaults"


@dataclasses.dataclass(frozen=True)
class Axis:
    name: str
    values: tuple  # in the order tried; the default's value first
    once: tuple = ()  # values tried in one short trial, never carried on (no fast path here)


@dataclasses.dataclass(frozen=True)
class Space:
    default: Setting
    axes: tuple[Axis, ...]
    skipped: tuple[tuple[str, str], ...]  # (what, why)
    notes: tuple[str, ...] = ()


def build(
    host: Host,
    default: Setting,
    search: tuple[str, ...],
    fixed: frozenset[str],
    batch_sizes: tuple[int, ...],
    channels_first: bool,
    trial_steps: int,
) -> Space:
    """The axes to search, in order, and every value left out with its reason.

    Args:
      host: the machine's facts.
      default: the plain-defaults setting (train's defaults and the user's flags).
      search: the axes asked for (--search).
      fixed: train flags the user set, which fix their axes.
      batch_sizes: the batch sizes to try (ascending; the default's included).
      channels_first: whether the model can be built NCHW.
      trial_steps: steps of a short trial (steps_per_loop values must fit it).
    """
    axes, skipped, notes = [], [], []
    for name in AXES:
        if name not in search:
            continue
        given = [f for f in AXIS_FLAGS[name] if f in fixed]
        if given:
            skipped.append((name, f"fixed by --{given[0]} on the command line"))
            continue
        axis = _AXIS[name](host, default, batch_sizes, channels_first, trial_steps, skipped)
        # The batch axis is filled in once the defaults ran (their batch is the model's).
        if axis is not None and (len(axis.values) > 1 or name == "batch_size"):
            axes.append(axis)
    return Space(default, tuple(axes), tuple(skipped), tuple(notes))


def _batch(host, default, batch_sizes, channels_first, steps, skipped):
    return Axis("batch_size", tuple(batch_sizes))


def _precision(host, default, batch_sizes, channels_first, steps, skipped):
    values, once = [Precision.FP32], []
    if host.accelerator == "tpu":
        values.append(Precision.BF16)
        skipped.append(("precision=fp16", "TPUs have no fp16 path (bf16 is their native type)"))
    elif host.accelerator == "gpu":
        cc = min((c for _, c in host.gpus if c is not None), default=None)
        if cc is not None and cc >= BF16_TENSOR_CORES:
            values.append(Precision.BF16)
        else:
            skipped.append(("precision=bf16", f"no bf16 tensor cores (compute capability {cc})"))
        if cc is not None and cc >= FP16_TENSOR_CORES:
            values.append(Precision.FP16)
        else:
            skipped.append(("precision=fp16", f"no tensor cores (compute capability {cc})"))
    else:
        if any(f in host.isa for f in CPU_BF16_ISA):
            values.append(Precision.BF16)
        else:
            values.append(Precision.BF16)
            once.append(Precision.BF16)
            skipped.append(
                ("precision=bf16 after one short trial", "no AMX or AVX512-BF16: bf16 is emulated")
            )
        if any(f in host.isa for f in CPU_FP16_ISA):
            values.append(Precision.FP16)
        else:
            skipped.append(("precision=fp16", "no AMX-FP16: CPUs have no fast fp16 path"))
    return Axis("precision", tuple(values), tuple(once))


def _cpu_kernels(host, default, batch_sizes, channels_first, steps, skipped):
    if host.accelerator != "cpu":
        skipped.append(("cpu_kernels", "the CPU kernels matter on CPU runs only"))
        return None
    if not host.zentf:
        skipped.append(
            (
                "cpu_kernels=zendnn",
                "AMD's ZenDNN plug-in (zentf) is not installed in this environment (make zendnn)",
            )
        )
        return None
    other = "zendnn" if default.cpu_kernels != "zendnn" else "auto"
    return Axis("cpu_kernels", (default.cpu_kernels, other))


def _xla(host, default, batch_sizes, channels_first, steps, skipped):
    if host.accelerator == "tpu":
        skipped.append(("xla", "TPUs always compile with XLA"))
        return None
    return Axis("xla", (False, True))


def _data_format(host, default, batch_sizes, channels_first, steps, skipped):
    if not channels_first:
        skipped.append(("data_format", "the model is channels-last only"))
        return None
    if host.accelerator == "tpu":
        skipped.append(("data_format", "XLA on TPU chooses the layout itself"))
        return None
    if host.accelerator == "cpu" and host.no_nchw:
        skipped.append(("data_format", f"this CPU runs NHWC only ({host.no_nchw})"))
        return None
    if host.accelerator == "cpu":  # auto is channels_last on a CPU
        skipped.append(
            ("data_format=channels_first after one short trial", "CPU kernels are NHWC (oneDNN)")
        )
        return Axis("data_format", ("auto", "channels_first"), ("channels_first",))
    return Axis("data_format", ("auto", "channels_last", "channels_first"))


def _threads(host, default, batch_sizes, channels_first, steps, skipped):
    if host.accelerator != "cpu":
        skipped.append(("threads", "the thread pools matter on CPU runs only"))
        return None
    intra = sorted({n for n in (1, 2, 4, 8, 16, 32, 64) if n < host.cores} | {host.cores})
    inter = sorted({1, 2} & set(range(1, host.cores + 1)) or {1})
    values = [(0, 0)] + [(a, b) for a in intra for b in inter]
    return Axis("threads", tuple(values))


def _steps_per_loop(host, default, batch_sizes, channels_first, steps, skipped):
    # At least 5 loops in a short trial: one warms up, the rest are timed.
    values = [v for v in (1, 10, 50, 100) if v == 1 or steps // v >= 5]
    if len(values) < 4:
        cut = [str(v) for v in (10, 50, 100) if v not in values]
        skipped.append(
            (f"steps_per_loop={','.join(cut)}", f"fewer than 5 loops in a {steps}-step trial")
        )
    return Axis("steps_per_loop", tuple(values))


_AXIS = {
    "batch_size": _batch,
    "precision": _precision,
    "cpu_kernels": _cpu_kernels,
    "xla": _xla,
    "data_format": _data_format,
    "threads": _threads,
    "steps_per_loop": _steps_per_loop,
}


def batch_sizes_for(default_batch: int, host: Host) -> tuple[int, ...]:
    """The default batch and its doublings: up to 4x on CPU, 8x on accelerators."""
    top = 4 if host.accelerator == "cpu" else 8
    return tuple(default_batch * m for m in (1, 2, 4, 8) if m <= top)
