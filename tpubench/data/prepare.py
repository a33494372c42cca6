"""`tpubench data prepare`: a source -> sharded TFRecords + manifest.json.

Local output is written in place with the manifest last, so a directory
with a manifest is complete.  gs:// output is staged on local disk (under
the user cache's `staging/`, or $TPUBENCH_CACHE's) and uploaded with
google-cloud-storage, each object carrying metadata (dataset, split,
examples, fingerprint), again with the manifest last.  The report
gives the preprocessing time and MB/s: the I/O-bound stage of the studies.
A staging directory is removed on exit, also on SIGTERM and Ctrl-C; one left
by a process killed outright (SIGKILL, power loss) is removed by the next
`prepare`, with a line saying so.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import shutil
import signal
import sys
import tempfile
import threading
import time

from tpubench.core import errors
from tpubench.data import manifest as manifest_lib
from tpubench.data import source_api, sources, tfrecord
from tpubench.storage import cache, gcs
from tpubench.storage.liveness import pid_alive


@dataclasses.dataclass(frozen=True)
class Report:
    manifest: manifest_lib.Manifest
    seconds: float
    upload_seconds: float
    bytes: int
    examples: int

    @property
    def mb_per_sec(self) -> float:
        return self.bytes / 1e6 / self.seconds if self.seconds > 0 else float("nan")

    def lines(self) -> list[str]:
        m = self.manifest
        out = [f"prepared {m.name!r} ({m.format}) in {m.data_dir}"]
        for name, split in m.splits.items():
            out.append(
                f"  {name:<10} {split.examples:>9,} examples  {len(split.files):>4} files  "
                f"{split.bytes / 1e6:>9.2f} MB"
            )
        rate = self.examples / self.seconds if self.seconds > 0 else float("nan")
        out.append(
            f"  preprocessing {self.seconds:.2f} s: {rate:,.0f} examples/s, "
            f"{self.mb_per_sec:.2f} MB/s written"
            + (f"; upload {self.upload_seconds:.2f} s" if self.upload_seconds else "")
        )
        out.append(f"  fingerprint {m.fingerprint}")
        return out


def _shards_for(split: str, requested: int | None, examples_hint: int | None) -> int:
    if requested:
        return requested
    if split != "train":
        return 1 if (examples_hint or 0) < 10_000 else 8
    return 4 if (examples_hint or 0) < 100_000 else 64


def prepare(
    dataset: str,
    output: str,
    options: source_api.Options,
    num_shards: int | None = None,
    overwrite: bool = False,
) -> Report:
    import tensorflow as tf

    _check_output(output, overwrite)
    text = _text_preparer(dataset)
    if text is not None:  # token data: the text preparers write their own layout
        start = time.perf_counter()
        manifest = text(output, options.source_dir)
        seconds = time.perf_counter() - start
        size = sum(s.bytes for s in manifest.splits.values())
        count = sum(s.examples for s in manifest.splits.values())
        return Report(manifest, seconds, 0.0, size, count)
    src = sources.get(dataset, options)
    start = time.perf_counter()
    staging = _new_staging() if gcs.is_gcs(output) else None
    target = staging or output
    restore = _sigterm_raises() if staging else None
    try:
        tf.io.gfile.makedirs(target)
        splits, digest, total_bytes, total_examples = {}, hashlib.sha256(), 0, 0
        for split, records in src.splits.items():
            writer = tfrecord.ShardWriter(target, split, _shards_for(split, num_shards, None))
            for record in records():
                writer.write(record)
            names, counts, size, sha = writer.close()
            if sum(counts) == 0:
                raise errors.DataError(f"{dataset}: split {split!r} produced no examples")
            digest.update(f"{split}:{sha}".encode())
            splits[split] = manifest_lib.Split(sum(counts), names, size, counts)
            total_bytes += size
            total_examples += sum(counts)
        seconds = time.perf_counter() - start
        manifest = manifest_lib.Manifest(
            name=src.name,
            format=src.format,
            image_shape=tuple(src.image_shape),
            num_classes=src.num_classes,
            splits=splits,
            fingerprint="sha256:" + digest.hexdigest(),
            source=src.source,
            prepare_seconds=round(seconds, 3),
            data_dir=output,
        )
        upload_seconds = 0.0
        if staging:
            t0 = time.perf_counter()
            _upload(staging, output, manifest)
            upload_seconds = time.perf_counter() - t0
        else:
            manifest_lib.write(output, manifest)  # last: its presence means complete
    finally:
        if staging:
            shutil.rmtree(staging, ignore_errors=True)
        if restore is not None:
            restore()
    return Report(manifest, seconds, upload_seconds, total_bytes, total_examples)


STAGING = "staging"


def _new_staging() -> str:
    """A fresh staging directory `prepare-PID-*`, after removing those of dead processes."""
    root = cache.path(STAGING)
    os.makedirs(root, exist_ok=True)
    for name in sorted(os.listdir(root)):
        parts = name.split("-")
        if len(parts) < 3 or parts[0] != "prepare" or not parts[1].isdigit():
            continue
        if pid_alive(int(parts[1])):
            continue
        path = os.path.join(root, name)
        size = _tree_bytes(path)
        shutil.rmtree(path, ignore_errors=True)
        print(
            f"removed stale staging directory {path} ({size / 1e6:,.1f} MB) "
            f"left by process {parts[1]}, which is gone",
            file=sys.stderr,
            flush=True,
        )
    return tempfile.mkdtemp(prefix=f"prepare-{os.getpid()}-", dir=root)


def _tree_bytes(path: str) -> int:
    total = 0
    for parent, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.path.getsize(os.path.join(parent, name))
    return total


class Terminated(KeyboardInterrupt):
    """SIGTERM while staging: unwinds like Ctrl-C so `finally` removes the staging dir."""


def _sigterm_raises():
    """Makes SIGTERM raise Terminated (main thread only); returns the function that restores it."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one must not cut cleanup short
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, handler)
    return lambda: signal.signal(signal.SIGTERM, previous)


