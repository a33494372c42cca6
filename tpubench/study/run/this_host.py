"""This host as a study sees it (cells.Host): its cores, GPUs and TPU, probed without TensorFlow."""

from __future__ import annotations

import os

from tpubench.hardware import amx as amx_lib
from tpubench.hardware import placement
from tpubench.hardware import probe as host_probe
from tpubench.study.run import cells


def probe(gcs_data: str | None = None) -> cells.Host:
    """This host, without importing TensorFlow: affinity cores, nvidia-smi, /dev/accel*."""
    cores = tuple(sorted(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else ()
    if not cores:
        cores = tuple(range(os.cpu_count() or 1))
    names = [name for name, _ in host_probe.gpus()]  # nvidia-smi: no TensorFlow, no CUDA context
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:  # what TensorFlow in the cells will see, not what nvidia-smi lists
        names = names[: len([x for x in visible.split(",") if x.strip()])]
    cpu = host_probe.cpu()
    return cells.Host(
        cores,
        len(names),
        names[0] if names else "",
        placement.on_tpu_vm(),
        gcs_data,
        amx=cpu.get("amx"),
        bf16_path=amx_lib.bf16_path(cpu),
    )
