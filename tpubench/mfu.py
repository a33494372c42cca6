"""Model FLOPs utilisation: FLOPs per example x examples/sec over peak.

FLOPs come from the model's own step graph (TensorFlow's graph profiler on
the traced forward+backward function, multiply and add counted apart);
peaks from a table of published accelerator figures, or, for CPUs, from a
measured matmul probe cached per machine (an achievable peak, not a
datasheet one: say so when reporting).
"""

from __future__ import annotations

import hashlib
import time

from tpubench import cache as cache_lib

# Dense peak TFLOP/s per accelerator (chip or GPU) by precision.  fp32 on
# A100/H100/L4 is the TF32 tensor-core rate TensorFlow uses by default for
# fp32 matmuls; K80 is one GK210 (GCE's "1 GPU").  Sources: vendor datasheets.
PEAK_TFLOPS = {
    "tpu-v2": {"bf16": 45.0, "fp32": 45.0},
    "tpu-v3": {"bf16": 123.0, "fp32": 123.0},
    "tpu-v4": {"bf16": 275.0, "fp32": 275.0},
    "tpu-v5e": {"bf16": 197.0, "fp32": 197.0},
    "tpu-v5p": {"bf16": 459.0, "fp32": 459.0},
    "tpu-v6e": {"bf16": 918.0, "fp32": 918.0},
    "k80": {"fp32": 4.37, "fp16": 4.37, "bf16": 4.37},
    "p100": {"fp32": 9.3, "fp16": 18.7, "bf16": 9.3},
    "v100": {"fp32": 15.7, "fp16": 125.0, "bf16": 15.7},
    "t4": {"fp32": 8.1, "fp16": 65.0, "bf16": 8.1},
    "l4": {"fp32": 60.0, "fp16": 121.0, "bf16": 121.0},
    "a100": {"fp32": 156.0, "fp16": 312.0, "bf16": 312.0},
    "h100": {"fp32": 494.0, "fp16": 989.0, "bf16": 989.0},
}


def accelerator_key(device_name: str) -> str | None:
    """Maps a device description ('Tesla V100-SXM2-16GB', 'TPU v4') to a table key."""
    name = device_name.lower().replace(" ", "")
    for key in sorted(PEAK_TFLOPS, key=len, reverse=True):
        if key.replace("-", "") in name.replace("-", ""):
            return key
    return None


def peak_flops(key: str, precision: str) -> float | None:
    row = PEAK_TFLOPS.get(key)
    return row[precision] * 1e12 if row and precision in row else None


def count_flops(spec, params, batch: int = 2) -> dict:
    """FLOPs per example of the forward pass and of a training step.

    Traces the model's eval and train (loss + gradients) functions on a
    small batch, never executes them, and asks TensorFlow's graph profiler
    for the float operations.
    """
    import keras
    import tensorflow as tf

    from tpubench import recurrent
    from tpubench.model_api import Mode

    # Unrolled, so the profiler sees every time step of recurrent layers.
    model = recurrent.unrolled_copy(spec.build_model(params))
    features_spec, labels_spec = spec.element_spec(params)

    def with_batch(s):
        return tf.TensorSpec([batch, *s.shape], s.dtype)

    def forward(x, y):
        return tf.reduce_sum(spec.model_fn(model, x, y, Mode.EVAL, params).per_example_loss)

    def train(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(spec.model_fn(model, x, y, Mode.TRAIN, params).per_example_loss)
        return tape.gradient(loss, model.trainable_variables)

    options = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
    options["output"] = "none"
    result = {}
    for name, fn in (("forward", forward), ("train", train)):
        concrete = tf.function(fn).get_concrete_function(
            tf.nest.map_structure(with_batch, features_spec), with_batch(labels_spec)
        )
        prof = tf.compat.v1.profiler.profile(graph=concrete.graph, options=options)
        result[f"{name}_flops_per_example"] = prof.total_float_ops / batch
    result["parameters"] = int(sum(v.shape.num_elements() for v in model.trainable_variables))
    keras.backend.clear_session()
    return result


def cpu_peak_flops(cpu_model: str, threads: int, n: int = 2048, repeats: int = 5) -> dict:
    """Best fp32 matmul rate of N^3 products on this CPU, cached per machine.

    The cache key is the CPU model, the intra-op thread count and the TF
    version, so a thread-count sweep gets a peak per setting.
    """
    import tensorflow as tf

    key = hashlib.sha1(f"{cpu_model}|{threads}|{tf.__version__}|{n}".encode()).hexdigest()[:16]
    cache = cache_lib.load_json("cpu_peak.json")
    if key in cache:
        return cache[key] | {"cached": True}
    a = tf.random.normal([n, n])
    b = tf.random.normal([n, n])
    matmul = tf.function(lambda x, y: tf.reduce_sum(tf.matmul(x, y)))
    matmul(a, b).numpy()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        matmul(a, b).numpy()
        best = min(best, time.perf_counter() - start)
    entry = {
        "flops": 2 * n**3 / best,
        "method": f"fp32 matmul {n}^3, best of {repeats}",
        "cpu_model": cpu_model,
        "threads": threads,
    }
    cache[key] = entry
    cache_lib.store_json("cpu_peak.json", cache)
    return entry | {"cached": False}


def hardware_peak(placement, precision: str, num_intra_threads: int, machines=()) -> dict:
    """{"peak_flops", "peak_source"} for what a strategy runs on.

    CPUs: the measured matmul probe at the run's thread count.  GPUs/TPUs:
    the table entry named by the probed device or a `--machine` part, times
    the replicas; None when neither names a known accelerator.
    """
    import os

    from tpubench import probe

    if placement.accelerator == "cpu":
        threads = num_intra_threads or len(os.sched_getaffinity(0))
        peak = cpu_peak_flops(probe.cpu()["model"], threads)
        return {
            "peak_flops": peak["flops"],
            "peak_source": f"measured: {peak['method']} ({threads} threads)",
        }
    names = [a["name"] for a in probe.accelerators(placement)] + list(machines)
    key = next((k for k in map(accelerator_key, names) if k), None)
    peak = peak_flops(key, precision) if key else None
    return {
        "peak_flops": peak * placement.num_replicas if peak else None,
        "peak_source": f"table: {key} {precision}" if key else "unknown accelerator",
    }


def mfu(
    train_flops_per_example: float | None, examples_per_sec: float | None, peak: float | None
) -> float | None:
    if not (train_flops_per_example and examples_per_sec and peak):
        return None
    return train_flops_per_example * examples_per_sec / peak
