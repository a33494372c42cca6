"""What the run ran on: CPU, memory, accelerators, software versions."""

from __future__ import annotations

import copy
import functools
import os
import platform
import shutil
import subprocess
import sys

from tpubench.hardware import amx, cpu_kernels

ISA_FLAGS = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "avx512f",
    "avx512_vnni",
    "avx512_bf16",
    "amx_bf16",
    "amx_tile",
    "amx_fp16",
    "neon",
    "asimd",
)


def cpu() -> dict:
    """The host CPU (a fresh copy each call; probed once per process)."""
    return copy.deepcopy(_cpu())


# platform.machine() -> the architecture names py-cpuinfo gives (older records use them).
_ARCH = {"x86_64": "X86_64", "amd64": "X86_64", "i386": "X86_32", "i686": "X86_32"}
_ARCH.update({"aarch64": "ARM_8", "arm64": "ARM_8", "armv7l": "ARM_7"})


def _proc_cpuinfo(path: str = "/proc/cpuinfo") -> tuple[str, set[str]] | None:
    """(brand, ISA flags) from Linux's /proc/cpuinfo, or None where it says too little.

    A file read takes microseconds; py-cpuinfo starts a helper process and
    takes over a second, which every `tpubench train` paid at start-up.
    x86 names the CPU in `model name` and its flags in `flags`; Arm puts
    them in `Features` and names the CPU only sometimes (then py-cpuinfo,
    which asks lscpu and the device tree, is used).
    """
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip().lower(), value.strip())
    brand = fields.get("model name")
    flags = fields.get("flags") or fields.get("features")
    if not brand or flags is None:
        return None
    return brand, set(flags.split())


@functools.cache  # py-cpuinfo, where it is needed, takes over a second per call
def _cpu() -> dict:
    import psutil

    found = _proc_cpuinfo() if sys.platform.startswith("linux") else None
    if found:
        brand, flags = found
        arch = _ARCH.get(platform.machine().lower(), platform.machine().upper())
    else:
        import cpuinfo

        info = cpuinfo.get_cpu_info()
        brand, flags = info.get("brand_raw"), set(info.get("flags", []))
        arch = info.get("arch", platform.machine())
    found_cpu = {
        "model": brand or platform.processor() or "unknown",
        "arch": arch,
        "logical_cores": psutil.cpu_count(logical=True),
        "physical_cores": psutil.cpu_count(logical=False),
        "affinity_cores": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else None,
        "isa": sorted(f for f in ISA_FLAGS if f in flags),
        "amx": amx.state(flags),  # the kernel's permission, not only the cpuinfo flag
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 2),
    }
    found_cpu["bf16_path"] = amx.bf16_path(found_cpu)
    return found_cpu


def _nvidia_driver() -> str | None:
    if not shutil.which("nvidia-smi"):
        return None
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        return out.stdout.strip().splitlines()[0] if out.stdout.strip() else None
    except (OSError, subprocess.SubprocessError):
        return None


def gpus() -> list[tuple[str, float | None]]:
    """(name, compute capability) of each NVIDIA GPU, from nvidia-smi: no TensorFlow, no
    CUDA context (a parent that starts none leaves all GPU memory to its children)."""
    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,compute_cap", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    found = []
    for line in out.stdout.strip().splitlines() if out.returncode == 0 else []:
        name, _, cc = line.rpartition(",")
        try:
            found.append((name.strip(), float(cc)))
        except ValueError:
            found.append((line.strip(), None))
    return found


def software() -> dict:
    import keras
    import tensorflow as tf

    import tpubench

    build = tf.sysconfig.get_build_info()
    return {
        "python": sys.version.split()[0],
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "tpubench": tpubench.__version__,
        "git_commit": git_commit(),
        "cuda": build.get("cuda_version"),
        "cudnn": build.get("cudnn_version"),
        "onednn": onednn(),
        "cpu_kernels": cpu_kernels.recorded(),
        "cudnn_batchnorm_persistent": os.environ.get("TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT"),
        "nvidia_driver": _nvidia_driver(),
        "platform": platform.platform(),
    }


def onednn() -> str:
    """Whether TensorFlow's oneDNN kernels are on in this process, and why.

    TensorFlow turns them on by default only on x86 CPUs with AVX-512 VNNI,
    AVX-512 BF16 or AMX (not on many AMD EPYC parts); `TF_ENABLE_ONEDNN_OPTS`
    overrides that.
    """
    from tpubench.hardware import cpu_layout

    on = cpu_layout.onednn_on()
    state = "unknown" if on is None else "on" if on else "off"
    env = os.environ.get(cpu_layout.ONEDNN_ENV)
    why = (
        f"{cpu_layout.ONEDNN_ENV}={env}" if env is not None else "TensorFlow's default for this CPU"
    )
    return f"{state} ({why})"


def git_commit() -> str | None:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.isdir(os.path.join(here, ".git")):
        return None
    try:
        out = subprocess.run(
            ["git", "-C", here, "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        dirty = subprocess.run(
            ["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        sha = out.stdout.strip()
        return (sha + ("-dirty" if dirty.stdout.strip() else "")) if sha else None
    except (OSError, subprocess.SubprocessError):
        return None


def accelerators(placement) -> list[dict]:
    import tensorflow as tf

    out = []
    if placement.accelerator == "gpu":
        for dev in tf.config.list_physical_devices("GPU"):
            details = tf.config.experimental.get_device_details(dev)
            out.append(
                {
                    "kind": "gpu",
                    "name": details.get("device_name", dev.name),
                    "compute_capability": details.get("compute_capability"),
                }
            )
    elif placement.accelerator == "tpu":
        for dev in tf.config.list_logical_devices("TPU"):
            out.append({"kind": "tpu", "name": dev.name})
    return out
