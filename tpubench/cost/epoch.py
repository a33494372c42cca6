"""One meaning of "epoch": the training split of the dataset the run read, named beside $/epoch.

A run's epoch is the examples it draws from the training split it read
(`run/epochs.examples_per_epoch`: the manifest's count, less records
--skip_corrupt leaves unread).  A run on synthetic batches read no dataset:
its epoch is the size of the model's own dataset (`examples_per_epoch` of
the model), and says so.  So mnist_mlp on the embedded digits has a
1,437-example epoch and on synthetic data (tune's trials) a 60,000-example
one: every $/epoch and time/epoch names which.

Pure Python: train, tune, report, study and advise all word it here.
"""

from __future__ import annotations

SYNTHETIC = "synthetic"


def named(examples: int | None, dataset: str | None, canonical: str | None = None) -> str:
    """'1,437 examples of digits', or '60,000 examples (mnist's size; synthetic data read)'."""
    if not examples:
        return "no epoch size recorded"
    if dataset == SYNTHETIC:
        whose = f"{canonical}'s size" if canonical else "the model's dataset size"
        return f"{examples:,} examples ({whose}; synthetic data read)"
    return f"{examples:,} examples of {dataset or 'an unnamed dataset'}"


def of_record(raw: dict) -> str:
    """'1 epoch = ...' for a train record (a dict)."""
    data = raw.get("data") or {}
    examples = raw.get("examples_per_epoch") or (raw.get("cost") or {}).get("examples_per_epoch")
    return "1 epoch = " + named(examples, data.get("name"), data.get("canonical_dataset"))


def note(epochs: list[tuple[str, int | None, str | None]]) -> str | None:
    """The line beside a table of $/epoch over EPOCHS: (label, examples, dataset) per row.

    One epoch for all: '1 epoch = ...'.  Several: says that their $/epoch
    and time/epoch do not compare, and names each one.
    """
    kinds: dict[tuple, list[str]] = {}
    for label, examples, dataset in epochs:
        if examples:
            kinds.setdefault((examples, dataset), []).append(label)
    if not kinds:
        return None
    if len(kinds) == 1:
        ((examples, dataset),) = kinds
        return "1 epoch = " + named(examples, dataset)
    parts = [f"{', '.join(labels)}: {named(*key)}" for key, labels in kinds.items()]
    return (
        "epochs differ, so time/epoch and $/epoch do not compare across them: 1 epoch = "
        + "; ".join(parts)
    )
