"""`runs:` in a sweep file: each run written out, with its own label, instead of a grid.

    runs:
      - label: mlp-8cpu                 # its configuration id and --run_label
        machine: gcp:n1-highcpu-8       # what a cloud executor rents (and prices)
        command: infer                  # default: the file's `command:` (train)
        seconds: 90                     # this run's estimate for the cost preview
        flags: {model: mnist_mlp, num_intra_threads: 8}
      - {label: mlp-t4, machine: "gcp:n1-standard-8+1xgcp:t4", flags: {model: mnist_mlp}}

A run may also give any grid setting (model, batch_size, precision, threads,
strategy, workers, ps), and for a cluster how its tasks share one machine:
`one_machine: true` runs them all on the run's machine as a local cluster
(an executor that declares such clusters, gce; the local executor always
does), `gpus_per_worker: N` and `ps_device: cpu|gpu` as
`tpubench-launch local-cluster` takes them.  Its flags are added to the file's `flags:`; a flag
set in both places, or by a setting and a flag, is refused.  The label is the
run's identity: a record carrying it with a done status marks the run done
when it measured what the run asks (sweep/resume.py),
so a user (or `tpubench study`, which writes one run per repeat of a cell) chooses ids
that stay the same from one invocation to the next.
"""

from __future__ import annotations

import dataclasses

from tpubench_launch import errors
from tpubench_launch.sweep import grid

RUN_KEYS = ("label", "run_label", "command", "flags", "seconds", *grid.KEYS, *grid.CLUSTER_KEYS)


def configs(runs, fixed: dict, command: str, path: str) -> list:
    """The configurations of a `runs:` list, in order.

    Raises:
      UsageError: not a non-empty list of mappings, an unknown key, a bad or
        repeated label, a bad value, or a flag set twice (one line each).
    """
    if not isinstance(runs, list) or not runs:
        raise errors.UsageError(f"{path}: runs must be a non-empty list of mappings")
    out, seen = [], set()
    for i, run in enumerate(runs):
        where = f"{path}: runs[{i}]"
        if not isinstance(run, dict):
            raise errors.UsageError(f"{where} must be a mapping with a label, got {run!r}")
        for key in run:
            if key not in RUN_KEYS:
                raise errors.unknown(f"key in {where}:", key, RUN_KEYS)
        label = run.get("label")
        if not isinstance(label, str) or not grid.NAME.match(label):
            raise errors.UsageError(
                f"{where}: label={label!r} must be 1-100 letters, digits, '_', '.' or '-', "
                "starting with a letter or digit (it becomes --run_label and file names)"
            )
        where = f"{path}: runs[{i}] ({label})"
        if label in seen:
            raise errors.UsageError(f"{where}: two runs share the label {label!r}")
        seen.add(label)
        settings = {k: run[k] for k in grid.KEYS if k in run}
        grid.check_keys(settings, where)
        settings.update({k: run[k] for k in grid.CLUSTER_KEYS if k in run})
        grid.check_settings(settings, where)
        flags = _flags(run.get("flags"), fixed, where)
        clash = grid.clash_of(settings, flags)
        if clash:
            raise errors.UsageError(f"{where}: flags.{clash} is also set by the run; set it once")
        cmd = run.get("command", command)
        if cmd not in grid.COMMANDS:
            raise errors.unknown(f"command in {where}:", str(cmd), grid.COMMANDS)
        grid.check_command(cmd, settings, where)
        seconds = run.get("seconds")
        if seconds is not None and (
            not isinstance(seconds, (int, float))
            or isinstance(seconds, bool)
            or not 0 < seconds <= 7 * 86400
        ):
            raise errors.UsageError(
                f"{where}: seconds={seconds!r} must be a number > 0 and at most 604,800 (a week)"
            )
        run_label = run.get("run_label", label)
        if not isinstance(run_label, str) or not grid.NAME.match(run_label):
            raise errors.UsageError(
                f"{where}: run_label={run_label!r} must be 1-100 letters, digits, '_', '.' or "
                "'-', starting with a letter or digit"
            )
        config = grid.Config(label, settings, flags, cmd, seconds, run_label=run_label)
        out.append(dataclasses.replace(config, summary=_summary(config)))
    return out


def _flags(value, fixed: dict, where: str) -> dict:
    own = value or {}
    if not isinstance(own, dict):
        raise errors.UsageError(f"{where}: flags must be a mapping, got {type(own).__name__}")
    for key, v in own.items():
        if key in grid.OWNED_FLAGS:
            raise errors.UsageError(
                f"{where}: flags.{key} is set by tpubench-launch for each run (its label is "
                "--run_label; results_dir: at the top of the file places the records)"
            )
        if key in fixed:
            raise errors.UsageError(
                f"{where}: flags.{key} is also in the file's flags:; set it in one place"
            )
        if isinstance(v, dict) or v is None:
            raise errors.UsageError(
                f"{where}: flags.{key} must be a number, a word, true/false or a list"
            )
    return {**fixed, **own}


def _summary(config) -> str:
    """What the run is: its command when not train, model and machine, then the grid's words."""
    flags = config.fixed_flags
    head = [config.command] if config.command != "train" else []
    if "model" not in config.settings and flags.get("model"):
        head.append(str(flags["model"]))
    return " ".join([*head, config.describe()]) if config.settings else " ".join(head) or "defaults"