def _text_preparer(dataset: str):
    from tpubench.data import text_sources

    return text_sources.PREPARERS.get(dataset)


def text_kinds() -> dict[str, str]:
    """Text datasets `prepare` accepts, with the first line of their description."""
    from tpubench.data import text_sources

    return {
        name: (fn.__doc__ or "").strip().splitlines()[0].rstrip(".")
        if fn.__doc__
        else "text dataset"
        for name, fn in sorted(text_sources.PREPARERS.items())
    }


def _check_output(output: str, overwrite: bool) -> None:
    import tensorflow as tf

    if gcs.is_gcs(output):
        gcs.check_access(output, write=True)
    path = manifest_lib.join(output, manifest_lib.MANIFEST)
    try:
        exists = tf.io.gfile.exists(path)
    except tf.errors.OpError as e:
        raise errors.DataError(f"cannot read {output}: {e.message.splitlines()[0]}") from None
    if exists and not overwrite:
        raise errors.UsageError(
            f"--output={output} already holds a prepared dataset (manifest.json); "
            "pass --overwrite to replace it, or choose another --output"
        )


def _upload(staging: str, output: str, manifest: manifest_lib.Manifest) -> None:
    """Uploads shards with metadata, then the manifest (readers look for it last)."""
    for split_name, split in manifest.splits.items():
        for name, count in zip(split.files, split.file_examples, strict=True):
            gcs.upload_file(
                os.path.join(staging, name),
                manifest_lib.join(output, name),
                {
                    "tpubench-dataset": manifest.name,
                    "tpubench-split": split_name,
                    "tpubench-examples": count,
                    "tpubench-format": manifest.format,
                    "tpubench-fingerprint": manifest.fingerprint,
                },
            )
    gcs.write_bytes(
        manifest_lib.join(output, manifest_lib.MANIFEST),
        manifest_lib.to_json(manifest).encode(),
        "application/json",
        {"tpubench-dataset": manifest.name, "tpubench-fingerprint": manifest.fingerprint},
    )
