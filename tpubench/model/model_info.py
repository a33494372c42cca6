"""`tpubench models`: registered models with parameters and FLOPs per example.

Counting FLOPs traces each model, so results are cached per model, params
and TensorFlow version under $TPUBENCH_CACHE (or ~/.cache/tpubench).
"""

from __future__ import annotations

import hashlib
import inspect
import io
import json
import sys
import textwrap

from tpubench.core import columns
from tpubench.model import flops as flops_lib
from tpubench.model import model_api, registry, shipped
from tpubench.storage import cache as cache_lib

# Runner keys that do not change the network, so do not change its FLOPs.
# (An emulated disk's read rate changes the input, not the network; the report still tells
# runs at different rates apart.)
_NOT_ARCHITECTURE = frozenset(model_api.RUNTIME_PARAMS) | {"read_mb_per_s"}


def flops(spec, params) -> dict:
    """FLOPs per example and trainable parameters, cached per architecture.

    Tracing a model costs seconds (about 10 for ResNet-50), so results are
    kept per model name, architecture params and TensorFlow version.
    """
    key = _key(spec, params)
    cache = _counts()
    if key not in cache:
        cache[key] = flops_lib.count_flops(spec, _counting(spec, params))
        cache_lib.store_json("model_info.json", cache)
    return dict(cache[key])


def _counts() -> dict:
    """model_info.json: entries of the wrong shape (text for a number) are counted again."""
    shape = {
        "forward_flops_per_example": cache_lib.NUMBER,
        "train_flops_per_example": cache_lib.NUMBER,
        "parameters": cache_lib.COUNT,
    }
    raw = cache_lib.load_json("model_info.json")
    kept = {k: v for k, v in raw.items() if k.startswith("parameters:")}
    kept.update(
        {
            k: v
            for k, v in raw.items()
            if isinstance(v, dict) and all(cache_lib.fits(v.get(f), t) for f, t in shape.items())
        }
    )
    return kept


def parameters(spec, params) -> int:
    """Trainable parameters of SPEC's network at PARAMS: built, not traced; cached.

    What a run's parameter count would have been without fitting the head
    and vocabulary to its data (`tpubench models` counts the defaults).
    """
    import keras

    key = _key(spec, params)
    cache = _counts()
    if key in cache:
        return int(cache[key]["parameters"])
    counted = cache.get(f"parameters:{key}")
    if not cache_lib.fits(counted, cache_lib.COUNT):  # text where a count belongs: count again
        counted = None
    if counted is None:
        model = spec.build_model(_counting(spec, params))
        counted = int(sum(v.shape.num_elements() for v in model.trainable_variables))
        keras.backend.clear_session()
        cache[f"parameters:{key}"] = counted
        cache_lib.store_json("model_info.json", cache)
    return int(counted)


def _key(spec, params) -> str:
    import tensorflow as tf

    arch = {k: v for k, v in params.items() if k not in _NOT_ARCHITECTURE}
    # The model's source is part of the key: an edited model is counted again.
    return hashlib.sha1(
        json.dumps(
            [spec.name, sorted(map(str, arch.items())), tf.__version__, _source_hash(spec)]
        ).encode()
    ).hexdigest()[:16]


def _counting(spec, params) -> dict:
    counting = model_api.RunParams(params)
    counting.setdefault("global_batch_size", spec.default_batch_size)
    counting.setdefault("per_replica_batch_size", spec.default_batch_size)
    counting.setdefault("batch_size", spec.default_batch_size)
    counting.setdefault("seed", 0)
    return counting


def _source_hash(spec) -> str:

    module = sys.modules.get(getattr(spec.build_model, "__module__", ""))
    try:
        source = inspect.getsource(module) if module else ""
    except (OSError, TypeError):
        source = ""
    return hashlib.sha1(source.encode()).hexdigest()[:12]


