"""What a built strategy runs on, and the cluster this process belongs to.

The shared vocabulary of strategy.py (single-host strategies) and
clusters.py (multi-worker, parameter-server and TPU strategies).
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import shutil

from tpubench.core import errors


@dataclasses.dataclass(frozen=True)
class Placement:
    """What a built strategy runs on (goes into the run record)."""

    accelerator: str  # cpu | gpu | tpu
    strategy: str  # one_device | mirrored | central_storage | multi_worker | parameter_server | tpu
    num_replicas: int  # replicas in sync (per step)
    devices: tuple[str, ...]
    all_reduce: str
    num_workers: int = 1
    is_chief: bool = True
    cluster: dict | None = None
    # central_storage: where the variables live (--parameter_device: cpu | gpu);
    # cpu: the host CPU's TensorFlow name; gpu: the training devices they are
    # spread over, by size (hardware/central_storage.py).
    parameter_device: str | None = None
    variable_device: str | None = None
    variable_devices: tuple[str, ...] | None = None


def tf():
    import tensorflow as tf

    return tf


def tf_config() -> dict | None:
    """The parsed TF_CONFIG environment variable, or None when unset."""
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        return None
    try:
        cfg = json.loads(raw)
    except json.JSONDecodeError as e:
        raise errors.UsageError(
            f"TF_CONFIG is not valid JSON ({e.msg} at column {e.colno})"
        ) from None
    if not isinstance(cfg, dict) or "cluster" not in cfg:
        raise errors.UsageError('TF_CONFIG must be a JSON object with a "cluster" key')
    return cfg


def no_gpu_reason() -> str | None:
    """Why TensorFlow cannot see a GPU here, known without importing it; None when it may.

    CUDA_VISIBLE_DEVICES set empty (or -1) hides every GPU; a host with no
    NVIDIA device node, no WSL GPU (/dev/dxg), no ROCm (/dev/kfd) and no
    nvidia-smi has none.  Anything else is left to TensorFlow to decide.
    """
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU"
    if glob.glob("/dev/nvidia[0-9]*") or shutil.which("nvidia-smi"):
        return None
    if os.path.exists("/dev/dxg") or os.path.exists("/dev/kfd"):
        return None
    return "this host has no GPU (no /dev/nvidia* device, no nvidia-smi)"


def check_gpu(accelerator: str) -> None:
    """Refuses --accelerator=gpu before TensorFlow's start-up where no GPU can be seen.

    Raises:
      HardwareError: naming the reason and what to do instead.
    """
    reason = no_gpu_reason() if accelerator == "gpu" else None
    if reason:
        raise errors.HardwareError(
            f"--accelerator=gpu but {reason}; run on a machine with an NVIDIA GPU and driver "
            "(tpubench[gpu] installed), or use --accelerator=cpu"
        )


# What says a TPU is attached or named: a Cloud TPU VM's device files, a remote TPU's name.
_TPU_DEVICES = ("/dev/accel[0-9]*", "/dev/vfio/[0-9]*")
_TPU_ENV = ("TPU_NAME", "COLAB_TPU_ADDR", "KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS")


def check_tpu(accelerator: str, tpu: str | None) -> None:
    """Refuses a TPU run before TensorFlow's start-up where no TPU can be reached: a local
    TPU asked for (--accelerator=tpu, or --tpu=local) on a host with no TPU device and no
    remote TPU named.  A --tpu=NAME or grpc:// address, or TPU_NAME, is left to TensorFlow.

    Raises:
      HardwareError: naming what was asked for and what is accepted.
    """
    if tpu not in (None, "", "local") or (accelerator != "tpu" and tpu != "local"):
        return  # a remote TPU named, or no TPU asked for
    if any(os.environ.get(v) for v in _TPU_ENV) or any(glob.glob(p) for p in _TPU_DEVICES):
        return
    asked = "--tpu=local" if tpu == "local" else "--accelerator=tpu"
    raise errors.HardwareError(
        f"{asked} but this host has no TPU (no /dev/accel* or /dev/vfio/* device) and no "
        "remote TPU is named; run on a Cloud TPU VM, name one with --tpu=NAME (or "
        "grpc://HOST:PORT, or TPU_NAME), or use --accelerator=cpu"
    )


def check_applicable(hw, accelerator: str) -> None:
    """Flags for one kind of device are an error with another, not ignored."""
    if hw.num_gpus is not None and accelerator != "gpu":
        raise errors.UsageError(
            f"--num_gpus={hw.num_gpus} applies to GPUs but the accelerator is {accelerator}; "
            "drop it or use --accelerator=gpu"
        )
    if hw.num_cpu_devices > 1 and accelerator != "cpu":
        raise errors.UsageError(
            f"--num_cpu_devices={hw.num_cpu_devices} splits the CPU into replicas but the "
            f"accelerator is {accelerator}; drop it or use --accelerator=cpu"
        )
    if hw.tpu and accelerator != "tpu":
        raise errors.UsageError(
            f"--tpu={hw.tpu} names a TPU but --accelerator={accelerator}; use --accelerator=tpu "
            "or auto"
        )
    check_central_storage(hw, accelerator)


def check_central_storage(hw, accelerator: str) -> None:
    """--parameter_device belongs to central_storage, whose gradients go to that device."""
    if hw.parameter_device and hw.strategy != "central_storage":
        raise errors.UsageError(
            f"--parameter_device={hw.parameter_device} applies to --strategy=central_storage "
            f"but the strategy is {hw.strategy}; drop it or use --strategy=central_storage"
        )
    if hw.strategy != "central_storage":
        return
    if hw.all_reduce != "auto":
        raise errors.UsageError(
            f"--all_reduce={hw.all_reduce} does not apply to --strategy=central_storage (the "
            "gradients are summed on the parameter device); drop it or use --strategy=mirrored"
        )
    if hw.parameter_device == "gpu" and accelerator != "gpu":
        raise errors.UsageError(
            "--parameter_device=gpu spreads the variables over the training GPUs but the "
            f"accelerator is {accelerator}; accepted here: --parameter_device=cpu"
        )


def known_accelerator(hw) -> str | None:
    """What HW's accelerator resolves to, where that is known without TensorFlow, else None.

    The flag when given; tpu when a TPU is named or present; cpu where no GPU
    can be seen (`no_gpu_reason`).  Mirrors `strategy.resolve_accelerator`.
    """
    if hw.accelerator != "auto":
        return hw.accelerator
    if hw.strategy == "tpu" or hw.tpu or os.environ.get("TPU_NAME") or on_tpu_vm():
        return "tpu"
    return "cpu" if no_gpu_reason() else None


def check_early(hw, global_batch_size: int | None) -> None:
    """The flag combinations that can be refused before TensorFlow starts (5-15 s).

    Device flags for another accelerator and a batch that does not split over
    logical CPU replicas (a GPU that cannot be seen: `check_gpu`); the same
    checks run again once TensorFlow knows the devices.

    Raises:
      HardwareError, UsageError: naming the flag and what is accepted.
    """
    accelerator = known_accelerator(hw)
    if accelerator is None:
        return
    check_applicable(hw, accelerator)
    single_host = not os.environ.get("TF_CONFIG") and hw.strategy in (
        "auto",
        "mirrored",
        "central_storage",
    )
    if accelerator == "cpu" and single_host and global_batch_size is not None:
        check_batch(global_batch_size, hw.num_cpu_devices)


def check_batch(batch: int, replicas: int) -> None:
    """One global batch must split evenly over the replicas."""
    if batch % replicas:
        raise errors.UsageError(
            f"--batch_size={batch} is not divisible by the {replicas} replicas; accepted: a "
            f"multiple of {replicas} (e.g. {max(1, batch // replicas) * replicas})"
        )


def on_tpu_vm() -> bool:
    """A TPU VM: its accelerator devices are visible in /dev."""
    return os.path.exists("/dev/accel0") or os.path.exists("/dev/vfio/0")
