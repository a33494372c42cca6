"""What a built strategy runs on, and the cluster this process belongs to.

The shared vocabulary of strategy.py (single-host strategies) and
clusters.py (multi-worker, parameter-server and TPU strategies).
"""

from __future__ import annotations

import dataclasses
import json
import os

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


def on_tpu_vm() -> bool:
    """A TPU VM: its accelerator devices are visible in /dev."""
    return os.path.exists("/dev/accel0") or os.path.exists("/dev/vfio/0")
