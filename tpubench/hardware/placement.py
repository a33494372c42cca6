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
    strategy: str  # one_device | mirrored | multi_worker | parameter_server | tpu
    num_replicas: int  # replicas in sync (per step)
    devices: tuple[str, ...]
    all_reduce: str
    num_workers: int = 1
    is_chief: bool = True
    cluster: dict | None = None


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


def on_tpu_vm() -> bool:
    """A TPU VM: its accelerator devices are visible in /dev."""
    return os.path.exists("/dev/accel0") or os.path.exists("/dev/vfio/0")
