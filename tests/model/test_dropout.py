"""`layers.dropout` and `layers.Dropout`: Keras' dropout with its mask drawn from 8 or 16 bits.

Each rate drops its share of the elements (rates that are multiples of
1/256 exactly; others to within 2**-17), the kept ones are scaled so the
mean holds, the gradient is the same mask, a seed gives one mask and the
layer a new one each step, and the zoo's models train through it.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from tpubench.model import layers

N = 1 << 20  # elements: the drop share's standard error is then under 0.0005


@pytest.mark.parametrize(
    ("rate", "scale"),
    [
        (0.25, 256 / 192),  # 8 bits: exact
        (0.5, 2.0),
        (0.2, 65536 / (65536 - 13107)),  # 16 bits: 13107/65536 = 0.19999695
        (0.1, 65536 / (65536 - 6554)),
        (0.4, 65536 / (65536 - 26214)),
    ],
)
def test_each_rate_drops_its_share_and_scales_the_rest(rate, scale):
    y = layers.dropout(tf.ones([N // 64, 8, 8]), rate, tf.constant([3, 4])).numpy()
    assert set(np.unique(y)) == {np.float32(0), np.float32(scale)}
    dropped = float(np.mean(y == 0))
    assert abs(dropped - rate) < 0.002, dropped
    assert abs(float(np.mean(y)) - 1.0) < 0.004


def test_a_seed_gives_one_mask_and_another_seed_another():
    x = tf.ones([1000])
    a = layers.dropout(x, 0.5, tf.constant([1, 2])).numpy()
    b = layers.dropout(x, 0.5, tf.constant([1, 2])).numpy()
    c = layers.dropout(x, 0.5, tf.constant([1, 3])).numpy()
    np.testing.assert_array_equal(a, b)
    assert np.mean((a == 0) != (c == 0)) > 0.3


@pytest.mark.parametrize("jit", [False, True])
def test_the_gradient_is_the_mask(jit):
    x = tf.random.stateless_normal([5, 7, 3], seed=[0, 1])  # 105 elements: not a multiple of 4

    @tf.function(jit_compile=jit)
    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layers.dropout(x, 0.25, tf.constant([5, 6]))
            loss = tf.reduce_sum(y * y)
        return y, tape.gradient(loss, x)

    y, g = step(x)
    mask = np.where(y.numpy() == 0, 0.0, 4 / 3)
    np.testing.assert_allclose(g.numpy(), 2 * y.numpy() * mask, rtol=1e-6)
    assert 0 < np.mean(mask == 0) < 0.6


def test_bf16_stays_bf16_and_an_unknown_batch_is_fine():
    y = layers.dropout(tf.ones([64, 4], tf.bfloat16), 0.5, tf.constant([1, 2]))
    assert y.dtype == tf.bfloat16
    assert set(np.unique(y.numpy().astype(np.float32))) == {0.0, 2.0}

    @tf.function(input_signature=[tf.TensorSpec([None, 3])])
    def f(x):
        return layers.dropout(x, 0.2, tf.constant([1, 2]))

    for rows in (1, 5, 1000):
        out = f(tf.ones([rows, 3])).numpy()
        assert out.shape == (rows, 3)
    assert 0.15 < np.mean(out == 0) < 0.25


def test_rates_zero_and_one():
    x = tf.ones([10])
    np.testing.assert_array_equal(layers.dropout(x, 0.0, tf.constant([1, 2])).numpy(), x.numpy())
    np.testing.assert_array_equal(layers.dropout(x, 1.0, tf.constant([1, 2])).numpy(), 0 * x)


def test_the_layer_draws_a_new_mask_each_step_and_passes_through_in_inference():
    layer = layers.Dropout(0.5, seed=7)
    x = tf.ones([4, 256])
    a, b = layer(x, training=True).numpy(), layer(x, training=True).numpy()
    assert np.mean((a == 0) != (b == 0)) > 0.3
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x.numpy())
    # Keras' layer holds the same one variable (its seed state): checkpoints match.
    assert [v.shape for v in layer.variables] == [
        v.shape for v in keras.layers.Dropout(0.5, seed=7).variables
    ]


def test_noise_shape_takes_keras_path():
    y = layers.Dropout(0.5, noise_shape=(64, 1), seed=3)(tf.ones([64, 8]), training=True).numpy()
    rows = {tuple(r) for r in y}
    assert rows == {(0.0,) * 8, (2.0,) * 8}  # whole rows kept or dropped


def _dropouts(layer):
    found = [layer] if isinstance(layer, keras.layers.Dropout) else []
    for sub in getattr(layer, "_layers", None) or []:
        found += _dropouts(sub)
    return found


def test_the_zoos_dropout_layers_are_tpubench_ones():
    from tpubench.model import registry

    spec = registry.get("mnist_cnn")
    model = spec.build_model(registry.resolve_params(spec, {}))
    drops = _dropouts(model)
    assert [type(d) for d in drops] == [layers.Dropout, layers.Dropout]
    assert [d.rate for d in drops] == [0.25, 0.5]
    for name in registry.names():
        spec = registry.get(name)
        model = spec.build_model(registry.resolve_params(spec, {}, tiny=True))
        assert {type(d) for d in _dropouts(model)} <= {layers.Dropout}, name
