"""`tpubench data bench`: a model's input pipeline alone, and its run record.

`bench(cfg, argv, flag_values)` is the whole job, testable without the CLI:
the model's spec and params fitted to the data (run/session.py, as train
and infer fit them), the pipeline timed (data/bench.py), and, when
`--results_dir` is given, a run record of kind `data_bench` written
atomically there (storage/records.py).

The record is asked for, not written by default as train's and infer's
are: `data bench` is a quick look at a pipeline, run where no `runs/`
folder is wanted, and its rate is not a model's.  A study cell
(`command: data_bench`) always passes `--results_dir` and `--run_label`.
Once the run starts, it leaves a record also when it fails or is
interrupted, with the status train and infer use (`ok`, `failed`,
`interrupted`), so a study reruns it as it would a failed train cell.
"""

from __future__ import annotations

import dataclasses
import os

from tpubench.core import errors
from tpubench.core.config import DataBenchConfig, DataConfig
from tpubench.run import interrupts, session
from tpubench.storage import records

KIND = "data_bench"


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What the console shows: the model, the data, the batch and the rates."""

    model: str
    data_dir: str
    data_format: str
    split: str
    batch: int
    result: object  # data.bench.Result
    record_path: str | None


def _base_record(cfg: DataBenchConfig, argv: list, flag_values: dict) -> dict:
    record = session.base_record(
        KIND,
        records.new_run_id(cfg.model),
        cfg.to_dict(),
        session.Invocation(argv, flag_values),
    )
    if cfg.run_label is not None:
        record["run_label"] = cfg.run_label
    return record


def _hardware() -> dict:
    """The host CPU, and the cores this process may run on (a study's pinned vCPUs)."""
    from tpubench.hardware import probe

    cpu = probe.cpu()
    if hasattr(os, "sched_getaffinity"):
        cpu["pinned_cores"] = sorted(os.sched_getaffinity(0))
    return {"cpu": cpu}


def bench(cfg: DataBenchConfig, argv: list, flag_values: dict) -> Outcome:
    """Times the model's input pipeline over cfg.data_dir; writes a record into
    cfg.results_dir when it is given.

    Raises:
      TpubenchError: bad data, a pipeline that ran out; with a record, the
        error carries its path (`record_path`).
      InterruptedRun: SIGINT/SIGTERM/SIGHUP during the run.
    """
    record = _base_record(cfg, argv, flag_values) if cfg.results_dir else None
    try:
        with interrupts.interruptible() as received:
            received.defer()  # noted, raised between batches (data/bench.py)
            outcome = _run(cfg, record, received.check)
        if record is not None:
            record["status"] = "ok"
    except BaseException as e:
        stopped = None
        if interrupts.is_interrupt(e):  # Ctrl-C, SIGTERM, SIGHUP: exit 130, as train's
            cause = str(e) or "SIGINT"
            stopped = errors.InterruptedRun(f"interrupted ({cause}) before the timed batches ended")
        if record is None:
            if stopped is not None:
                raise stopped from None
            raise
        if stopped is not None:
            record["status"], record["error"] = "interrupted", str(stopped)
        else:
            record["status"], record["error"] = session.outcome(e)
        record["finished"] = records.now_iso()
        try:
            path = records.write(record, cfg.results_dir)
        except errors.TpubenchError:  # the run's own error stays the one line
            path = None
        error = stopped or e
        if isinstance(error, errors.TpubenchError):
            error.record_path = path
            raise error from None
        raise
    if record is None:
        return outcome
    record["finished"] = records.now_iso()
    path = records.write(record, cfg.results_dir)
    return dataclasses.replace(outcome, record_path=path)


def _run(cfg: DataBenchConfig, record: dict | None, check=lambda: None) -> Outcome:
    from tpubench.data import bench as bench_lib
    from tpubench.data import manifest as manifest_lib
    from tpubench.hardware import probe

    ref = session.ModelRef(cfg.model, tuple(cfg.params), cfg.tiny, cfg.model_modules)
    spec, params = session.load_spec(ref)
    manifest = manifest_lib.read(cfg.data_dir)
    split = cfg.split or "train"
    if split == "eval":
        split = manifest.eval_split()
    manifest.split(split)
    batch = cfg.batch_size or spec.default_batch_size
    data = DataConfig(
        data_dir=cfg.data_dir,
        deterministic=cfg.deterministic,
        cache=cfg.cache,
        read_mb_per_s=cfg.read_mb_per_s,
    )
    feed = session.Feed(batch, 1, cfg.seed, data)
    params = session.fit_params(params, ref, manifest, feed, cfg.data_dir)
    if record is not None:  # what ran, before it runs: a failed record says it too
        record.update(
            global_batch_size=batch,
            per_replica_batch_size=batch,  # one input pipeline, as one replica reads it
            model={"name": spec.name, "params": session.recorded_params(params)},
            data={
                "name": manifest.name,
                "format": manifest.format,
                "fingerprint": manifest.fingerprint,
                "data_dir": cfg.data_dir,
                "split": split,
                "read_mb_per_s": cfg.read_mb_per_s,
            },
            hardware=_hardware(),
            software=probe.software(),
        )
    try:
        result = bench_lib.run(spec, params, manifest, split, cfg.batches, cfg.warmup, check)
    except Exception as e:  # a damaged shard: name the file, as train does
        from tpubench.data import resolve

        named = resolve.damaged_shards(manifest, e)
        if named is None:
            raise
        raise named from None
    if record is not None:
        record["results"] = result.to_dict()
    return Outcome(spec.name, cfg.data_dir, manifest.format, split, batch, result, None)
