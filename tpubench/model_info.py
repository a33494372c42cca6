"""`tpubench models`: registered models with parameters and FLOPs per example.

Counting FLOPs traces each model, so results are cached per model, params
and TensorFlow version under $TPUBENCH_CACHE (or ~/.cache/tpubench).
"""

from __future__ import annotations

import hashlib
import json
import os

from tpubench import errors, registry


def _cache_file() -> str:
    root = os.environ.get("TPUBENCH_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "tpubench"
    )
    return os.path.join(root, "model_info.json")


def describe(name: str, tiny: bool = False) -> dict:
    """Parameters and FLOPs per example (forward and train) of one model."""
    import tensorflow as tf

    from tpubench import mfu

    spec = registry.get(name)
    params = registry.resolve_params(spec, {}, tiny=tiny)
    params.setdefault("global_batch_size", spec.default_batch_size)
    params.setdefault("batch_size", spec.default_batch_size)
    key = hashlib.sha1(
        json.dumps([name, sorted(map(str, params.items())), tf.__version__]).encode()
    ).hexdigest()[:16]
    path = _cache_file()
    cache = {}
    if os.path.exists(path):
        try:
            with open(path) as f:
                cache = json.load(f)
        except (OSError, json.JSONDecodeError):
            cache = {}
    if key not in cache:
        cache[key] = mfu.count_flops(spec, params)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(cache, f, indent=1)
        os.replace(tmp, path)
    info = cache[key]
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
