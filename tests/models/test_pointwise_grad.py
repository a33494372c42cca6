"""`--pointwise_weight_grad`: 1x1 convolutions whose weight gradient is one matrix product.

The product gives the gradients the convolution gives (stride 1 and 2, even
and odd sizes, fp32 exactly up to rounding and bf16 within bf16's), a whole
network built with it trains through the same gradients, only channels-last
1x1 layers take it, `auto` picks it on a CPU only, and the record says which
ran; a value outside the list is one line.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf
from conftest import assert_same_gradients, one_line_error, run_cli, tiny_resnet50

from tpubench.model import layers
from tpubench.run import conv_grads


def _grads(fn, x, kernel):
    with tf.GradientTape() as tape:
        tape.watch([x, kernel])
        y = fn(x, kernel)
        # A loss whose output gradient differs pixel by pixel.
        loss = tf.reduce_sum(tf.cast(y, tf.float32) ** 2)
    return (y, *tape.gradient(loss, [x, kernel]))


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("size", [8, 7])
def test_the_product_gives_the_convolutions_gradients(stride, size):
    x = tf.random.stateless_normal([3, size, size, 5], seed=[1, stride])
    kernel = tf.random.stateless_normal([1, 1, 5, 4], seed=[2, size])
    want = _grads(lambda a, k: tf.nn.conv2d(a, k, stride, "SAME"), x, kernel)
    got = _grads(lambda a, k: layers.pointwise_conv(a, k, stride), x, kernel)
    for name, w, g in zip(("output", "input gradient", "weight gradient"), want, got, strict=True):
        assert g.shape == w.shape, name
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-4, err_msg=name)
    assert float(tf.reduce_max(tf.abs(got[2]))) > 1.0  # not a zero gradient


def test_in_bf16_the_product_is_within_bf16_rounding_of_the_fp32_gradient():
    x = tf.random.stateless_normal([8, 14, 14, 32], seed=[3, 4])
    kernel = tf.random.stateless_normal([1, 1, 32, 16], seed=[5, 6]) * 0.1
    exact = _grads(lambda a, k: tf.nn.conv2d(a, k, 2, "SAME"), x, kernel)[2].numpy()
    bf16 = _grads(
        lambda a, k: layers.pointwise_conv(a, k, 2),
        tf.cast(x, tf.bfloat16),
        tf.cast(kernel, tf.bfloat16),
    )[2]
    assert bf16.dtype == tf.bfloat16
    err = np.abs(tf.cast(bf16, tf.float32).numpy() - exact).max() / np.abs(exact).max()
    assert err < 0.02, err  # bf16 keeps 8 bits of mantissa: about 0.4% a rounding


def test_a_network_built_with_it_has_the_same_gradients_and_only_1x1_layers_change():
    plain, product = tiny_resnet50(), tiny_resnet50(layers.pointwise_weight_grad(True))
    convs = [x for x in product.layers if isinstance(x, keras.layers.Conv2D)]
    assert all(isinstance(x, layers.Conv2D) for x in convs)
    ones = [x for x in convs if x.pointwise_matmul]
    assert ones and all(tuple(x.kernel_size) == (1, 1) for x in ones)
    assert {tuple(x.kernel_size) for x in convs if not x.pointwise_matmul} == {(3, 3), (7, 7)}
    assert any(x.strides == (2, 2) for x in ones)  # the strided projection shortcuts too
    assert not any(x.pointwise_matmul for x in plain.layers if isinstance(x, layers.Conv2D))
    assert_same_gradients(plain, product, rel=1e-4)


def test_channels_first_1x1_layers_keep_the_convolution():
    with layers.image_layout("channels_first"), layers.pointwise_weight_grad(True):
        conv = layers.Conv2D(4, 1)
    assert not conv.pointwise_matmul
    with layers.pointwise_weight_grad(True):
        assert layers.Conv2D(4, 1).pointwise_matmul
        assert not layers.Conv2D(4, 1, dilation_rate=2).pointwise_matmul
    assert not layers.Conv2D(4, 1).pointwise_matmul  # the setting ends with the block


@pytest.mark.parametrize(
    "requested, accelerator, want",
    [
        ("auto", "cpu", True),
        ("auto", "gpu", False),
        ("auto", "tpu", False),
        ("matmul", "gpu", True),
        ("convolution", "cpu", False),
    ],
)
def test_auto_is_the_product_on_a_cpu_only(requested, accelerator, want):
    assert conv_grads.as_matmul(requested, accelerator) is want


def test_the_record_says_which_ran_and_a_bad_value_is_one_line(tmp_path):
    common = ["train", "--model=resnet50", "--tiny", "--use_synthetic_data", "--train_steps=2"]
    proc, rec = run_cli(*common, results_dir=tmp_path / "auto")
    assert proc.returncode == 0, proc.stderr
    assert rec["model"]["pointwise_weight_grad"] == "matmul"  # auto, on this CPU
    proc, rec = run_cli(
        *common, "--pointwise_weight_grad=convolution", results_dir=tmp_path / "conv"
    )
    assert proc.returncode == 0, proc.stderr
    assert rec["model"]["pointwise_weight_grad"] == "convolution"
    assert rec["config"]["pointwise_weight_grad"] == "convolution"
    proc, _ = run_cli(*common, "--pointwise_weight_grad=gemm", results_dir=tmp_path / "bad")
    line = one_line_error(proc)
    assert "--pointwise_weight_grad=gemm" in line and "auto|matmul|convolution" in line
