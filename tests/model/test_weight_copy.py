"""bf16 weight copies kept by the update (model/weight_copy.py, model/optim_cpu.cc).

The copies replace Keras' per-step casts of the weights (to bf16 for the
forward pass, and of their gradients back to fp32), so training must be the
same bit for bit, the copies must always be the cast of the fp32 weights a
step reads, and runs that cannot keep them must not have them.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf
from conftest import run_cli

from tpubench.core.precision import Precision
from tpubench.model import cpu_ops, layers, optim, own_kernels, weight_copy

pytestmark = pytest.mark.skipif(not cpu_ops.available()[0], reason="no C++ compiler here")


def _bits(x):
    return np.asarray(x).view(np.uint16)


def _same_as_cast(var, copy):
    want = tf.cast(var, tf.bfloat16).numpy()
    got = copy.numpy()
    nan = np.isnan(want.astype(np.float32))
    assert np.array_equal(nan, np.isnan(got.astype(np.float32)))
    assert np.array_equal(_bits(want)[~nan], _bits(got)[~nan])


def _weights(shape, seed):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=shape).astype(np.float32)
    # Halfway cases (round to even both ways), the largest float (rounds to inf) and a NaN.
    w.flat[:5] = [1.00390625, 1.01171875, np.finfo(np.float32).max, np.nan, -0.0]
    return w


@pytest.mark.parametrize("rule", ["adadelta", "rmsprop"])
def test_bf16_gradients_update_as_their_cast_and_the_copy_is_the_cast(rule):
    shape = (3001, 7)  # six blocks of the kernel's 4,096 elements, the last one short
    w0 = _weights(shape, 0)
    dy = tf.cast(np.random.default_rng(1).normal(size=shape), tf.bfloat16)

    def slots():
        return [
            tf.Variable(tf.fill(shape, v)) for v in (0.1, 0.2)[: 2 if rule == "adadelta" else 1]
        ]

    def update(var, grad, copy=None):
        if rule == "adadelta":
            return cpu_ops.apply_adadelta(
                var, *slots(), grad=grad, lr=0.5, rho=0.95, epsilon=1e-7, copy=copy
            )
        return cpu_ops.apply_rmsprop(
            var, *slots(), grad=grad, lr=0.01, rho=0.9, epsilon=1e-7, copy=copy
        )

    cast, kept = tf.Variable(w0), tf.Variable(w0)
    copy = tf.Variable(tf.zeros(shape, tf.bfloat16))
    update(cast, tf.cast(dy, tf.float32))
    update(kept, dy, copy)
    np.testing.assert_array_equal(cast.numpy(), kept.numpy())  # NaN where NaN, else equal
    _same_as_cast(kept, copy)
    assert np.isinf(copy.numpy()[0, 2].astype(np.float32))  # float32 max rounds up to inf


def test_a_copy_that_is_not_bf16_or_not_the_weights_shape_is_an_error():
    var, ms = tf.Variable(tf.ones([4, 3])), tf.Variable(tf.ones([4, 3]))
    grad = tf.ones([4, 3], tf.bfloat16)
    with pytest.raises(tf.errors.InvalidArgumentError, match="the copy must be bfloat16"):
        cpu_ops.apply_rmsprop(var, ms, grad, 0.1, 0.9, 1e-7, copy=tf.Variable(tf.ones([4, 3])))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"grad \[4,3\], variable \[3,4\]"):
        cpu_ops.apply_rmsprop(
            var, ms, grad, 0.1, 0.9, 1e-7, copy=tf.Variable(tf.ones([3, 4], tf.bfloat16))
        )


def _runner(copies: bool, seed: int = 3):
    """A tiny bf16 mnist_cnn runner with tpubench's kernels, with or without the copies."""
    from tpubench.model import registry
    from tpubench.run import runner as runner_lib

    spec = registry.get("mnist_cnn")
    params = registry.resolve_params(spec, {}, tiny=True)
    params.update(per_replica_batch_size=16, global_batch_size=16, seed=seed)
    before = optim.Adadelta.writes_bf16_copy
    if not copies:
        optim.Adadelta.writes_bf16_copy = lambda self, variable: False
    try:
        strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
        return runner_lib.Runner(spec, params, strategy, Precision.BF16, own_batch_norm=True)
    finally:
        optim.Adadelta.writes_bf16_copy = before


