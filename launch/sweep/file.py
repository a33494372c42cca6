"""Reading a sweep file: the YAML, its top-level keys, then a `grid:` (grid.py) or `runs:`
(runs.py) expanded into configurations.

Above both: grid.py knows a configuration and a grid, runs.py a list of
runs written out, and neither imports this module.
"""

from __future__ import annotations

import pathlib

from tpubench.core import bounds, safe_files, safe_yaml
from tpubench.core import errors as core_errors
from tpubench_launch import cloud_file, errors, executors, trust
from tpubench_launch.sweep import grid as grids
from tpubench_launch.sweep import runs

TOP_KEYS = ("name", "results_dir", "grid", "runs", "flags", "estimate", "cloud", "command")
MAX_CONFIGS = 10_000  # configurations a grid may expand to unless --max-configs says more


def load(
    path: str,
    executor: str,
    results_dir: str | None = None,
    trust_code: bool = False,
    max_configs: int = MAX_CONFIGS,
) -> grids.Sweep:
    """Reads and expands a sweep file.

    Raises:
      UsageError: unreadable file, bad YAML, unknown keys or bad values (one
        line naming the key and what is accepted); flags that load code
        (model_module, flagfile, a model tpubench does not ship: a plug-in's)
        or cloud settings that choose it (package,
        image, ...) unless TRUST_CODE (launch/trust.py); for the local
        executor, a file flag (price_catalog, user_conf) that is not a
        regular file of bounded size (core/safe_files.py).
    """
    executors.REGISTRY.get(executor)  # an unknown name is refused before the file is read
    p = pathlib.Path(path)
    try:
        # Bounded and strict: no aliases, no duplicate keys, a size limit.
        doc = safe_yaml.load(path)
    except OSError as e:
        raise errors.UsageError(f"cannot read sweep file {path}: {e.strerror}") from None
    except safe_yaml.Refused as e:
        raise errors.UsageError(str(e)) from None
    if not isinstance(doc, dict):
        raise errors.UsageError(f"{path}: a sweep file is a mapping with a 'grid' or a 'runs' key")
    for key in doc:
        if key not in TOP_KEYS:
            raise errors.unknown(f"key in {path}:", key, TOP_KEYS)
    name = str(doc.get("name") or p.stem)
    if not grids.NAME.match(name):  # it becomes runs/sweeps/NAME and VM names
        raise errors.UsageError(
            f"{path}: name={ascii(name)[:120]} is refused: it becomes part of paths and VM names; "
            "accepted: 1-100 letters, digits, '_', '.' or '-', starting with a letter or digit"
        )
    warned: list[str] = []
    command = doc.get("command", "train")
    if command not in grids.COMMANDS:
        raise errors.unknown(f"command in {path}:", str(command), grids.COMMANDS)
    fixed = _mapping(doc, "flags", path)
    for key in fixed:
        if key in grids.OWNED_FLAGS:
            raise errors.UsageError(
                f"{path}: flags.{key} is set by tpubench-launch for each configuration; "
                "use results_dir: at the top of the file (or --results-dir)"
            )
    if "runs" in doc:
        if "grid" in doc:
            raise errors.UsageError(f"{path}: give 'grid' or 'runs', not both")
        configs = runs.configs(doc["runs"], fixed, command, path)
    else:
        grid = _mapping(doc, "grid", path)
        _check_size(grid, path, max_configs)
        configs = grids.grid_configs(grid, fixed, command, executor, path)
    for c in configs:
        where = f"runs ({c.id}): flags." if c.summary else "flags."
        for key, value in sorted(c.fixed_flags.items()):  # the flags' own ranges
            try:
                bounds.check_flag(key, value)
            except core_errors.UsageError as e:
                raise errors.UsageError(f"{path}: {where}{key}: {e}") from None
        # Its model too (flags, a grid axis or a run's own): one tpubench does not ship is code.
        model = c.train_flags().get("model")
        at = where if "model" in c.fixed_flags else f"runs ({c.id}): " if c.summary else "grid: "
        for line in [
            *trust.check(path, where, c.fixed_flags, trust_code),
            *trust.check(path, at, {**c.fixed_flags, "model": model}, trust_code),
        ]:
            if line not in warned:
                warned.append(line)
        if executor == "local":  # a file the runs read here: regular and bounded, or refused
            try:
                safe_files.check_flags(c.fixed_flags, f"{path}: {where}")
            except core_errors.UsageError as e:
                raise errors.UsageError(str(e)) from None
    cloud = _mapping(doc, "cloud", path)
    # Whatever the executor: a file that chooses the code the machines run needs trust.
    # What it chooses is printed before the runs (executors' code_lines), not warned of here.
    cloud_file.check(cloud, f"{path}: ")  # keys and formats first: each named as such
    trust.check_cloud(path, cloud, trust_code)
    return grids.Sweep(
        warnings=tuple(warned),
        name=name,
        path=str(p),
        results_dir=results_dir or str(doc.get("results_dir") or f"runs/sweeps/{name}"),
        configs=tuple(configs),
        estimate=_mapping(doc, "estimate", path),
        cloud=cloud,
        command=command,
    )


def _check_size(grid: dict, path: str, max_configs: int) -> None:
    """The grid's size, counted before expanding it; over MAX_CONFIGS refused."""
    count = 1
    for values in grid.values():
        count *= len(values) if isinstance(values, list) and values else 1
    if count > max_configs:
        raise errors.UsageError(
            f"{path}: the grid expands to {count:,} configurations, over --max-configs="
            f"{max_configs:,}; nothing was expanded (raise --max-configs to run it)"
        )


def _mapping(doc: dict, key: str, path: str) -> dict:
    value = doc.get(key) or {}
    if not isinstance(value, dict):
        raise errors.UsageError(f"{path}: '{key}' must be a mapping, got {type(value).__name__}")
    return value
