"""Sweep files: a YAML grid of models x machines x batch sizes x precisions x threads x strategies.

    name: threads                    # default: the file's stem
    results_dir: runs/threads        # local; default runs/sweeps/NAME
    grid:                            # every combination is one configuration
      models: [mnist_mlp]
      machines:                      # a mapping sets linked values together
        - {machine: gcp:n1-standard-1, threads: 1}
        - {machine: gcp:n1-standard-2, threads: 2}
      batch_sizes: [64, 128]
      precisions: [fp32]
      strategies: [one_device, {strategy: multi_worker, workers: 2}]
    runs:                            # instead of grid: each run written out (runs.py)
      - {label: small, machine: gcp:n1-standard-8, flags: {model: mnist_mlp}}
    command: train                   # or tune / infer: the tpubench subcommand each run is
    flags: {train_steps: 200}        # tpubench train (or tune) flags for every configuration
    estimate: {seconds: 30}          # or {steps_per_second: 50}: for the cost preview
    cloud: {...}                     # gce / tpu-vm settings (executors/cloud.py)

A configuration's identity is a stable hash of its settings, its fixed flags
and the executor; it is passed as `--run_label`, so a record in the
results directory with that label marks it done (resume).  `command: tune`
runs `tpubench tune` instead (on the machine the configuration names, so a
user tunes for the machine they will rent); tune labels and resumes its own
trials, so the launcher passes it neither --model_dir nor --run_label.
`command: infer` runs `tpubench infer`; its --model_dir names weights to
read, so the launcher passes it --run_label but never a model_dir.
"""

from __future__ import annotations

import dataclasses
import itertools
import re

from tpubench.children import labels
from tpubench.core import bounds, precision, vocab
from tpubench.core import errors as core_errors
from tpubench_launch import errors

AXES = {
    "models": "model",
    "machines": "machine",
    "batch_sizes": "batch_size",
    "precisions": "precision",
    "threads": "threads",
    "strategies": "strategy",
}
KEYS = ("model", "machine", "batch_size", "precision", "threads", "strategy", "workers", "ps")
# How a cluster's tasks share one machine (runs: only; set, they count in the configuration's
# id): all on the run's one machine as a local cluster, each worker's GPUs, the servers' device.
CLUSTER_KEYS = ("one_machine", "gpus_per_worker", "ps_device")
PS_DEVICES = ("cpu", "gpu", "any")
COMMANDS = ("train", "tune", "infer")
# Whole-number settings and their ranges: the one table's (core/bounds.py).
RANGES = {key: bounds.FLAGS[key][:2] for key in ("batch_size", "threads", "workers", "ps")}
# The launcher owns these flags: it points each configuration at its results.
OWNED_FLAGS = ("results_dir", "model_dir", "run_label")
# A sweep's name and a run's label become file names, --run_label and VM names:
# letters, digits, '_', '.', '-' (tpubench/core/names.py's word; launch/ cannot import it).
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


