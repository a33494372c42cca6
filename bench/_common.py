"""What bench/_keras_fit.py and bench/_minimal_loop.py share with tpubench.

Both helpers build exactly what `tpubench train --use_synthetic_data` builds:
the registered model's default hyperparameters plus the runner's keys
(batch size, seed), its optimizer, and the one synthetic global batch drawn
by `tpubench.data.synthetic` with the same seed.  Thread pools are set the
way tpubench's `--num_intra_threads/--num_inter_threads` set them, before
TensorFlow runs any op.  Each helper prints one `OVERHEAD_RESULT {json}` line.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

RESULT_MARK = "OVERHEAD_RESULT "


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--model", required=True, help="tpubench registry name")
    p.add_argument("--batch_size", type=int, required=True, help="global batch")
    p.add_argument("--steps", type=int, required=True, help="steps to run in all")
    p.add_argument(
        "--warmup_steps", type=int, required=True, help="leading steps excluded from the rate"
    )
    p.add_argument("--seed", type=int, default=42, help="tpubench's --seed default")
    p.add_argument("--num_intra_threads", type=int, default=0)
    p.add_argument("--num_inter_threads", type=int, default=0)
    return p


def configure_threads(intra: int, inter: int) -> None:
    """As tpubench.hardware.strategy.configure_host: set pools only when asked to."""
    import tensorflow as tf

    if intra:
        tf.config.threading.set_intra_op_parallelism_threads(intra)
    if inter:
        tf.config.threading.set_inter_op_parallelism_threads(inter)


def build(model_name: str, batch: int, seed: int, precision: str = "fp32"):
    """(spec, params, model, optimizer, (features, labels) numpy) as tpubench builds them.

    PRECISION sets the Keras mixed-precision policy for the model, as
    tpubench's runner does (fp32, bf16 = mixed_bfloat16, fp16 = mixed_float16).
    """
    import keras

    from tpubench.data import synthetic
    from tpubench.model import registry
    from tpubench.run.runner import POLICIES

    spec = registry.get(model_name)
    params = registry.resolve_params(spec, {})
    # The keys tpubench's controller adds for a one-replica synthetic run.
    params.update(
        batch_size=batch,
        global_batch_size=batch,
        seed=seed,
        data_dir=None,
        deterministic=False,
        cache=False,
        drop_remainder_eval=False,
    )
    keras.utils.set_random_seed(seed)
    keras.mixed_precision.set_global_policy(POLICIES[precision])
    model = spec.build_model(params)
    optimizer = spec.build_optimizer(params)
    keras.mixed_precision.set_global_policy("float32")
    data = synthetic.global_batch(spec.element_spec(params), params, batch, seed)
    return spec, params, model, optimizer, data


def steady_rate(step_end_times: list[float], warmup_steps: int, batch: int) -> dict:
    """Examples/sec over the steps after WARMUP_STEPS, from per-step end times."""
    n = len(step_end_times)
    w = min(max(1, warmup_steps), n - 1)
    seconds = step_end_times[-1] - step_end_times[w - 1]
    steps = n - w
    gaps = [b - a for a, b in zip(step_end_times[w - 1 : -1], step_end_times[w:], strict=True)]
    gaps.sort()
    return {
        "examples_per_sec": steps * batch / seconds if seconds > 0 else None,
        "measured_steps": steps,
        "measured_seconds": seconds,
        "warmup_steps": w,
        "warmup_span_seconds": step_end_times[w - 1] - step_end_times[0],
        "step_time_median": gaps[len(gaps) // 2] if gaps else None,
    }


def emit(result: dict, t_process_start: float) -> None:
    result["process_seconds"] = round(time.perf_counter() - t_process_start, 3)
    result["peak_rss_gib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3)
    result["pid"] = os.getpid()
    sys.stdout.write(RESULT_MARK + json.dumps(result) + "\n")
    sys.stdout.flush()
