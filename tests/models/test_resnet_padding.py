"""ResNet's strided convolutions padded symmetrically, as tf_cnn_benchmarks pads them.

`padding=symmetric` (the default) and Keras' `padding=same` must build the
same network but for where the windows sit: the same output shape after
every layer, the same weights, no strided convolution left with an
asymmetric pad (the case cuDNN copies into a padded buffer first), and
training from the same weights on the same real images gives the same loss
curve within fp32 tolerance for a half-pixel shift.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf
from conftest import one_line_error, run_cli

from tpubench.data import digits
from tpubench.model import registry


def _build(name, padding, **overrides):
    spec = registry.get(name)
    params = registry.resolve_params(spec, dict(overrides, padding=padding), tiny=True)
    keras.utils.set_random_seed(11)
    return spec.build_model(params)


def _strided(net):
    return [x for x in net.layers if isinstance(x, keras.layers.Conv2D) and x.strides != (1, 1)]


@pytest.mark.parametrize("name", ["resnet50", "resnet152"])
@pytest.mark.parametrize("size", [32, 224, 97])  # tiny, ImageNet, odd sizes all the way down
def test_both_paddings_build_the_same_shapes_and_weights(name, size):
    same, sym = (_build(name, p, image_size=size) for p in ("same", "symmetric"))
    assert same.count_params() == sym.count_params()
    assert [w.shape for w in same.weights] == [w.shape for w in sym.weights]
    assert same.output.shape == sym.output.shape
    shapes = {p: [x.output.shape for x in _strided(n)] for p, n in (("same", same), ("sym", sym))}
    assert shapes["same"] == shapes["sym"]
    for conv in _strided(sym):
        if conv.kernel_size == (1, 1):
            continue  # a 1x1 projection needs no padding at any size
        assert conv.padding == "valid"
        pad = conv._inbound_nodes[0].parent_nodes[0].operation  # what feeds the convolution
        assert isinstance(pad, keras.layers.ZeroPadding2D)
        (top, bottom), (left, right) = pad.padding
        assert top == bottom == left == right == (conv.kernel_size[0] - 1) // 2


def test_fifty_training_steps_follow_the_same_curve():
    """At 64x64 (4x4 maps in the last stage); at the tiny 32x32, where the last maps are 1x1
    and every window touches the border, the two paddings learn at visibly different rates."""
    images, labels = digits.load_arrays()["train"]
    x = tf.image.resize(tf.image.grayscale_to_rgb(tf.constant(images[:256], tf.float32)), (64, 64))
    x = (x - 128.0) / 64.0
    y = tf.constant(labels[:256])
    curves = {}
    start = None
    for padding in ("same", "symmetric"):
        net = _build("resnet50", padding, image_size=64)
        if start is None:
            start = net.get_weights()
        net.set_weights(start)
        opt = keras.optimizers.SGD(0.05, momentum=0.9)
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

        @tf.function
        def step(xb, yb, net=net, opt=opt, loss_fn=loss_fn):
            with tf.GradientTape() as tape:
                loss = loss_fn(yb, net(xb, training=True))
            grads = tape.gradient(loss, net.trainable_variables)
            opt.apply_gradients(zip(grads, net.trainable_variables, strict=True))
            return loss

        batches = [slice(i % 8 * 32, i % 8 * 32 + 32) for i in range(50)]
        curves[padding] = np.array([float(step(x[b], y[b])) for b in batches])
    same, sym = curves["same"], curves["symmetric"]
    assert sym[0] == pytest.approx(same[0], rel=0.05), "same weights, first batch"
    assert sym[-10:].mean() < sym[:10].mean() * 0.8, "the symmetric net learns"
    assert sym[-10:].mean() == pytest.approx(same[-10:].mean(), rel=0.1), (same, sym)


def test_a_bad_padding_is_one_line(tmp_path):
    proc, _ = run_cli(
        "train", "--model=resnet50", "--tiny", "--use_synthetic_data", "--train_steps=1",
        "--params=padding=reflect", f"--model_dir={tmp_path / 'm'}", results_dir=tmp_path / "r",
    )  # fmt: skip
    assert proc.returncode == 2
    assert "padding=reflect" in one_line_error(proc) and "symmetric, same" in proc.stderr
