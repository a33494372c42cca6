"""Cloud TPU slice names, as Cloud TPU counts them: chips, TensorCores and hosts.

`tpu-v5e-8` and `tpu-v6e-8` count chips; `tpu-v2-8`, `tpu-v3-8`, `tpu-v4-8`
and `tpu-v5p-8` count TensorCores (two per chip): what each generation's
suffix counts is a machine fact (core/tpu_generations.csv, read through
core/machine_facts.py).  A slice on more than one host is a pod.  Shared by
pricing (cost/machine.py), the study's planner (which slices an executor can
host) and tpubench-launch (tpus.py), so that the three never count a slice
differently.
"""

from __future__ import annotations

from tpubench.core import machine_facts


def hosts(generation: str, chips: int) -> int:
    """Hosts of a slice of CHIPS chips of GENERATION (v2, v5e, ...): four chips a host,
    except that a v5e or v6e slice of up to 8 chips is one host (tpu-v5e-8)."""
    facts = machine_facts.tpu_generation(generation)
    return facts.hosts(chips) if facts else max(1, chips // 4)
