"""The bias and ReLU gradient in one pass (`TpubenchBiasReluGrad`, `cpu_ops.bias_relu`).

The kernel gives TensorFlow's `ReluGrad` bit for bit and the bias gradient
as the fp32 sum of it, rounded once (so bf16 sums are within bf16's
rounding of the exact sum, where TensorFlow's bf16 `BiasAddGrad` on a CPU
is not); `layers.Conv2D` and `layers.Dense` take it only where they were
built for it (bf16, a bias and a ReLU, channels-last, tpubench's kernels
chosen), and then train as Keras' layers do: the same gradients, and a
tiny bf16 mnist_cnn along the same loss curve in tpubench's train loop.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from tpubench.core.precision import Precision
from tpubench.model import cpu_ops, layers, own_kernels

pytestmark = pytest.mark.skipif(not cpu_ops.available()[0], reason="no C++ compiler here")

# Rows that fill several 128-row blocks with a ragged tail, one row, none; rank 2 to 4.
SHAPES = [(3, 5, 7, 33), (300, 130), (1, 9), (2, 0, 4), (129, 3)]


def _pair(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    dy = tf.cast(rng.standard_normal(shape).astype("float32"), dtype)
    y = tf.cast(np.maximum(rng.standard_normal(shape), 0).astype("float32"), dtype)
    return dy, y


def _exact_sum(dz):
    dz = tf.cast(dz, tf.float64).numpy()
    return dz.reshape(-1, dz.shape[-1]).sum(axis=0)


@pytest.mark.parametrize("dtype", [tf.float32, tf.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_relu_grad_bit_for_bit_and_the_bias_sum_to_rounding(shape, dtype):
    dy, y = _pair(shape, dtype)
    dz, db = cpu_ops.load().tpubench_bias_relu_grad(dy=dy, y=y)
    want = tf.raw_ops.ReluGrad(gradients=dy, features=y)
    assert dz.dtype == dtype and db.dtype == dtype and db.shape == (shape[-1],)
    np.testing.assert_array_equal(tf.cast(dz, tf.float32), tf.cast(want, tf.float32))
    exact = _exact_sum(want)
    got = tf.cast(db, tf.float64).numpy()
    # One rounding of an fp32 sum: within half a unit in the last place of bf16 (2**-9)
    # or a few of fp32's.
    rtol = 2.0**-8 if dtype == tf.bfloat16 else 1e-5
    np.testing.assert_allclose(got, exact, rtol=rtol, atol=1e-5)


def test_bf16_bias_sums_are_closer_to_exact_than_tensorflows():
    dy, y = _pair((32, 24, 24, 64), tf.bfloat16, seed=3)
    dz, db = cpu_ops.load().tpubench_bias_relu_grad(dy=dy, y=y)
    exact = _exact_sum(dz)
    ours = np.abs(tf.cast(db, tf.float64).numpy() - exact).max()
    theirs = tf.raw_ops.BiasAddGrad(out_backprop=dz)
    theirs = np.abs(tf.cast(theirs, tf.float64).numpy() - exact).max()
    assert ours <= np.abs(exact).max() * 2.0**-8
    assert ours <= theirs


def test_relu_cuts_nan_and_zero_outputs_and_dy_is_left_as_it_was():
    y = tf.constant([[float("nan"), 0.0, -0.0, 2.0]])
    dy = tf.constant([[5.0, 6.0, float("nan"), 7.0]])
    held = dy.numpy().copy()
    dz, db = cpu_ops.load().tpubench_bias_relu_grad(dy=dy, y=y)
    np.testing.assert_array_equal(dz.numpy(), [[0.0, 0.0, 0.0, 7.0]])
    np.testing.assert_array_equal(db.numpy(), [0.0, 0.0, 0.0, 7.0])
    np.testing.assert_array_equal(dy.numpy(), held)


def test_mismatched_shapes_are_an_error_naming_both():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[2,3\].*\[3,2\]"):
        cpu_ops.load().tpubench_bias_relu_grad(dy=tf.zeros([2, 3]), y=tf.zeros([3, 2]))


def _net(own: bool, policy: str, data_format="channels_last"):
    keras.mixed_precision.set_global_policy(policy)
    keras.utils.set_random_seed(5)
    try:
        with own_kernels.use(own), layers.image_layout(data_format):
            inputs = keras.Input((10, 10, 3))
            x = layers.Conv2D(6, 3, activation="relu")(inputs)
            x = layers.Conv2D(4, 3)(x)  # no ReLU
            x = layers.Conv2D(4, 1, activation="relu", use_bias=False)(x)  # no bias
            x = keras.layers.Flatten()(x)
            x = layers.Dense(12, activation="relu")(x)
            x = layers.Dense(5, activation="tanh")(x)  # another activation
            return keras.Model(inputs, layers.Dense(3)(x))
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_only_bf16_layers_with_a_bias_and_relu_built_for_it_take_the_kernel():
    taken = [
        type(layer).__name__ + ":" + str(layer.own_bias_relu)
        for layer in _net(True, "mixed_bfloat16").layers
        if hasattr(layer, "own_bias_relu")
    ]
    assert taken == [
        "Conv2D:True",
        "Conv2D:False",
        "Conv2D:False",
        "Dense:True",
        "Dense:False",
        "Dense:False",
    ]
    for own, policy in ((False, "mixed_bfloat16"), (True, "float32")):
        assert not any(getattr(ly, "own_bias_relu", False) for ly in _net(own, policy).layers)
    with own_kernels.use(True):
        kw = dict(activation="relu", dtype="mixed_bfloat16")
        assert layers.Conv2D(2, 3, **kw).own_bias_relu
        assert not layers.Conv2D(2, 3, data_format="channels_first", **kw).own_bias_relu


def _gradients(model, x):
    @tf.function
    def step():
        with tf.GradientTape() as tape:
            out = tf.cast(model(x, training=True), tf.float32)
            loss = tf.reduce_sum(out * out)
        return loss, tape.gradient(loss, model.trainable_variables)

    loss, grads = step()
    kinds = {op.type for op in step.get_concrete_function().graph.get_operations()}
    return float(loss), [g.numpy() for g in grads], kinds.intersection({"TpubenchBiasReluGrad"})


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_a_network_trains_with_keras_gradients(policy):
    x = tf.random.stateless_normal([6, 10, 10, 3], seed=[1, 2])
    keras_loss, want, keras_ops = _gradients(_net(False, policy), x)
    own_loss, got, own_ops = _gradients(_net(True, policy), x)
    want_ops = {"TpubenchBiasReluGrad"} if policy == "mixed_bfloat16" else set()
    assert (keras_ops, own_ops) == (set(), want_ops)
    assert own_loss == keras_loss  # the same forward pass
    # bf16: the bias sums differ from TensorFlow's by its rounding, not ours.
    rtol = 2e-2 if policy == "mixed_bfloat16" else 1e-5
    for w, g in zip(want, got, strict=True):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * np.abs(w).max())
    out_of_training = _net(True, policy)(x, training=False)
    assert out_of_training.shape == (6, 3)


def _mnist_cnn_curve(own: bool, steps: int):
    """Tiny bf16 mnist_cnn in tpubench's loop on real digits: (losses, own_bias_relu values)."""
    from tpubench.data import digits
    from tpubench.model import registry
    from tpubench.run import runner as runner_lib

    spec = registry.get("mnist_cnn")
    params = registry.resolve_params(spec, {}, tiny=True)
    params.update(per_replica_batch_size=32, global_batch_size=32, seed=3)
    runner = runner_lib.Runner(
        spec, params, tf.distribute.OneDeviceStrategy("/cpu:0"), Precision.BF16, own_batch_norm=own
    )
    images, labels = digits.load_arrays()["train"]
    x = tf.image.resize(tf.constant(images[:256], tf.float32), (28, 28)) / 16.0
    ds = tf.data.Dataset.from_tensor_slices((x, labels[:256].astype("int32"))).batch(32).repeat()
    it = iter(runner.strategy.experimental_distribute_dataset(ds))
    loop = runner.make_train_loop(lambda: next(it))
    curve = np.array([float(loop(tf.constant(1))[0]) for _ in range(steps)])
    return curve, {getattr(layer, "own_bias_relu", None) for layer in runner.model.layers}


def test_mnist_cnn_trains_in_bf16_along_keras_curve():
    keras_curve, keras_kinds = _mnist_cnn_curve(False, 30)
    own_curve, own_kinds = _mnist_cnn_curve(True, 30)
    assert True in own_kinds and True not in keras_kinds  # its convs and dense layer took it
    assert own_curve[-5:].mean() < 0.8 * own_curve[:5].mean()  # it trained
    drift = np.abs(own_curve - keras_curve) / keras_curve[0]
    assert drift.max() < 0.10, (own_curve, keras_curve)
