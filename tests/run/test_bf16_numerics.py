"""bf16 trains like fp32, with and without XLA (the GPU default for bf16: core/precision.py).

Fifty steps of tpubench's own train loop (run/runner.py) on real images
(scikit-learn's handwritten digits, 64x64), from the same initial weights,
in fp32, bf16, bf16 with 1x1 weight gradients as matrix products (a CPU's
default, run/conv_grads.py) and bf16 with the step compiled by XLA.  The bf16 losses,
as means of 5 steps (one step's loss is noisy), must be within bf16's
tolerance of fp32's over the same steps: 10% of the first-step loss at
every 5-step window (stricter than the late-mean guard by which `tpubench
tune` disqualifies settings, tune/numerics.py).  And the training must have
learned something, so the comparison is not between three flat lines.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from tpubench.core.precision import Precision
from tpubench.data import digits
from tpubench.model import registry
from tpubench.run import runner as runner_lib

STEPS = 50
# How far bf16's loss may drift from fp32's at each of the first STEPS steps, as a
# share of the first-step loss: a per-step bound on one tiny run, not
# Precision.tune_loss_tolerance (tune's bound on a late-loss mean, of the late loss).
BF16_STEP_DRIFT = 0.10
BATCH = 32


def _images():
    images, labels = digits.load_arrays()["train"]
    x = tf.image.resize(tf.image.grayscale_to_rgb(tf.constant(images[:256], tf.float32)), (64, 64))
    return ((x - 8.0) / 4.0).numpy(), labels[:256].astype("int32")


def _runner(precision: str, xla: bool, pointwise_matmul: bool = False):
    spec = registry.get("resnet50")
    params = registry.resolve_params(spec, {"image_size": "64"}, tiny=True)
    params.update(per_replica_batch_size=BATCH, global_batch_size=BATCH, seed=3)
    return runner_lib.Runner(
        spec,
        params,
        tf.distribute.OneDeviceStrategy("/cpu:0"),
        Precision(precision),  # typed, as the CLI edge hands it on
        xla,
        pointwise_matmul=pointwise_matmul,
    )


def _curve(runner, start, images, labels) -> np.ndarray:
    runner.model.set_weights(start)
    ds = tf.data.Dataset.from_tensor_slices((images, labels)).batch(BATCH).repeat()
    it = iter(runner.strategy.experimental_distribute_dataset(ds))
    loop = runner.make_train_loop(lambda: next(it))
    return np.array([float(loop(tf.constant(1))[0]) for _ in range(STEPS)])


def test_fifty_bf16_steps_stay_within_bf16_tolerance_of_fp32_with_and_without_xla():
    images, labels = _images()
    reference = _runner("fp32", False)
    start = reference.model.get_weights()
    fp32 = _curve(reference, start, images, labels)
    bf16 = _curve(_runner("bf16", False), start, images, labels)
    # A CPU's default: 1x1 weight gradients as matrix products (run/conv_grads.py).
    bf16_matmul = _curve(_runner("bf16", False, pointwise_matmul=True), start, images, labels)
    compiled = _runner("bf16", True)
    assert compiled.xla_scope == "step"  # the whole step, update included, as on one GPU
    bf16_xla = _curve(compiled, start, images, labels)

    tol = BF16_STEP_DRIFT * fp32[0]
    assert fp32[-10:].mean() < 0.8 * fp32[:5].mean(), fp32  # it learned
    windows = fp32.reshape(-1, 5).mean(axis=1)  # single steps are noisy: 5-step means
    curves = (("bf16", bf16), ("bf16, 1x1 grads as matmul", bf16_matmul), ("bf16 + XLA", bf16_xla))
    for name, curve in curves:
        assert np.all(np.isfinite(curve)), (name, curve)
        assert not np.allclose(curve, fp32, rtol=0, atol=1e-6), f"{name} ran in fp32"
        gaps = np.abs(curve.reshape(-1, 5).mean(axis=1) - windows)
        worst = int(np.argmax(gaps))
        assert gaps[worst] <= tol, (
            f"{name}: steps {5 * worst + 1}-{5 * worst + 5} mean loss off fp32's by "
            f"{gaps[worst]:.4f}, tolerance {tol:.4f}"
        )