def count(name: str, tiny: bool = False) -> dict:
    """Parameters and FLOPs per example (forward and train) of one model, traced (or cached)."""
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


def listing(names: list[str], fmt: str, tiny: bool = False, model_modules=(), progress=None) -> str:
    """The `tpubench models` table (or JSON) of NAMES (default: every registered model).

    Built-in models come from the shipped table without TensorFlow; models of
    MODEL_MODULES, and any the table lacks, are traced (once, then cached),
    with PROGRESS(text) told before each.
    """
    table = shipped.load()
    for n in names:
        shipped.check_known(n, model_modules)  # a model name is an identifier, before any import
    # Models of one's own: a --model_module, or an installed package's entry point.
    own = bool(model_modules) or bool(registry.plugin_names())
    if not own:
        for n in names:
            if n not in table["models"]:
                raise registry.unknown_name(n, shipped.names(table))
    wanted = list(names) or shipped.names(table)
    found = {n: shipped.row(n, tiny, table) for n in wanted}
    if own or None in found.values():
        for module in model_modules:
            registry.load_module(module)
        for n in names:
            if n not in registry.names():
                raise registry.unknown_name(n, registry.names())
        wanted = list(names) or registry.names()
        found = {n: found.get(n) or shipped.row(n, tiny, table) for n in wanted}
    todo = [n for n in wanted if found[n] is None]
    for i, n in enumerate(todo, 1):
        if progress:
            progress(f"counting FLOPs of {n} ({i} of {len(todo)}; once, then cached)")
        found[n] = count(n, tiny)
    rows = [found[n] for n in wanted]
    if fmt == "json":
        return json.dumps(rows, indent=2)
    return table_text(rows, _width())


def _width() -> int:
    """The console's width (core/columns: $COLUMNS, else the terminal's up to 100)."""
    return columns.width()


# Below this width the descriptions leave the table for lines of their own.
_DESCRIPTION_IN_TABLE = 110


def gflops_text(flops: float | None) -> str:
    """FLOPs as GFLOPs with 4 decimals, or the 2 significant digits a tiny count needs.

    imdb_fasttext's forward pass is about 42 kFLOP: 0.000042, never 0.0000.
    """
    import math

    if flops is None:
        return "n/a"
    g = flops / 1e9
    if g == 0 or g >= 1e-4:
        return f"{g:.4f}"
    return f"{g:.{1 - math.floor(math.log10(abs(g)))}f}"


def table_text(rows: list[dict], width: int) -> str:
    """ROWS as a table WIDTH characters wide: datasets wrap one name a line where they must;
    on narrow terminals the descriptions follow the table, one wrapped line per model."""

    from rich import box
    from rich.console import Console
    from rich.table import Table

    inline = width >= _DESCRIPTION_IN_TABLE
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
    table.add_column("model", no_wrap=True)
    for name in ("parameters", "GFLOPs/ex fwd", "train", "batch"):
        table.add_column(name, justify="right", no_wrap=True)
    longest = max((len(d) for r in rows for d in r["datasets"]), default=8)
    table.add_column("datasets", overflow="fold", min_width=longest, max_width=max(longest, 24))
    if inline:
        table.add_column("description", ratio=1, min_width=20)
    for r in rows:
        cells = [
            r["name"],
            f"{r['parameters']:,}",
            gflops_text(r["forward_flops_per_example"]),
            gflops_text(r["train_flops_per_example"]),
            str(r["default_batch_size"]),
            ", ".join(r["datasets"]),
        ]
        table.add_row(*cells, *([r["description"]] if inline else []))
    out = io.StringIO()
    Console(file=out, width=width, color_system=None, force_terminal=False).print(table)
    lines = [line.rstrip() for line in out.getvalue().splitlines()]
    if not inline:
        lines.append("")
        for r in rows:
            lines += textwrap.wrap(
                f"{r['name']}: {r['description']}", width - 1, subsequent_indent="  "
            )
    return "\n".join(lines).strip("\n")