@dataclasses.dataclass(frozen=True)
class Config:
    """One point of the grid, or one entry of `runs:`."""

    id: str  # also its --run_label
    settings: dict  # a subset of KEYS
    fixed_flags: dict
    command: str = "train"  # the tpubench subcommand each run is
    seconds: float | None = None  # a run's own estimate for the cost preview
    summary: str | None = None  # what describe() says, for a run written out
    # The label its record carries (--run_label); runs that share one are repeats of
    # one configuration (a study's cell run N times), each with its own id and files.
    run_label: str | None = None

    @property
    def record_label(self) -> str:
        return self.run_label or self.id

    @property
    def strategy(self) -> str | None:
        return self.settings.get("strategy")

    @property
    def is_cluster(self) -> bool:
        return self.strategy in vocab.CLUSTER_STRATEGIES

    @property
    def workers(self) -> int:
        return self.settings.get("workers", 2) if self.is_cluster else 1

    @property
    def ps(self) -> int:
        default = 1 if self.strategy == "parameter_server" else 0
        return self.settings.get("ps", default)

    @property
    def one_machine(self) -> bool:
        """A cluster whose tasks all run on the configuration's one machine (a local cluster
        there), as tf_cnn_benchmarks ran its parameter servers beside the GPUs."""
        return self.is_cluster and bool(self.settings.get("one_machine"))

    def cluster_args(self) -> list[str]:
        """`tpubench-launch local-cluster`'s shape flags for this cluster."""
        out = [f"--workers={self.workers}"] + ([f"--ps={self.ps}"] if self.ps else [])
        if self.settings.get("gpus_per_worker"):
            out.append(f"--gpus-per-worker={self.settings['gpus_per_worker']}")
        if self.settings.get("ps_device", "any") != "any":
            out.append(f"--ps-device={self.settings['ps_device']}")
        return out

    def train_flags(self) -> dict:
        """tpubench train flags (without results_dir, model_dir, run_label)."""
        s = self.settings
        out = {
            "model": s.get("model"),
            "machine": s.get("machine"),
            "batch_size": s.get("batch_size"),
            "precision": s.get("precision"),
        }
        if "threads" in s:
            out["num_intra_threads"] = out["num_inter_threads"] = s["threads"]
        if self.strategy and not self.is_cluster:
            out["strategy"] = self.strategy
        out.update(self.fixed_flags)
        return {k: v for k, v in out.items() if v is not None}

    def describe(self) -> str:
        if self.summary:
            return self.summary
        s = self.settings
        parts = [str(s[k]) for k in ("model", "machine") if k in s]
        if "batch_size" in s:
            parts.append(f"batch {s['batch_size']}")
        if "precision" in s:
            parts.append(s["precision"])
        if "threads" in s:
            parts.append(f"{s['threads']} thread(s)")
        if self.strategy:
            shape = f" {self.workers}w" + (f"+{self.ps}ps" if self.ps else "")
            parts.append(self.strategy + (shape if self.is_cluster else ""))
            if self.one_machine:
                parts.append("on one machine")
        return " ".join(parts) or "defaults"


@dataclasses.dataclass(frozen=True)
class Sweep:
    name: str
    path: str
    results_dir: str
    configs: tuple[Config, ...]
    estimate: dict
    cloud: dict
    command: str = "train"
    warnings: tuple[str, ...] = ()  # one line per code path a --trust-code run imports


def grid_configs(grid: dict, fixed: dict, command: str, executor: str, path: str) -> list:
    """The configurations of a `grid:`, in its order, each once."""
    configs, seen = [], set()
    for settings in _expand(grid, path):
        clash = clash_of(settings, fixed)
        if clash:
            raise errors.UsageError(
                f"{path}: flags.{clash} is also set by the grid; set it in one place"
            )
        check_command(command, settings, path)
        ident = config_id(settings, fixed, executor, command)
        if ident not in seen:
            seen.add(ident)
            configs.append(Config(ident, settings, dict(fixed), command))
    return configs


def check_command(command: str, settings: dict, where: str) -> None:
    """tune and infer run on one machine: no cluster strategies."""
    if command != "train" and settings.get("strategy") in vocab.CLUSTER_STRATEGIES:
        raise errors.UsageError(
            f"{where}: command {command} runs on one machine; strategy "
            f"{settings['strategy']} needs command train"
        )


def config_id(settings: dict, fixed: dict, executor: str, command: str = "train") -> str:
    """A stable id: the same settings, flags, executor and command always give the same id."""
    doc = {"executor": executor, "settings": settings, "flags": fixed}
    if command != "train":  # train's ids stay what they were before tune existed
        doc["command"] = command
    return labels.stable_id("cfg", doc)


