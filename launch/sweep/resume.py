"""Which configurations of a sweep are done: each by records of its own run only.

A configuration's label (`--run_label`) finds the records that claim to
be it; a record counts only when it measured what the configuration asks
(tpubench/storage/record_match.py: its flags, the batch, model, precision,
strategy and devices it ran, a cluster's tasks), whatever label it carries.
Configurations that share a run_label (repeats of one cell) tell their
records apart by model_dir, compared whole (`record_match.same_dir`): a
record in a configuration's own model_dir is that one's; a record
elsewhere (an infer run, which gets none; a run recorded by another
executor, or on a bucket's stand-in) counts for one configuration of its
label that it matches and that is not done yet: the one its model_dir is
named after, else the first.  How a model_dir ends never makes a record
count; it only picks among repeats the record measured alike.  With two of
three repeats recorded, the third still runs.  A record left out is named
in one line.  tune resumes inside: a rerun reuses every trial it recorded,
so it is never done here.
"""

from __future__ import annotations

import dataclasses

from tpubench.storage import record_match, records

# Flags a launcher passes besides a configuration's own: where its results and model
# dir go, its label, the spot basis a cloud executor adds, a TPU executor's --tpu.
LAUNCHER = frozenset(("results_dir", "model_dir", "run_label", "pricing", "tpu"))


@dataclasses.dataclass(frozen=True)
class Resume:
    done: frozenset  # configuration ids with a record of their own
    own: dict  # configuration id -> its records (records.Labelled), oldest start first
    left_out: tuple[str, ...]  # one line per done record that carries a label but no match


def asks(config) -> record_match.Asks:
    """What CONFIG asks of its record: its tpubench flags, and for a cluster the strategy and
    the tasks per role (the launcher adds --strategy to every task)."""
    measured, others = {}, LAUNCHER
    if config.is_cluster:
        measured = {"strategy": config.strategy, "worker": config.workers, "ps": config.ps}
        others = others | {"strategy"}
    what = config.describe()
    if config.id != config.record_label:  # one of the repeats that share the label
        what = f"{config.id}: {what}"
    return record_match.Asks(config.record_label, config.train_flags(), measured, others, what)


def find(results_dir: str, configs, model_dir_of) -> Resume:
    """The Resume of CONFIGS from the records in RESULTS_DIR; MODEL_DIR_OF(config) is the
    model_dir the executor gives it (None: it gets none)."""
    found = records.by_label(results_dir)
    groups: dict[str, list] = {}
    for c in configs:
        if c.command != "tune":
            groups.setdefault(c.record_label, []).append(c)
    own: dict[str, list] = {}
    lines: list[str] = []
    for label, group in groups.items():
        done = [f for f in found.get(label, []) if f.run.status in records.DONE_STATUSES]
        lines += _sort(done, group, model_dir_of, own)
    order = {id(f): i for fs in found.values() for i, f in enumerate(fs)}  # oldest start first
    mine = {k: tuple(sorted(v, key=lambda f: order[id(f)])) for k, v in own.items()}
    return Resume(frozenset(own), mine, tuple(lines))


def _sort(found: list, group: list, model_dir_of, own: dict) -> list[str]:
    """Gives each record of FOUND to the configuration of GROUP it is of (into OWN); returns
    a line per record that is none's."""
    wanted = {c.id: asks(c) for c in group}
    lines, spare = [], []
    for f in found:  # first the records in a configuration's own model_dir
        recorded = record_match.recorded_model_dir(f.record)
        owner = next((c for c in group if record_match.same_dir(recorded, model_dir_of(c))), None)
        if owner is None:
            spare.append(f)
            continue
        why = record_match.differs(f.record, wanted[owner.id])
        if why is None:
            own.setdefault(owner.id, []).append(f)
        else:
            lines.append(record_match.line(f.path, wanted[owner.id], why))
    for f in spare:  # then the others, in file order, each to a configuration it matches
        fits = [c for c in group if record_match.differs(f.record, wanted[c.id]) is None]
        if not fits:
            first = wanted[group[0].id]
            lines.append(record_match.line(f.path, first, record_match.differs(f.record, first)))
            continue
        # Among repeats it measured alike, the one its model_dir is named after, if free (a
        # bucket's stand-in path); else the first free.  The name never makes it count.
        named = _dir_name(record_match.recorded_model_dir(f.record))
        free = [c for c in fits if c.id not in own]
        pick = next((c for c in free if c.id == named), free[0] if free else fits[0])
        own.setdefault(pick.id, []).append(f)
    return lines


def _dir_name(path: str | None) -> str | None:
    return path.rstrip("/").rsplit("/", 1)[-1] if path else None
