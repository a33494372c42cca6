"""`tpubench models`: registered models with parameters and FLOPs per example.

Counting FLOPs traces each model, so results are cached per model, params
and TensorFlow version under $TPUBENCH_CACHE (or ~/.cache/tpubench).
"""

from __future__ import annotations

import hashlib
import json

from tpubench import cache as cache_lib
from tpubench import errors, registry

# Runner keys that do not change the network, so do not change its FLOPs.
_NOT_ARCHITECTURE = {
    "batch_size",
    "global_batch_size",
    "data_dir",
    "seed",
    "deterministic",
    "cache",
    "fixed_eval_steps",
}


def flops(spec, params) -> dict:
    """FLOPs per example and trainable parameters, cached per architecture.

    Tracing a model costs seconds (about 10 for ResNet-50), so results are
    kept per model name, architecture params and TensorFlow version.
    """
    import tensorflow as tf

    from tpubench.hardware import mfu

    arch = {k: v for k, v in params.items() if k not in _NOT_ARCHITECTURE}
    # The model's source is part of the key: an edited model is counted again.
    key = hashlib.sha1(
        json.dumps(
            [spec.name, sorted(map(str, arch.items())), tf.__version__, _source_hash(spec)]
        ).encode()
    ).hexdigest()[:16]
    cache = cache_lib.load_json("model_info.json")
    if key not in cache:
        counting = dict(params)
        counting.setdefault("global_batch_size", spec.default_batch_size)
        counting.setdefault("batch_size", spec.default_batch_size)
        counting.setdefault("seed", 0)
        cache[key] = mfu.count_flops(spec, counting)
        cache_lib.store_json("model_info.json", cache)
    return dict(cache[key])


def _source_hash(spec) -> str:
    import inspect
    import sys

    module = sys.modules.get(getattr(spec.build_model, "__module__", ""))
    try:
        source = inspect.getsource(module) if module else ""
    except (OSError, TypeError):
        source = ""
    return hashlib.sha1(source.encode()).hexdigest()[:12]


def describe(name: str, tiny: bool = False) -> dict:
    """Parameters and FLOPs per example (forward and train) of one model."""
    spec = registry.get(name)
    info = flops(spec, registry.resolve_params(spec, {}, tiny=tiny))
    return {
        "name": name,
        "description": spec.description,
        "parameters": info["parameters"],
        "forward_flops_per_example": info["forward_flops_per_example"],
        "train_flops_per_example": info["train_flops_per_example"],
        "default_batch_size": spec.default_batch_size,
        "datasets": list(spec.datasets),
        "examples_per_epoch": dict(spec.examples_per_epoch),
        "tiny": tiny,
    }


def listing(names: list[str], fmt: str, tiny: bool = False) -> str:
    for n in names:
        if n not in registry.names():
            raise errors.unknown("model", n, registry.names())
    rows = [describe(n, tiny) for n in (names or registry.names())]
    if fmt == "json":
        return json.dumps(rows, indent=2)
    head = (
        f"{'model':<14}{'parameters':>14}{'GFLOPs/ex fwd':>15}{'GFLOPs/ex train':>17}"
        f"{'batch':>7}  datasets      description"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['name']:<14}{r['parameters']:>14,}{r['forward_flops_per_example'] / 1e9:>15.4f}"
            f"{r['train_flops_per_example'] / 1e9:>17.4f}{r['default_batch_size']:>7}  "
            f"{','.join(r['datasets']):<13} {r['description']}"
        )
    return "\n".join(lines)
