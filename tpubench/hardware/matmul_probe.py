"""Matmul probes: the FLOP/s a CPU or a GPU reaches in one precision, measured now.

`peaks` caches the CPU figures and judges them; this module only times.
"""

from __future__ import annotations

import statistics
import time

from tpubench.core.precision import Precision


def cpu(tf, n: int, trials: int, precision: str) -> dict:
    """The faster of two shapes, each `trials` times: one n^3 product, and a
    batch of eight (n/2)^3 ones in one op (the same FLOPs, in cache; one op, so
    only the intra-op threads being probed run it).

    Each product is read at one element, so the timing is the products' own
    (summing a whole 2048^2 bf16 product took a fifth of the call on AMX).
    On a 2-vCPU AMX Xeon the batch of bf16 products ran at about 1.41
    TFLOP/s against 1.26 for one 2048^3; in fp32 the two were level.
    """
    dtype = tf.as_dtype(precision.compute_dtype)

    def shape(size: int, count: int):
        lhs = tf.cast(tf.random.normal([count, size, size] if count > 1 else [size, size]), dtype)
        rhs = tf.cast(tf.random.normal([size, size]), dtype)
        first = tf.function(lambda x, y: tf.cast(tf.reshape(tf.matmul(x, y), [-1])[0], tf.float32))
        first(lhs, rhs).numpy()  # trace and warm up
        times = []
        for _ in range(trials):
            start = time.perf_counter()
            first(lhs, rhs).numpy()
            times.append(time.perf_counter() - start)
        return 2 * count * size**3 / min(times), statistics.median(times) / min(times)

    shapes = {f"{n}^3": (n, 1), f"8 x {n // 2}^3": (n // 2, 8)}
    measured = {label: shape(*dims) for label, dims in shapes.items()}
    best, other = sorted(measured, key=lambda label: -measured[label][0])
    flops, spread = measured[best]
    return {
        "flops": flops,
        "method": f"{precision} matmul {best}, faster than {other}, best of {trials} trials",
        "trials": trials,
        "spread": round(spread, 3),
    }


def gpu(precision: Precision = Precision.BF16, n: int = 8192, iters: int = 20) -> dict | None:
    """Measured matmul FLOP/s on the first visible GPU at `precision`; None without a GPU.

    fp32 runs TF's default math (TF32 on Ampere and later).  Timed over
    `iters` back-to-back matmuls after a warm-up, so launch overhead is small.
    """
    import tensorflow as tf

    if not tf.config.list_physical_devices("GPU"):
        return None
    dtype = tf.as_dtype(precision.compute_dtype)
    with tf.device("/GPU:0"):
        a = tf.cast(tf.random.normal([n, n]), dtype)
        b = tf.cast(tf.random.normal([n, n]), dtype)

        @tf.function
        def many(x, y):
            acc = tf.zeros([], tf.float32)
            for _ in tf.range(iters):
                acc += tf.cast(tf.matmul(x, y)[0, 0], tf.float32)
            return acc

        many(a, b).numpy()
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            many(a, b).numpy()
            best = min(best, time.perf_counter() - start)
    return {
        "flops": 2 * n**3 * iters / best,
        "method": f"{precision} matmul {n}^3 x {iters} on the GPU, best of 3",
        "precision": precision,
    }
