"""Metric writers behind one interface (CLU's metric_writers shape).

The controller writes per-loop scalars through a `MetricWriter`; JSONL and
TensorBoard implementations live here.  Only the chief process writes.
Metric names are the constants below.
"""

from __future__ import annotations

import abc
import json
import os
import shutil
import tempfile
import time

from tpubench.storage import any_path

MAX_METRICS_BYTES = 1 << 30  # a week of steps logged every loop is tens of MB

LOSS = "train/loss"
EXAMPLES_PER_SEC = "train/examples_per_sec"
STEP_TIME = "train/step_time_sec"
LEARNING_RATE = "train/learning_rate"
MFU = "train/mfu_percent"  # per loop, against the record's peak (written once that is known)
HOST_CPU = "host/cpu_percent"  # system-wide, all cores, the latest sample
EVAL_PREFIX = "eval/"


class MetricWriter(abc.ABC):
    """Writes scalars keyed by step."""

    @abc.abstractmethod
    def write_scalars(self, step: int, scalars: dict[str, float]) -> None: ...

    def write_hparams(self, hparams: dict, trial_id: str = "") -> None:  # noqa: B027
        """The run's configuration (str, bool, int or float values), once; optional."""

    def flush(self, wait: bool = False) -> None:  # noqa: B027 - optional hook
        """Writes what is buffered; WAIT: and returns only once it is written (a writer
        that writes in the background waits for it; others always write before returning)."""

    def close(self) -> None:
        self.flush()


class JsonlWriter(MetricWriter):
    """One JSON object per write: {"step", "time", <scalars>} (local or gs://).

    Local files are appended to, so a flush costs only the new lines.  GCS
    objects cannot be appended to, so on gs:// the whole file is rewritten
    at each flush; the controller flushes once per log period, not per loop.
    """

    def __init__(self, path: str, run_id: str | None = None, keep_through: int | None = None):
        """RUN_ID goes on every line; KEEP_THROUGH: a resumed run drops the lines an
        earlier attempt wrote past the step it resumes from (they are trained again)."""
        import tensorflow as tf

        self._gfile = tf.io.gfile
        self.path = path
        self.run_id = run_id
        if keep_through is not None and self._gfile.exists(path):
            _keep_lines_through(self._gfile, path, keep_through)
        self._remote = "://" in path
        self._lines: list[str] = []  # everything on gs://; only unflushed lines locally
        if self._remote and self._gfile.exists(path):  # resumed run: keep what was written
            self._lines = _lines(path)
        self._pending = 0

    def write_scalars(self, step, scalars):
        row = {"step": int(step), "time": round(time.time(), 3)}
        if self.run_id is not None:
            row["run_id"] = self.run_id
        row.update({k: float(v) for k, v in scalars.items()})
        self._lines.append(json.dumps(row))
        self._pending += 1

    def flush(self, wait=False):
        if not self._pending:
            return
        if self._remote:
            with self._gfile.GFile(self.path, "w") as f:
                f.write("\n".join(self._lines) + "\n")
        else:
            with open(self.path, "a") as f:
                f.write("\n".join(self._lines) + "\n")
            self._lines = []
        self._pending = 0


def _lines(path: str) -> list[str]:
    """The non-empty lines of a metrics file: a gs:// object, or a regular local file."""
    text = any_path.read_text(path, MAX_METRICS_BYTES, "the metrics.jsonl a run writes")
    return [x for x in text.splitlines() if x.strip()]


def _keep_lines_through(gfile, path: str, step: int) -> None:
    lines = _lines(path)
    kept = [x for x in lines if _step_of(x) <= step]
    if len(kept) == len(lines):
        return
    tmp = path + ".purge.tmp"
    with gfile.GFile(tmp, "w") as f:
        f.write("".join(x + "\n" for x in kept))
    gfile.rename(tmp, path, overwrite=True)


def _step_of(line: str) -> float:
    try:
        return int(json.loads(line).get("step"))
    except (ValueError, TypeError, AttributeError):
        return float("inf")  # half a line from a killed run: dropped


def purge_events_past(logdir: str, step: int) -> int:
    """Drops TensorBoard events past STEP from LOGDIR's event files (a resumed run
    writes those steps again; TensorBoard's purge_step).  Returns events dropped."""
    import tensorflow as tf

    dropped = 0
    for path in sorted(tf.io.gfile.glob(logdir.rstrip("/") + "/events.out.tfevents.*")):
        any_path.check_regular(path, "a TensorBoard event file a run writes")
        events = [
            tf.compat.v1.Event.FromString(raw.numpy()) for raw in tf.data.TFRecordDataset(path)
        ]
        kept = [e for e in events if e.step <= step or e.HasField("file_version")]
        if len(kept) == len(events):
            continue
        dropped += len(events) - len(kept)
        tmp = path + ".purge.tmp"
        with tf.io.TFRecordWriter(tmp) as w:
            for e in kept:
                w.write(e.SerializeToString())
        tf.io.gfile.rename(tmp, path, overwrite=True)
    return dropped


class TensorBoardWriter(MetricWriter):
    """Events under LOGDIR.

    On gs:// TensorFlow's event writer uploads the whole events file again at
    every summary written (five per loop here), so the events are written to
    a local staging directory and each flush uploads its files once.
    """

    def __init__(self, logdir: str, purge_past: int | None = None):
        import tensorflow as tf

        if purge_past is not None and tf.io.gfile.isdir(logdir):
            purge_events_past(logdir, purge_past)
        self._tf = tf
        self.logdir = logdir
        self._staging = tempfile.mkdtemp(prefix="tpubench-events-") if "://" in logdir else None
        self._writer = tf.summary.create_file_writer(self._staging or logdir)
        self._uploaded: dict[str, int] = {}  # staged file -> size last uploaded

    def write_scalars(self, step, scalars):
        with self._writer.as_default(step=int(step)):
            for k, v in scalars.items():
                self._tf.summary.scalar(k, float(v))

    def write_hparams(self, hparams, trial_id=""):
        # The HParams dashboard compares runs by these; it infers metrics from the scalars.
        from tensorboard.plugins.hparams import api as hparams_api

        with self._writer.as_default(step=0):
            hparams_api.hparams(hparams, trial_id=trial_id or None)

    def flush(self, wait=False):
        self._writer.flush()
        self._upload()

    def close(self):
        self._writer.close()
        if self._staging is not None:
            try:
                self._upload()
            finally:
                shutil.rmtree(self._staging, ignore_errors=True)
                self._staging = None

    def _upload(self) -> None:
        """The staged events files, each uploaded whole to LOGDIR (when they changed)."""
        if self._staging is None:
            return
        for name in sorted(os.listdir(self._staging)):
            local = os.path.join(self._staging, name)
            size = os.path.getsize(local)
            if self._uploaded.get(name) == size:
                continue
            self._tf.io.gfile.copy(local, self.logdir.rstrip("/") + "/" + name, overwrite=True)
            self._uploaded[name] = size


class MultiWriter(MetricWriter):
    def __init__(self, writers: list[MetricWriter]):
        self.writers = list(writers)

    def write_scalars(self, step, scalars):
        for w in self.writers:
            w.write_scalars(step, scalars)

    def write_hparams(self, hparams, trial_id=""):
        for w in self.writers:
            w.write_hparams(hparams, trial_id)

    def flush(self, wait=False):
        for w in self.writers:
            w.flush(wait)

    def close(self):
        for w in self.writers:
            w.close()


class NullWriter(MetricWriter):
    """For non-chief workers."""

    def write_scalars(self, step, scalars):
        pass