def _loop(runner):
    rng = np.random.default_rng(5)
    images = tf.constant(rng.uniform(size=(16, 28, 28, 1)), tf.float32)
    labels = tf.constant(rng.integers(0, 10, size=16), tf.int32)
    return runner.make_train_loop(lambda: (images, labels))


def _step_casts(runner) -> int:
    """Casts in the traced loop's step (its while body), not the once-a-loop recast."""
    graph = runner.train_loop.get_concrete_function(tf.TensorSpec([], tf.int32)).graph
    bodies = [f for f in graph.as_graph_def().library.function if "while_body" in f.signature.name]
    assert len(bodies) == 1
    return sum(n.op == "Cast" for n in bodies[0].node_def)


def test_a_bf16_network_trains_bit_for_bit_as_with_the_casts():
    plain, kept = _runner(False), _runner(True)
    assert len(plain.bf16_copies) == 0
    # Both convolutions' and both dense layers' kernel and bias.
    assert len(kept.bf16_copies) == 8
    losses = {}
    for name, r in (("plain", plain), ("kept", kept)):
        loop = _loop(r)
        losses[name] = [float(loop(tf.constant(2))[0]) for _ in range(3)]
    assert losses["plain"] == losses["kept"]
    for a, b in zip(plain.model.trainable_variables, kept.model.trainable_variables, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    for var, copy in kept.bf16_copies.pairs:
        _same_as_cast(var, copy)
    # Eight weights read without a cast and eight gradients that reach the update without one.
    assert _step_casts(plain) - _step_casts(kept) == 16


def test_copies_are_recast_after_a_restore_and_after_invalidate(tmp_path):
    source = _runner(True)
    _loop(source)(tf.constant(2))
    path = source.checkpoint().write(str(tmp_path / "ckpt"))
    # Other initial weights: a copy left as it was built would train from them.
    plain, kept = _runner(False, seed=9), _runner(True, seed=9)
    for r in (plain, kept):
        r.checkpoint().read(path).assert_existing_objects_matched()
        _loop(r)(tf.constant(1))
    for a, b in zip(plain.model.trainable_variables, kept.model.trainable_variables, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    # Weights changed outside the loop without moving the step count.
    for r in (plain, kept):
        for v in r.model.trainable_variables:
            v.assign(v * 0.5)
    kept.bf16_copies.invalidate()
    for r in (plain, kept):
        r.train_loop(tf.constant(1))
    for a, b in zip(plain.model.trainable_variables, kept.model.trainable_variables, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def _small(regularized: bool = False):
    """A ReLU convolution (regularized or not), a plain one with a bias, a linear dense head."""
    keras.utils.set_random_seed(4)
    inputs = keras.Input((34, 34, 2))
    reg = optim.L2(1e-4) if regularized else None
    x = layers.Conv2D(4, 3, activation="relu", kernel_regularizer=reg)(inputs)
    x = layers.Conv2D(3, 1)(x)
    x = keras.layers.Flatten()(x)
    return keras.Model(inputs, layers.Dense(3)(x))


def _built(copies: bool):
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        with own_kernels.use(True):
            model, opt = _small(), optim.Adadelta(learning_rate=0.5)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    opt.build(model.trainable_variables)
    if copies:
        assert len(weight_copy.attach(model, opt, tf.distribute.get_strategy())) == 6
    return model, opt


def test_layers_without_a_relu_train_as_keras_layers_do():
    x = tf.random.stateless_normal([8, 34, 34, 2], seed=[1, 2])
    y = tf.random.stateless_normal([8, 3], seed=[3, 4])
    weights = {}
    for copies in (False, True):
        model, opt = _built(copies)

        @tf.function
        def step(model=model, opt=opt):
            with tf.GradientTape() as tape:
                out = tf.cast(model(x, training=True), tf.float32)
                loss = tf.reduce_mean(tf.square(out - y))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
            return loss

        for _ in range(3):
            step()
        weights[copies] = [v.numpy() for v in model.trainable_variables]
    for a, b in zip(weights[False], weights[True], strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "case, expected",
    [
        ("kept", 6),
        ("fp32", 0),
        ("tensorflow_kernels", 0),
        ("regularized_conv", 4),  # the other convolution's and the dense layer's
        ("clipnorm", 0),
        ("keras_optimizer", 0),
        ("rmsprop_with_momentum", 0),
    ],
)
def test_who_keeps_copies(case, expected):
    policy = "float32" if case == "fp32" else "mixed_bfloat16"
    keras.mixed_precision.set_global_policy(policy)
    try:
        with own_kernels.use(case != "tensorflow_kernels"):
            model = _small(regularized=case == "regularized_conv")
            opt = {
                "clipnorm": lambda: optim.Adadelta(clipnorm=1.0),
                "keras_optimizer": lambda: keras.optimizers.Adadelta(),
                "rmsprop_with_momentum": lambda: optim.RMSprop(momentum=0.9),
            }.get(case, optim.Adadelta)()
    finally:
        keras.mixed_precision.set_global_policy("float32")
    opt.build(model.trainable_variables)
    copies = weight_copy.attach(model, opt, tf.distribute.get_strategy())
    assert len(copies) == expected
    kept = {id(v) for v, _ in copies.pairs}
    for w in model.trainable_variables:
        assert (weight_copy.of(w) is not None) == (id(w.value) in kept)


def test_the_record_says_how_many_weights_kept_a_copy(tmp_path):
    common = ("train", "--model=mnist_cnn", "--tiny", "--use_synthetic_data", "--train_steps=2")
    counts = {}
    for name, extra in (
        ("bf16", ("--precision=bf16",)),
        ("fp32", ("--precision=fp32",)),
        ("bf16_two_replicas", ("--precision=bf16", "--num_cpu_devices=2")),
    ):
        proc, rec = run_cli(*common, *extra, results_dir=tmp_path / name)
        assert proc.returncode == 0, proc.stderr[-2000:]
        counts[name] = rec["model"]["bf16_weight_copies"]
    # One replica in bf16 keeps them; fp32 has no casts to save; a mirrored update would
    # write one device's copy only.
    assert counts == {"bf16": 8, "fp32": 0, "bf16_two_replicas": 0}


def test_a_bf16_run_that_resumes_ends_where_one_that_did_not_stop_ends(tmp_path):
    """The resumed process starts with copies of its initial weights: the loop must recast
    them from the restored ones (dropout off, so the two runs draw the same numbers)."""
    common = (
        "train",
        "--model=mnist_cnn",
        "--tiny",
        "--precision=bf16",
        "--use_synthetic_data",
        "--checkpoint_every_steps=4",
        "--params=conv_dropout=0.0,dense_dropout=0.0",
    )
    runs = {}
    for name, steps, model_dir in (
        ("whole", 8, "whole"),
        ("first_half", 4, "halves"),
        ("resumed", 8, "halves"),
    ):
        proc, rec = run_cli(
            *common,
            f"--train_steps={steps}",
            f"--model_dir={tmp_path / model_dir}",
            results_dir=tmp_path / name,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert rec["model"]["bf16_weight_copies"] == 8
        runs[name] = rec
    assert runs["resumed"]["resumed_from_step"] == 4
    assert runs["resumed"]["results"]["final_loss"] == runs["whole"]["results"]["final_loss"]
