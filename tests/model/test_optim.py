"""tpubench.model.optim's fused optimizers and L2 penalty compute what Keras 3's do.

The expected values come from Keras's own SGD, Adadelta, Adam, RMSprop and L2 run on the same
variables and gradients, on one device and under MirroredStrategy with two
logical CPU devices (a fresh process, since logical devices are fixed once).
Adadelta, and RMSprop without momentum, built under `own_kernels.use(True)`
run tpubench's CPU kernels instead of TensorFlow's and must agree just as
well (RMSprop with momentum keeps TensorFlow's).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

_SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    replicas = int(sys.argv[1])
    if replicas > 1:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * replicas)
    import keras
    from tpubench.model import optim, own_kernels

    def train(make_opt, strategy):
        keras.utils.set_random_seed(3)
        with strategy.scope():
            w = keras.Variable(np.linspace(-1, 1, 12).reshape(3, 4).astype("float32"))
            b = keras.Variable(np.ones(4, "float32"))
            opt = make_opt()
            opt.build([w, b])
        x = tf.constant(np.random.default_rng(0).standard_normal((8, 3)).astype("float32"))

        @tf.function
        def step():
            def replica_fn():
                with tf.GradientTape() as tape:
                    loss = tf.reduce_sum(tf.square(tf.matmul(x, w) + b)) / replicas
                grads = tape.gradient(loss, [w, b])
                opt.apply_gradients(zip(grads, [w, b]))
            strategy.run(replica_fn)

        for _ in range(4):
            step()
        ops = {op.type for op in step.get_concrete_function().graph.get_operations()}
        fused = sorted(t for t in ops if t.startswith(("ResourceApply", "TpubenchApply")))
        return np.concatenate([np.ravel(w.numpy()), b.numpy()]), fused

    if replicas > 1:
        strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(replicas)])
    else:
        strategy = tf.distribute.get_strategy()
    cases = {
        "sgd": ("SGD", "MomentumSGD", dict(learning_rate=0.05, momentum=0.9)),
        "nesterov": ("SGD", "MomentumSGD",
                     dict(learning_rate=0.05, momentum=0.9, nesterov=True)),
        "adadelta": ("Adadelta", "Adadelta", dict(learning_rate=1.0, rho=0.95, epsilon=0.01)),
        "adadelta_own": ("Adadelta", "Adadelta+own",
                         dict(learning_rate=1.0, rho=0.95, epsilon=0.01)),
        "adam": ("Adam", "Adam", dict(learning_rate=0.05)),
        "rmsprop": ("RMSprop", "RMSprop", dict(learning_rate=0.05)),
        "rmsprop_own": ("RMSprop", "RMSprop+own", dict(learning_rate=0.05)),
        "rmsprop_momentum_own": ("RMSprop", "RMSprop+own",
                                 dict(learning_rate=0.05, momentum=0.9, epsilon=1.0)),
        "rmsprop_momentum": ("RMSprop", "RMSprop",
                             dict(learning_rate=0.05, momentum=0.9, epsilon=1.0)),
        "rmsprop_centered": ("RMSprop", "RMSprop",
                             dict(learning_rate=0.05, momentum=0.5, centered=True)),
        "rmsprop_centered_plain": ("RMSprop", "RMSprop", dict(learning_rate=0.05, centered=True)),
    }
    for name, (theirs, ours, kw) in cases.items():
        want, _ = train(lambda: getattr(keras.optimizers, theirs)(**kw), strategy)
        name_, _, own = ours.partition("+")

        def make_ours():
            with own_kernels.use(bool(own)):
                return getattr(optim, name_)(**kw)

        got, fused = train(make_ours, strategy)
        moved = float(np.abs(want - np.concatenate(
            [np.linspace(-1, 1, 12), np.ones(4)])).max())
        print(f"opt={name} maxdiff={np.abs(want - got).max():.3e} moved={moved:.3f} "
              f"fused={','.join(fused) or 'none'}")

    w = keras.Variable(np.linspace(-2, 2, 10).astype("float32"))
    print(f"l2 keras={float(keras.regularizers.L2(0.003)(w)):.8f} "
          f"tpubench={float(optim.L2(0.003)(w)):.8f}")
    """
)


