"""Runs -> configurations (model x machine x configuration), labels, honest checks.

Runs whose every dimension matches are repeated trials of one
configuration.  Within one model, a comparison only means something when the
network (its parameters) is the same: a faster number from a smaller network
is not a faster machine, so `check_comparable` refuses such mixes unless the
user asks for them.  Batch size and precision are configuration axes like
threads and machines (sweeps vary them on purpose): they show in the labels
and come back as notes saying what they change.
"""

from __future__ import annotations

import dataclasses

from tpubench.core import errors
from tpubench.report import load

# Every dimension of a configuration, in the order labels show them.
DIMENSIONS = (
    "model",
    "machine",
    "kind",
    "dataset",
    "params",
    "tiny",
    "batch",
    "per_replica_batch",
    "precision",
    "optimizer",
    "xla",
    "accelerator",
    "strategy",
    "replicas",
    "workers",
    "all_reduce",
    "threads",
    "inter_threads",
    "cpu_kernels",
    "steps_per_loop",
    "latency_bound",
)
MIXABLE = ("params", "batch_size", "precision")
# Shown as "name=value" in labels; machine and model show their value alone.
_SHORT = {
    "batch": "global batch",
    "per_replica_batch": "batch/replica",
    "steps_per_loop": "loop",
    "inter_threads": "inter",
    "cpu_kernels": "kernels",
    "latency_bound": "bound",
}


@dataclasses.dataclass
class Group:
    """Repeated trials of one configuration."""

    dims: dict
    runs: list[load.Run]
    label: str = ""

    @property
    def model(self) -> str:
        return self.dims["model"]


def _sort_key(dims: dict):
    return tuple((str(type(dims[d])), dims[d]) for d in DIMENSIONS)


def group(runs: list[load.Run]) -> list[Group]:
    """Groups runs by every dimension; returns groups sorted and labelled."""
    by_key: dict[tuple, Group] = {}
    for run in runs:
        key = tuple((d, run.dims.get(d)) for d in DIMENSIONS)
        by_key.setdefault(key, Group(dict(key), [])).runs.append(run)
    groups = sorted(by_key.values(), key=lambda g: _sort_key(g.dims))
    _label(groups)
    return groups


def varying(groups: list[Group]) -> list[str]:
    """The dimensions whose value differs between GROUPS."""
    return [d for d in DIMENSIONS if len({repr(g.dims[d]) for g in groups}) > 1]


# Shown in labels when they vary; the others only when no shown dimension
# already determines them (inter-op threads follow intra-op ones in a vCPU
# sweep; strategy, all-reduce and the global batch follow the replica count).
_PRIMARY = (
    "dataset",
    "tiny",
    "precision",
    "optimizer",
    "xla",
    "accelerator",
    "replicas",
    "workers",
    "threads",
    "steps_per_loop",
)


# A global batch that grows with the device or worker count is weak scaling
# and follows from the count; any other change of batch is shown.
_BATCH_FOLLOWS = ("replicas", "workers")


def _label(groups: list[Group]) -> None:
    """model · machine · what else varies among the model's configurations."""
    for model in dict.fromkeys(g.model for g in groups):
        mine = [g for g in groups if g.model == model]
        vary = [d for d in varying(mine) if d not in ("model", "machine", "params", "kind")]
        shown = [d for d in vary if d in _PRIMARY]
        for d in vary:  # in DIMENSIONS order: the batch before the batch per replica
            if d in _PRIMARY:
                continue
            by = [b for b in shown if b in _BATCH_FOLLOWS] if d == "batch" else shown
            if not _determined(mine, d, by):
                shown.append(d)
        shown.sort(key=DIMENSIONS.index)
        for g in mine:
            parts = [g.model, str(g.dims["machine"])]
            for d in shown:
                if d == "tiny":
                    parts.append("tiny" if g.dims[d] else "full")
                else:
                    parts.append(f"{_SHORT.get(d, d)}={_value_text(d, g.dims[d])}")
            parts += _params_diff(g, mine)
            g.label = " · ".join(parts)


def _determined(groups: list[Group], dim: str, by: list[str]) -> bool:
    """True when the dimensions BY (non-empty) fix the value of DIM in GROUPS."""
    if not by:
        return False
    seen: dict[tuple, set] = {}
    for g in groups:
        seen.setdefault(tuple(repr(g.dims[b]) for b in by), set()).add(repr(g.dims[dim]))
    return all(len(v) == 1 for v in seen.values())


def _value_text(dim: str, value) -> str:
    if dim == "threads" and value == 0:
        return "default"
    return str(value)


def _params_diff(g: Group, same_model: list[Group]) -> list[str]:
    """The model params of G that differ between the groups of its model."""
    mine = g.runs[0].params
    keys = sorted({k for h in same_model for k in h.runs[0].params})
    differing = [k for k in keys if len({repr(h.runs[0].params.get(k)) for h in same_model}) > 1]
    return [f"{k}={mine.get(k)}" for k in differing]


