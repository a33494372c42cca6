"""A run's result is taken only from a record of that run.

A label (`run_label`) says which run a record claims to be, and anyone who
can write a file into a results directory can write any label.  So a
record counts as the result of a study's cell, a sweep's run or a tune's
trial only when what it measured is what that run asks (`Asks`):

- every flag the run passes has that value in the record's own `flags`
  (its parsed command line): model, batch, precision, strategy, devices,
  threads, params, data, steps, xla, whatever the run defines;
- what the record says it measured agrees: the model built
  (`model.name`), the global and per-replica batch, the precision, the
  accelerator and strategy it placed, and a cluster's tasks per role;
- its command line (`argv`) sets no flag beyond those, except the ones
  the caller names as its launcher's own (results_dir, run_label, ...).

`differs` returns the first difference in words ("batch 64 != 32"), and
`line` the one line a report or a resume prints for a record left out:
`PATH: labelled LABEL but batch 64 != 32; left out`.  A model_dir is never
matched by its ending: `same_dir` is resolved path equality.  It tells
apart runs that share a label (a sweep's repeats), and where a run alone
writes there (`Asks.model_dir`: a tune's trial, whose losses tune reads from
it) a record naming another is not the run's.  Pure Python.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from typing import Any

from tpubench.core import safe_text
from tpubench.storage import gcs, redaction

# Where a run writes and what it is called: never what it measured.
WHERE = ("results_dir", "run_label")
# What a flag is called in a line (the rest by their flag name).
_SAID = {"batch_size": "batch", "per_replica_batch_size": "per-replica batch"}
_VALUE_LIMIT = 60


@dataclasses.dataclass(frozen=True)
class Given:
    """A flag the run sets to a value only it knows here (a data directory): the record's
    must be set, and start with PREFIX."""

    prefix: str = ""

    def __str__(self) -> str:
        return f"a {self.prefix or 'set'} value".replace("a gs:// value", "a gs:// path")


@dataclasses.dataclass(frozen=True)
class Asks:
    """What a cell, sweep run or tune trial asks of the record that is its result.

    FLAGS: flag name -> the value the run passes (as given: int, str, bool, a
    list; a `Given`: any value with its prefix).  MEASURED: what the record's
    placement must say, for what the flags alone do not fix (`strategy`, a
    cluster's `worker` and `ps` task counts).  OTHERS: flags the record's
    command line may also set (a launcher's own), never compared.  MODEL_DIR:
    where the run alone writes (a tune's trial), when its record must say so.
    """

    label: str
    flags: Mapping[str, Any]
    measured: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    others: frozenset = frozenset()
    what: str = ""  # what the run is, in words, shown after its label
    model_dir: str | None = None  # set: the record's model_dir must be this very one (same_dir)


def differs(record: Mapping, asks: Asks) -> str | None:
    """None when RECORD measured what ASKS asks, else the first difference in words."""
    flags = record.get("flags")
    if not isinstance(flags, Mapping):
        return "records no flags (what it ran is unknown)"
    for name, want in asks.flags.items():
        if name in WHERE:
            continue
        if name not in flags:
            return f"records no {name} (asks {_shown(want)})"
        if not _same(flags[name], redaction.redact(want)):
            return _pair(name, flags[name], want)
    if asks.model_dir:  # every model_dir the record names (flags, config) is the run's
        for named in _model_dirs(record) or [None]:
            if not same_dir(named, asks.model_dir):
                return _pair("model_dir", named, asks.model_dir)
    return _measured(record, asks) or _extra(record, flags, asks)


def line(path: str, asks: Asks, why: str) -> str:
    """The one line naming a record left out: `PATH: labelled LABEL but WHY; left out`."""
    what = f" ({safe_text.shown(asks.what)})" if asks.what else ""
    label = safe_text.shown(asks.label)
    return f"{safe_text.shown(path)}: labelled {label}{what} but {why}; left out"


@dataclasses.dataclass(frozen=True)
class Split:
    """A label's records: those of the run (in the order given) and a line per other."""

    ours: tuple
    left_out: tuple[str, ...]


def split(found: Iterable, asks: Asks) -> Split:
    """FOUND (records.Labelled, or anything with .path and .record) into ASKS' own and the
    lines naming the rest."""
    ours, out = [], []
    for f in found:
        why = differs(f.record, asks)
        if why is None:
            ours.append(f)
        else:
            out.append(line(f.path, asks, why))
    return Split(tuple(ours), tuple(out))


def same_dir(recorded, wanted: str | None) -> bool:
    """RECORDED (a record's model_dir) is the very directory WANTED: gs:// names equal, local
    paths equal once resolved (never one ending like the other)."""
    if not isinstance(recorded, str) or not recorded or not wanted:
        return False
    if gcs.is_gcs(recorded) or gcs.is_gcs(wanted):
        return recorded.rstrip("/") == wanted.rstrip("/")
    return os.path.realpath(recorded) == os.path.realpath(wanted)


def recorded_model_dir(record: Mapping) -> str | None:
    """The model_dir the record says its run wrote (flags, else config), or None."""
    return next((d for d in _model_dirs(record) if isinstance(d, str) and d), None)


def _model_dirs(record: Mapping) -> list:
    """Every model_dir value the record names, in its flags and its config."""
    sections = [record.get(s) for s in ("flags", "config")]
    return [p["model_dir"] for p in sections if isinstance(p, Mapping) and "model_dir" in p]


# ---------------------------------------------------------------- comparing


def _measured(record: Mapping, asks: Asks) -> str | None:
    """What the record says it measured against what the flags and MEASURED ask."""
    f = asks.flags
    model = record.get("model")
    name = model.get("name") if isinstance(model, Mapping) else None
    want = f.get("model")
    named = isinstance(want, str) and "/" not in want and not want.endswith(".py")
    if named and name is not None and name != want:  # a registered name, not a file's path
        return _pair("model", name, want)
    for key in ("batch_size", "per_replica_batch_size"):
        # The record's global_batch_size / per_replica_batch_size: what its steps ran.
        got = record.get("global_batch_size" if key == "batch_size" else key)
        if f.get(key) is not None and got is not None and not _one_of(got, f[key]):
            return _pair(key, got, f[key])
    config = record.get("config")
    got = config.get("precision") if isinstance(config, Mapping) else None
    if f.get("precision") is not None and got is not None and not _same(got, f["precision"]):
        return _pair("precision", got, f["precision"])
    placement = record.get("placement")
    placed = placement if isinstance(placement, Mapping) else {}
    wanted = {"accelerator": f.get("accelerator"), "strategy": f.get("strategy")}
    wanted.update({k: v for k, v in asks.measured.items() if k in ("accelerator", "strategy")})
    for key, value in wanted.items():
        if value in (None, "auto") or placed.get(key) is None:
            continue
        if placed.get(key) != value:
            return _pair(key, placed.get(key), value)
    return _cluster(placed, asks)


def _cluster(placed: Mapping, asks: Asks) -> str | None:
    """A cluster's tasks per role (worker, ps) against what the run asks."""
    roles = {k: v for k, v in asks.measured.items() if k in ("worker", "ps")}
    if not roles:
        return None
    spec = placed.get("cluster")
    if not isinstance(spec, Mapping):
        return "records no cluster (a cluster run asks one)"
    for role, want in roles.items():
        tasks = spec.get(role) or []
        got = len(tasks) if isinstance(tasks, (list, tuple)) else None
        if got != want:
            return f"{role} tasks {_shown(got)} != {want}"
    return None


def _extra(record: Mapping, flags: Mapping, asks: Asks) -> str | None:
    """A flag the record's command line set that the run does not pass."""
    argv = record.get("argv")
    if not isinstance(argv, list):
        return "records no command line (what it ran is unknown)"
    allowed = set(asks.flags) | set(WHERE) | set(asks.others)
    if asks.model_dir:
        allowed.add("model_dir")
    for arg in argv:
        if not isinstance(arg, str) or not arg.startswith("-") or arg in ("-", "--"):
            continue
        name = arg.lstrip("-").split("=", 1)[0]
        if name.startswith("no") and name not in flags and name[2:] in flags:
            name = name[2:]  # --noxla: the flag xla
        if name not in allowed:
            return f"sets {_shown(arg)}, which it does not ask"
    return None


def _pair(name: str, got, want) -> str:
    return f"{_SAID.get(name, name)} {_shown(got)} != {_shown(want)}"


def _shown(value) -> str:
    if isinstance(value, (list, tuple)):
        value = ",".join(str(v) for v in value) or "(none)"
    elif isinstance(value, bool) or value is None:
        value = str(value).lower() if value is not None else "none"
    return safe_text.shown(value, _VALUE_LIMIT)


def _one_of(got, want) -> bool:
    """GOT (one measured batch) is WANT, or one of WANT's values (an infer sweep's list)."""
    values = _items(want) if isinstance(want, (list, tuple, str)) else [want]
    return any(_same(got, v) for v in values)


def _same(got, want) -> bool:
    """GOT (a record's parsed flag) is WANT (the value the run passed), as absl reads it."""
    if isinstance(want, Given):
        return isinstance(got, str) and bool(got) and got.startswith(want.prefix)
    if want is None or got is None:
        return want is None and got is None
    if isinstance(got, (list, tuple)) or isinstance(want, (list, tuple)):
        g = _items(got) if isinstance(got, (list, tuple, str)) else [got]
        w = _items(want) if isinstance(want, (list, tuple, str)) else [want]
        return len(g) == len(w) and all(map(_scalar_same, g, w))
    return _scalar_same(got, want)


def _items(value) -> list:
    """A list flag's values: a list as it is, a string split at its commas (absl's way)."""
    if isinstance(value, str):
        return [x for x in value.split(",")] if value else []
    return list(value)


def _scalar_same(got, want) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        return isinstance(want, bool) and isinstance(got, bool) and want == got
    a, b = _number(got), _number(want)
    if a is not None and b is not None:
        return a == b
    return isinstance(got, str) and isinstance(want, str) and got == want


def _number(value) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None
