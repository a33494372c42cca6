"""A train run's model_dir, local or gs://: every file a run keeps there, named once.

A run's directory holds its checkpoints, TensorBoard events, `metrics.jsonl`,
the model it trains (`model.json`),
the lock that keeps a second run out, a scratch copy per cluster worker and
the synthetic twin of `--compare_synthetic`.  Both kinds of location join
with "/" (POSIX paths and object names alike), so no caller spells a join.
"""

from __future__ import annotations

import dataclasses

from tpubench.storage import gcs

CHECKPOINTS = "checkpoints"
TENSORBOARD = "tensorboard"
METRICS = "metrics.jsonl"
COMPARE_SYNTHETIC = "compare-synthetic"
MODEL = "model.json"


@dataclasses.dataclass(frozen=True)
class RunDir:
    """One model_dir.  `path` is as the user gave it (the record keeps that spelling)."""

    path: str

    @classmethod
    def of(cls, path: str | RunDir) -> RunDir:
        if isinstance(path, RunDir):
            return path
        return cls(path)

    @classmethod
    def for_run(cls, model_dir: str | None, results_dir: str, run_id: str) -> RunDir:
        """--model_dir when given, else RESULTS_DIR/RUN_ID beside the run's record."""
        return cls.of(model_dir or results_dir.rstrip("/") + "/" + run_id)

    def join(self, *names: str) -> str:
        """PATH/NAME/...: a file or directory under this run's directory."""
        return "/".join((self.path.rstrip("/"), *names))

    @property
    def checkpoints(self) -> str:
        """Where the run's checkpoints are kept (the chief's, in a cluster)."""
        return self.join(CHECKPOINTS)

    @property
    def tensorboard(self) -> str:
        """TensorBoard events and the profiler's traces."""
        return self.join(TENSORBOARD)

    @property
    def metrics(self) -> str:
        """metrics.jsonl: one line per step."""
        return self.join(METRICS)

    @property
    def model_file(self) -> str:
        """model.json: the model trained here, for infer, tune and rerun (model/remembered.py)."""
        return self.join(MODEL)

    @property
    def compare_synthetic(self) -> RunDir:
        """The synthetic twin's own directory (--compare_synthetic)."""
        return RunDir(self.join(COMPARE_SYNTHETIC))

    def worker_scratch(self, pid: int) -> str:
        """A non-chief worker's checkpoint copy (collectives need one; removed at the end)."""
        return self.join(f".worker-{pid}")

    @property
    def is_gcs(self) -> bool:
        return gcs.is_gcs(self.path)

    def same(self, other: str | None) -> bool:
        """Whether OTHER (a recorded model_dir) names this directory."""
        return isinstance(other, str) and other.rstrip("/") == self.path.rstrip("/")

    def __str__(self) -> str:
        return self.path