@pytest.mark.parametrize("replicas", [1, 2])
def test_fused_optimizers_and_l2_match_keras(replicas):
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(replicas)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(("opt=", "l2"))]
    assert [ln.split()[0] for ln in lines] == [
        "opt=sgd", "opt=nesterov", "opt=adadelta", "opt=adadelta_own", "opt=adam", "opt=rmsprop",
        "opt=rmsprop_own", "opt=rmsprop_momentum_own", "opt=rmsprop_momentum",
        "opt=rmsprop_centered", "opt=rmsprop_centered_plain", "l2",
    ], proc.stdout  # fmt: skip
    kernels = {
        "sgd": "ResourceApplyKerasMomentum", "nesterov": "ResourceApplyKerasMomentum",
        "adadelta": "ResourceApplyAdadelta", "adadelta_own": "TpubenchApplyAdadelta",
        "adam": "ResourceApplyAdam",
        "rmsprop": "ResourceApplyRMSProp", "rmsprop_momentum": "ResourceApplyRMSProp",
        "rmsprop_own": "TpubenchApplyRmsprop", "rmsprop_momentum_own": "ResourceApplyRMSProp",
        "rmsprop_centered": "ResourceApplyCenteredRMSProp",
        "rmsprop_centered_plain": "ResourceApplyCenteredRMSProp",
    }  # fmt: skip
    for line in lines[:-1]:
        fields = dict(kv.split("=") for kv in line.split())
        assert fields["fused"] == kernels[fields["opt"]], line  # the fused kernel ran
        assert float(fields["moved"]) > 0.05, line  # the updates really moved the weights
        assert float(fields["maxdiff"]) < 1e-5, line
    l2 = dict(kv.split("=") for kv in lines[-1].split()[1:])
    # 0.003 * sum(w**2) over linspace(-2, 2, 10), computed here independently.
    expected = 0.003 * sum((-2 + 4 * i / 9) ** 2 for i in range(10))
    assert float(lines[-1].split()[1].split("=")[1]) == pytest.approx(expected, rel=1e-5)
    assert float(l2["tpubench"]) == pytest.approx(expected, rel=1e-5)


def test_imagenet_models_use_the_fused_optimizer():
    from tpubench.model import optim, registry

    spec = registry.get("resnet50")
    params = registry.resolve_params(spec, {}, tiny=True) | {"global_batch_size": 64}
    opt = spec.build_optimizer(params)
    assert isinstance(opt, optim.MomentumSGD)
    assert float(opt.learning_rate) == pytest.approx(0.1 * 64 / 256)


@pytest.mark.parametrize("bad", [None, "nan", "inf", "-inf", "sparse_nan"])
def test_loss_scale_finiteness_check_agrees_with_keras(bad):
    import keras
    import numpy as np
    import tensorflow as tf

    from tpubench.model import optim

    rng = np.random.default_rng(2)
    grads = [
        tf.constant(rng.normal(size=(3, 4)).astype("float32")),
        None,
        tf.constant(rng.normal(size=(5,)).astype("float16")),
        tf.IndexedSlices(
            tf.constant(rng.normal(size=(2, 3)).astype("float32")), tf.constant([0, 4])
        ),
        tf.constant(rng.normal(size=(7, 2)).astype("float32")),
    ]
    if bad == "sparse_nan":
        grads[3] = tf.IndexedSlices(
            tf.constant([[1.0, np.nan, 0.0], [0, 0, 0]]), tf.constant([0, 4])
        )
    elif bad:
        x = grads[4].numpy()
        x[6, 1] = float(bad)
        grads[4] = tf.constant(x)
    inner = keras.optimizers.SGD(0.1)
    ours = optim.LossScaleOptimizer(inner)
    theirs = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(0.1))
    expected = bad is None
    assert bool(ours.check_finite(grads)) is expected
    # Keras's own check, given the same values as plain tensors.
    plain = [g.values if isinstance(g, tf.IndexedSlices) else g for g in grads if g is not None]
    assert bool(theirs.check_finite(plain)) is expected


def test_rmsprop_saves_what_keras_rmsprop_saves(tmp_path):
    """The scratch momentum buffer of the fused kernel is not part of a checkpoint."""
    import keras
    import tensorflow as tf

    from tpubench.model import optim

    def saved(opt, name):
        w = keras.Variable(tf.ones([3, 2]))
        opt.build([w])
        path = tf.train.Checkpoint(optimizer=opt).write(str(tmp_path / name))
        return sorted(n for n, _ in tf.train.list_variables(path) if "OBJECT_GRAPH" not in n)

    theirs = saved(keras.optimizers.RMSprop(0.01), "keras")
    fused = optim.RMSprop(0.01)
    ours = saved(fused, "ours")
    assert len(fused.__dict__["_scratch"]) == 1  # the buffer exists...
    assert ours == theirs and theirs, (ours, theirs)  # ...and is not saved
