"""tpubench's optimizer kernels (model/optim_cpu.cc): TensorFlow's updates, in one pass.

Over many blocks with a ragged tail Adadelta's gives what
`ResourceApplyAdadelta` gives and RMSprop's what Keras' arithmetic gives;
a value read before the update keeps the old weights (the kernel copies a
buffer a read still holds, as TensorFlow's own ops do); and mismatched
shapes are an error naming both, not a crash.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from tpubench.model import cpu_ops

pytestmark = pytest.mark.skipif(not cpu_ops.available()[0], reason="no C++ compiler here")


def _variables(n, seed):
    rng = np.random.default_rng(seed)
    return [tf.Variable(rng.standard_normal(n).astype("float32")) for _ in range(3)]


def test_many_blocks_and_a_ragged_tail_give_tensorflows_update():
    n = 3 * 4096 + 5
    ours, theirs = _variables(n, 1), _variables(n, 1)
    for a, b in zip(ours[1:], theirs[1:], strict=True):  # accumulators are non-negative
        a.assign(tf.abs(a))
        b.assign(tf.abs(b))
    for step in range(3):
        grad = tf.constant(np.random.default_rng(10 + step).standard_normal(n).astype("float32"))
        cpu_ops.apply_adadelta(*ours, grad, lr=0.5, rho=0.9, epsilon=1e-6)
        tf.raw_ops.ResourceApplyAdadelta(
            var=theirs[0].handle,
            accum=theirs[1].handle,
            accum_update=theirs[2].handle,
            lr=0.5,
            rho=0.9,
            epsilon=1e-6,
            grad=grad,
        )
    for name, a, b in zip(("var", "accum", "accum_update"), ours, theirs, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    assert np.abs(ours[0].numpy() - _variables(n, 1)[0].numpy()).max() > 0.1  # it moved


def test_a_value_read_before_the_update_keeps_the_old_weights():
    var, accum, accum_update = _variables(1000, 2)
    accum.assign(tf.abs(accum))
    accum_update.assign(tf.abs(accum_update))
    held = var.value()  # shares the variable's buffer
    old = held.numpy().copy()
    cpu_ops.apply_adadelta(var, accum, accum_update, tf.ones([1000]), lr=1.0, rho=0.9, epsilon=1e-6)
    np.testing.assert_array_equal(held.numpy(), old)
    assert not np.array_equal(var.numpy(), old)


def test_mismatched_shapes_are_an_error_naming_both():
    var, accum, accum_update = _variables(6, 3)
    named = r"one shape: grad \[5\], variable \[6\]"
    with pytest.raises(tf.errors.InvalidArgumentError, match=named):
        cpu_ops.apply_adadelta(var, accum, accum_update, tf.ones([5]), 1.0, 0.9, 1e-6)


def test_rmsprop_gives_keras_arithmetic_over_many_blocks():
    n = 2 * 4096 + 3
    var, ms, _ = _variables(n, 4)
    ms.assign(tf.abs(ms))
    want_var, want_ms = var.numpy().astype("float64"), ms.numpy().astype("float64")
    for step in range(3):
        grad = np.random.default_rng(20 + step).standard_normal(n).astype("float32")
        cpu_ops.apply_rmsprop(var, ms, tf.constant(grad), lr=0.01, rho=0.9, epsilon=1e-7)
        want_ms = 0.9 * want_ms + 0.1 * grad.astype("float64") ** 2
        want_var -= 0.01 * grad / np.sqrt(want_ms + 1e-7)
    np.testing.assert_allclose(ms.numpy(), want_ms, rtol=1e-5)
    np.testing.assert_allclose(var.numpy(), want_var, rtol=1e-5, atol=1e-6)