def check_comparable(
    groups: list[Group], allow: tuple[str, ...] = (), hint: str = "--allow_mixed={mix}"
) -> list[str]:
    """Raises UsageError when runs of one model differ in network (model params).

    ALLOW names the mixes the user asked for ('params'; 'batch_size' and
    'precision' are accepted and compared by default); an allowed network
    mix comes back as a note.  Runs that differ in batch size or precision
    are configurations of their own: each such difference comes back as a
    note saying what it changes.  A batch differs only when both the global
    and the per-replica batch differ (scaling studies keep the per-replica
    batch fixed).  HINT says how to ask ({mix} is the mix's name).
    """
    bad = [a for a in allow if a not in MIXABLE]
    if bad:
        raise errors.unknown("--allow_mixed value", bad[0], MIXABLE)
    notes = []
    for model in sorted({g.model for g in groups}):
        mine = [g for g in groups if g.model == model]
        if len(_counts(mine, "params")) > 1:
            _refuse_or_note(
                model,
                "model parameters",
                _diff_text(mine),
                "their throughputs measure different networks",
                "params",
                allow,
                notes,
                hint,
            )
        if batch_differs(mine):
            notes.append(
                f"{model} runs differ in batch size ({_values_text(_counts(mine, 'batch'))}); "
                "compared as configurations: throughput and cost per example depend on the "
                "batch, and so can convergence (time and $ to a target accuracy)"
            )
        if len(_counts(mine, "precision")) > 1:
            notes.append(
                f"{model} runs differ in precision "
                f"({_values_text(_counts(mine, 'precision'))}); compared as configurations: "
                "numerics change both speed and accuracy"
            )
    return notes


def batch_differs(groups: list[Group]) -> bool:
    """True when GROUPS differ in both the global and the per-replica batch."""
    return len(_counts(groups, "batch")) > 1 and len(_counts(groups, "per_replica_batch")) > 1


def _refuse_or_note(model, what, shown, why, allowed_as, allow, notes, hint):
    if allowed_as in allow:
        notes.append(f"{model} runs differ in {what} ({shown}); compared as asked")
        return
    raise errors.UsageError(
        f"{model} runs differ in {what} ({shown}): {why}; select runs that agree"
        + (f", or pass {hint.format(mix=allowed_as)} to compare them anyway" if hint else "")
    )


def _counts(groups: list[Group], dim: str) -> dict:
    out: dict = {}
    for g in groups:
        out[g.dims[dim]] = out.get(g.dims[dim], 0) + len(g.runs)
    return out


def _values_text(counts: dict) -> str:
    return ", ".join(f"{v} in {n} run{'s' * (n != 1)}" for v, n in counts.items())


def _diff_text(groups: list[Group]) -> str:
    """Only the params that differ, e.g. 'hidden_units=32 in 2 runs, hidden_units=512 in 3 runs'."""
    keys = sorted({k for g in groups for k in g.runs[0].params})
    diff = [k for k in keys if len({repr(g.runs[0].params.get(k)) for g in groups}) > 1]
    counts: dict = {}
    for g in groups:
        text = ",".join(f"{k}={g.runs[0].params.get(k)}" for k in diff)
        counts[text] = counts.get(text, 0) + len(g.runs)
    hint = "; --tiny runs use smaller networks" if any(g.dims["tiny"] for g in groups) else ""
    return _values_text(counts) + hint


def select(groups: list[Group], selector: str) -> dict[str, Group]:
    """The baseline group of each model matching SELECTOR (a label, or 'dim=value,dim=value').

    Models with no matching group are left out.  A selector matching two
    groups of one model is ambiguous: UsageError naming them.
    """
    by_label = [g for g in groups if g.label == selector or g.label.endswith(" · " + selector)]
    conditions = None if by_label else _parse_selector(selector)
    out: dict[str, Group] = {}
    for g in groups:
        if conditions is None and g not in by_label:
            continue
        if conditions is not None and not all(_matches(g, d, v) for d, v in conditions):
            continue
        if g.model in out:
            raise errors.UsageError(
                f"--baseline={selector} matches several {g.model} configurations "
                f"({out[g.model].label!r} and {g.label!r}); add conditions, e.g. "
                f"--baseline={selector},machine=..."
            )
        out[g.model] = g
    if not out:
        labels = "; ".join(g.label for g in groups[:8])
        raise errors.UsageError(
            f"--baseline={selector} matches no configuration; configurations: {labels}"
        )
    return out


def _parse_selector(selector: str):
    if "=" not in selector:
        return None
    out = []
    for part in selector.split(","):
        dim, sep, value = part.partition("=")
        dim = {"batch_size": "batch", "intra_threads": "threads"}.get(dim.strip(), dim.strip())
        if not sep or dim not in DIMENSIONS:
            raise errors.unknown("--baseline dimension", dim, DIMENSIONS)
        out.append((dim, value.strip()))
    return out


def _matches(g: Group, dim: str, value: str) -> bool:
    have = g.dims[dim]
    if dim == "threads" and value == "default":
        return have == 0
    if isinstance(have, bool):
        return value.lower() in (("true", "1", "yes") if have else ("false", "0", "no"))
    return str(have) == value
