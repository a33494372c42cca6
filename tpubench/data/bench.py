"""`tpubench data bench`: the input pipeline alone, as fast as it can go.

The ceiling of a pipeline apart from any model: the model's own input_fn
(the same preprocessing it trains with) is iterated on the host with no
training step, and the steady examples/sec and MB/s of records read are
reported with the host CPU use.  If this ceiling is below what the
accelerator consumes (examples/sec on synthetic data), the run will be
input-bound whatever the accelerator.
"""

from __future__ import annotations

import dataclasses
import time

from tpubench.core import errors
from tpubench.hardware import hostcpu


@dataclasses.dataclass(frozen=True)
class Result:
    examples_per_sec: float
    mb_per_sec: float
    batches: int
    examples: int
    seconds: float
    first_batch_seconds: float
    host_cpu: dict

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def run(
    spec, params: dict, manifest, split: str, batches: int, warmup: int, check=lambda: None
) -> Result:
    """Iterates BATCHES batches (after WARMUP) of SPEC's input_fn over MANIFEST's SPLIT.

    CHECK() runs after every batch: it raises when a stop signal came (the
    handler only notes it, since an exception raised inside TensorFlow's
    Python code as it converts a tensor could crash the process).
    """
    import tensorflow as tf

    from tpubench.model.model_api import Mode

    mode = Mode.TRAIN if split == "train" else Mode.EVAL
    dataset = spec.input_fn(params, None, mode)
    if mode == Mode.EVAL:
        dataset = dataset.repeat()
    bytes_per_example = manifest.split(split).bytes / max(1, manifest.split(split).examples)
    iterator = iter(dataset)
    t0 = time.perf_counter()
    try:
        first = next(iterator)
        first_seconds = time.perf_counter() - t0
        check()
        for _ in range(warmup):
            next(iterator)
            check()
        sampler = hostcpu.Sampler(period=0.25).start()
        examples = 0
        start = time.perf_counter()
        for _ in range(batches):
            features, _labels = next(iterator)
            check()
            examples += int(tf.shape(tf.nest.flatten(features)[0])[0])
        seconds = time.perf_counter() - start
        cpu = sampler.stop()
    except StopIteration:
        raise errors.DataError(
            f"split {split!r} of {manifest.data_dir} ran out after fewer than "
            f"{warmup + batches + 1} batches; lower --batches or --batch_size"
        ) from None
    del first
    rate = examples / seconds if seconds > 0 else float("nan")
    return Result(
        examples_per_sec=rate,
        mb_per_sec=rate * bytes_per_example / 1e6,
        batches=batches,
        examples=examples,
        seconds=seconds,
        first_batch_seconds=first_seconds,
        host_cpu=cpu,
    )