def _expand(grid: dict, path: str) -> list[dict]:
    axes = []
    for axis in grid:
        if axis not in AXES:
            raise errors.unknown(f"grid axis in {path}:", axis, AXES)
    for axis, key in AXES.items():
        if axis not in grid:
            continue
        values = grid[axis]
        if not isinstance(values, list) or not values:
            raise errors.UsageError(f"{path}: grid.{axis} must be a non-empty list")
        axes.append([_point(axis, key, v, path) for v in values])
    out = []
    for combo in itertools.product(*axes):
        settings: dict = {}
        for part in combo:
            for k, v in part.items():
                if k in settings:
                    raise errors.UsageError(f"{path}: '{k}' is set by two grid axes; set it in one")
                settings[k] = v
        check_settings(settings, path)
        out.append(settings)
    return out


def _point(axis: str, key: str, value, path: str) -> dict:
    where = f"{path}: grid.{axis}"
    part = dict(value) if isinstance(value, dict) else {key: value}
    check_keys(part, where)
    return part


def check_keys(part: dict, where: str) -> None:
    """Each setting's value (model, machine, batch_size, ...), one line per bad one."""
    for k, v in part.items():
        if k not in KEYS:
            raise errors.unknown(f"key in {where}:", k, KEYS)
        if k in RANGES and (
            not isinstance(v, int) or isinstance(v, bool) or not RANGES[k][0] <= v <= RANGES[k][1]
        ):
            low, high = RANGES[k]
            raise errors.UsageError(
                f"{where}: {k}={v!r} must be a whole number from {low:,} to {high:,}"
            )
        if k == "precision":
            _precision(v, where)
        if k == "strategy" and v not in vocab.STRATEGIES:
            raise errors.unknown(f"strategy in {where}:", v, vocab.STRATEGIES)
        if k in ("model", "machine") and (not isinstance(v, str) or not v.strip()):
            raise errors.UsageError(f"{where}: {k}={v!r} must be a non-empty string")


def check_settings(settings: dict, path: str) -> None:
    strategy = settings.get("strategy")
    for k in ("workers", "ps", *CLUSTER_KEYS):
        if k in settings and strategy not in vocab.CLUSTER_STRATEGIES:
            raise errors.UsageError(
                f"{path}: {k}={settings[k]!r} needs strategy multi_worker or parameter_server "
                f"(got {strategy or 'none'})"
            )
    if strategy == "multi_worker" and settings.get("ps"):
        raise errors.UsageError(f"{path}: ps={settings['ps']} needs strategy parameter_server")
    if strategy == "parameter_server" and settings.get("ps", 1) < 1:
        raise errors.UsageError(f"{path}: strategy parameter_server needs ps >= 1")
    if "one_machine" in settings and not isinstance(settings["one_machine"], bool):
        raise errors.UsageError(f"{path}: one_machine={settings['one_machine']!r}: true or false")
    gpus = settings.get("gpus_per_worker", 0)
    if not isinstance(gpus, int) or isinstance(gpus, bool) or not 0 <= gpus <= 16:
        raise errors.UsageError(f"{path}: gpus_per_worker={gpus!r} must be a whole number 0-16")
    if settings.get("ps_device", "any") not in PS_DEVICES:
        raise errors.unknown(f"ps_device in {path}:", str(settings["ps_device"]), PS_DEVICES)
    if "ps_device" in settings and strategy != "parameter_server":
        raise errors.UsageError(f"{path}: ps_device needs strategy parameter_server")


def clash_of(settings: dict, fixed: dict) -> str | None:
    derived = {
        "model": "model",
        "machine": "machine",
        "batch_size": "batch_size",
        "precision": "precision",
        "threads": ("num_intra_threads", "num_inter_threads"),
        "strategy": "strategy",
    }
    for key, flags in derived.items():
        if key not in settings:
            continue
        for f in (flags,) if isinstance(flags, str) else flags:
            if f in fixed:
                return f
    return None


def _precision(value, where: str) -> None:
    """VALUE as a precision (core/precision.parse, the one parser); the launcher's UsageError."""
    try:
        precision.parse(value, f"{where}: precision")
    except core_errors.UsageError as e:
        raise errors.UsageError(str(e)) from None
