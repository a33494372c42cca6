"""Finding corrupted or truncated TFRecord shards, by file and offset.

TensorFlow reports a damaged record as "corrupted record at OFFSET" or
"truncated record at OFFSET" without naming the file once several shards
are interleaved.  `scan` reads each shard on its own (CRCs checked) and
says which file is damaged, where, and how many records before the damage
are good; `--skip_corrupt` trains on those good records and the run record
counts what was skipped.
"""

from __future__ import annotations

import dataclasses
import re

from tpubench.core import errors
from tpubench.data import manifest as manifest_lib

_OFFSET = re.compile(r"(corrupted|truncated) record at (\d+)")


@dataclasses.dataclass(frozen=True)
class Damage:
    file: str
    readable: int  # good records before the damage
    expected: int | None  # records the manifest says the file holds
    kind: str  # corrupted | truncated | unreadable
    offset: int | None
    message: str

    def describe(self) -> str:
        where = f" at byte offset {self.offset}" if self.offset is not None else ""
        return f"{self.kind} TFRecord shard {self.file}{where}"

    @property
    def skipped(self) -> int | None:
        return None if self.expected is None else max(0, self.expected - self.readable)


def scan_file(path: str, expected: int | None = None) -> Damage | None:
    """None when PATH reads cleanly to its end, else what is wrong and where."""
    import tensorflow as tf

    n = 0
    try:
        for _ in tf.data.TFRecordDataset(path, buffer_size=1 << 20):
            n += 1
    except (tf.errors.DataLossError, tf.errors.OpError) as e:
        text = e.message.splitlines()[0] if e.message else type(e).__name__
        m = _OFFSET.search(text)
        kind = m.group(1) if m else "unreadable"
        # TensorFlow wraps the reason in op and device names; keep the reason.
        return Damage(
            path, n, expected, kind, int(m.group(2)) if m else None, m.group(0) if m else text
        )
    if expected is not None and n < expected:
        return Damage(path, n, expected, "truncated", None, f"{n} of {expected} records")
    return None


def scan(manifest: manifest_lib.Manifest, splits=None) -> list[Damage]:
    """Every damaged shard of SPLITS (default: all) of a prepared dataset."""
    found = []
    for name in splits or manifest.splits:
        split = manifest.split(name)
        counts = split.file_examples or (None,) * len(split.files)
        paths = manifest_lib.shard_paths(manifest.data_dir, split.files)
        for path, expected in zip(paths, counts, strict=True):
            damage = scan_file(path, expected)
            if damage:
                found.append(damage)
    return found


def raise_for(damage: list[Damage], data_dir: str) -> None:
    if not damage:
        return
    first = damage[0]
    more = f" (and {len(damage) - 1} more damaged shard(s))" if len(damage) > 1 else ""
    raise errors.DataError(
        f"{first.describe()}{more}: {first.message}; re-prepare {data_dir}, or pass "
        "--skip_corrupt to train on the readable records and count the rest"
    )


def is_data_loss(e: BaseException) -> bool:
    import tensorflow as tf

    return isinstance(e, tf.errors.DataLossError) or bool(
        _OFFSET.search(str(getattr(e, "message", e)))
    )
