"""tpubench's CPU batch-norm kernel (`--batch_norm_kernel`, model/cpu_ops.py).

It gives what TensorFlow's fused batch norm, `AddV2` and `Relu` give (fp32:
to rounding; bf16: closer to an fp32 reference than TensorFlow's own bf16
ops), with gradients for x, gamma, beta and the residual input; a layer
built with it trains to the same weights and moving statistics; `auto`
takes it on a CPU only and says why not where it cannot build; an explicit
request that cannot be met is one line; the record says which ran.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from conftest import assert_same_gradients, one_line_error, run_cli, tiny_resnet50

from tpubench.model import batch_norm, cpu_ops, own_kernels
from tpubench.run import conv_grads

# Rows not a multiple of the kernel's 128-row blocks; channels not a multiple
# of a vector's 16 lanes; a mean far from zero (the one-pass variance).
SHAPE = (3, 9, 11, 67)


def _inputs(dtype, shape=SHAPE, seed=0):
    rng = np.random.default_rng(seed)
    x = tf.constant(rng.normal(3.0, 2.0, shape), dtype)
    side = tf.constant(rng.normal(0.0, 1.0, shape), dtype)
    gamma = tf.constant(rng.normal(1.0, 0.3, shape[-1]), tf.float32)
    beta = tf.constant(rng.normal(0.0, 0.3, shape[-1]), tf.float32)
    weights = tf.constant(rng.normal(0.0, 1.0, shape), tf.float32)  # dy differs pixel by pixel
    return x, side, gamma, beta, weights


def _tensorflow(x, gamma, beta, side, relu, epsilon=1e-5):
    y, mean, var = tf.compat.v1.nn.fused_batch_norm(
        x, gamma, beta, epsilon=epsilon, is_training=True, data_format="NHWC"
    )[:3]
    n = float(np.prod(x.shape[:-1]))
    var = var * (n - 1) / n  # TensorFlow gives the Bessel-corrected variance
    if side is not None:
        y = y + side
    return (tf.nn.relu(y) if relu else y), mean, var


def _own(x, gamma, beta, side, relu, epsilon=1e-5):
    return cpu_ops.batch_norm_train(x, gamma, beta, side, epsilon=epsilon, relu=relu)


def _run(fn, x, gamma, beta, side, relu, weights):
    sources = [x, gamma, beta] + ([side] if side is not None else [])
    with tf.GradientTape() as tape:
        tape.watch(sources)
        y, mean, var = fn(x, gamma, beta, side, relu)
        loss = tf.reduce_sum(tf.cast(y, tf.float32) * weights)
    out = [y, mean, var, *tape.gradient(loss, sources)]
    return [tf.cast(v, tf.float32).numpy() for v in out]


NAMES = ("y", "mean", "variance", "dx", "dgamma", "dbeta", "dside")


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("with_side", [False, True])
def test_fp32_gives_tensorflows_values_and_gradients(relu, with_side):
    x, side, gamma, beta, w = _inputs(tf.float32)
    side = side if with_side else None
    want = _run(_tensorflow, x, gamma, beta, side, relu, w)
    got = _run(_own, x, gamma, beta, side, relu, w)
    assert len(got) == (7 if with_side else 6)
    for name, a, b in zip(NAMES, got, want, strict=False):
        assert a.shape == b.shape, name
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5 * np.abs(b).max(), err_msg=name)
    if relu:
        assert (got[0] == 0).mean() > 0.2  # the ReLU cut something


@pytest.mark.parametrize("with_side", [False, True])
def test_bf16_is_nearer_an_fp32_reference_than_tensorflows_bf16(with_side):
    x, side, gamma, beta, w = _inputs(tf.bfloat16, seed=1)
    side = side if with_side else None
    up = lambda t: None if t is None else tf.cast(t, tf.float32)
    exact = _run(_tensorflow, up(x), gamma, beta, up(side), True, w)
    ours = _run(_own, x, gamma, beta, side, True, w)
    theirs = _run(_tensorflow, x, gamma, beta, side, True, w)

    def err(got):
        return max(
            float(np.linalg.norm(got[i] - exact[i]) / np.linalg.norm(exact[i]))
            for i in (0, 3, 6 if with_side else 5)
        )

    assert err(ours) < 0.01, err(ours)  # bf16 keeps 8 bits: about 0.4% a rounding
    assert err(ours) <= err(theirs) + 1e-3, (err(ours), err(theirs))


def test_a_layer_built_with_it_trains_like_one_without():
    x, side, *_ = _inputs(tf.float32, shape=(4, 6, 6, 8), seed=2)
    results = []
    for own in (False, True):
        with own_kernels.use(own):
            bn = batch_norm.FusedBatchNorm(momentum=0.9, epsilon=1e-5, relu=True)
        assert bn.own_kernel is own
        bn.build(x.shape)
        with tf.GradientTape() as tape:
            y = bn([x, side], training=True)
            loss = tf.reduce_sum(y * y)
        grads = tape.gradient(loss, [bn.gamma, bn.beta])
        results.append([y, *grads, bn.moving_mean, bn.moving_variance])
        assert float(tf.reduce_max(tf.abs(bn.moving_mean))) > 0.01  # the statistics moved
    for name, a, b in zip(("y", "dgamma", "dbeta", "mean", "var"), *results, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-4, err_msg=name)
    assert not batch_norm.FusedBatchNorm().own_kernel  # the setting ends with the block


def test_resnet50_has_the_same_gradients_through_it():
    plain, own = tiny_resnet50(), tiny_resnet50(own_kernels.use(True))
    assert_same_gradients(plain, own, rel=1e-3)


class _Placement:
    def __init__(self, accelerator="cpu", strategy="default"):
        self.accelerator, self.strategy, self.is_chief = accelerator, strategy, True


def test_auto_is_the_kernel_on_a_cpu_only():
    assert conv_grads.own_batch_norm("auto", _Placement(), xla=False) == (True, None)
    assert conv_grads.own_batch_norm("auto", _Placement("gpu"), xla=False) == (False, None)
    assert conv_grads.own_batch_norm("auto", _Placement(), xla=True) == (False, None)
    ps = _Placement(strategy="parameter_server")
    assert conv_grads.own_batch_norm("auto", ps, xla=False) == (False, None)
    assert conv_grads.own_batch_norm("tensorflow", _Placement(), xla=False) == (False, None)
    with pytest.raises(Exception, match="XLA cannot compile it"):
        conv_grads.own_batch_norm("tpubench", _Placement(), xla=True)
    with pytest.raises(Exception, match="this run is on gpu"):
        conv_grads.own_batch_norm("tpubench", _Placement("gpu"), xla=False)


def test_without_a_compiler_auto_falls_back_and_an_explicit_request_is_one_line(tmp_path):
    env = {"CXX": "/bin/false", "TPUBENCH_CACHE": str(tmp_path / "cache")}
    probe = subprocess.run(
        [sys.executable, "-c", "from tpubench.model import cpu_ops; print(cpu_ops.available())"],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
    )
    failed = "(False, \"building batch_norm_cpu.cc, optim_cpu.cc with '/bin/false' failed"
    assert failed in probe.stdout
    common = ["train", "--model=resnet50", "--tiny", "--use_synthetic_data", "--train_steps=2"]
    proc, rec = run_cli(*common, results_dir=tmp_path / "auto", env=env)
    assert proc.returncode == 0, proc.stderr
    assert rec["model"]["batch_norm_kernel"] == "tensorflow"
    assert "note: building tpubench's CPU kernels (once per machine" in proc.stderr
    assert "note: batch norm: TensorFlow's kernels (building batch_norm_cpu.cc" in proc.stderr
    assert rec["model"]["batch_norm_note"].startswith("batch norm: TensorFlow's kernels")
    proc, _ = run_cli(*common, "--batch_norm_kernel=tpubench", results_dir=tmp_path / "x", env=env)
    line = one_line_error(proc)
    assert "--batch_norm_kernel=tpubench: building batch_norm_cpu.cc" in line
    assert "accepted here: auto, tensorflow" in line
    assert not list((tmp_path / "cache").glob("kernels/*.so"))
    assert not list((tmp_path / "cache").glob("kernels/*.o"))
    assert (tmp_path / "cache" / "kernels").is_dir()  # no half-built library left behind


def test_the_record_says_which_ran_and_both_train(tmp_path):
    common = ["train", "--model=resnet50", "--tiny", "--use_synthetic_data", "--train_steps=3"]
    losses = {}
    for kernel in ("auto", "tensorflow"):
        proc, rec = run_cli(*common, f"--batch_norm_kernel={kernel}", results_dir=tmp_path / kernel)
        assert proc.returncode == 0, proc.stderr
        losses[rec["model"]["batch_norm_kernel"]] = rec["results"]["final_loss"]
        assert rec["config"]["batch_norm_kernel"] == kernel
    assert set(losses) == {"tpubench", "tensorflow"}  # auto: the kernel, on this CPU
    assert abs(losses["tpubench"] - losses["tensorflow"]) < 1e-3 * abs(losses["tensorflow"])
    proc, _ = run_cli(*common, "--batch_norm_kernel=onednn", results_dir=tmp_path / "bad")
    line = one_line_error(proc)
    assert "--batch_norm_kernel=onednn" in line and "auto|tpubench|tensorflow" in line


def test_bf16_relu_mask_is_the_forward_outputs():
    """Without a side input the backward pass recomputes the ReLU's mask from x: it must
    pass exactly the elements whose bf16 output is positive (d beta = the sum of dy there)."""
    x, _, gamma, beta, w = _inputs(tf.bfloat16, seed=3)
    with tf.GradientTape() as tape:
        tape.watch(beta)
        y = _own(x, gamma, beta, None, True)[0]
        loss = tf.reduce_sum(tf.cast(y, tf.float32) * w)
    dbeta = tape.gradient(loss, beta).numpy()
    passed = tf.cast(y, tf.float32).numpy() > 0
    dy = tf.cast(tf.cast(w, tf.bfloat16), tf.float32).numpy()  # the cast's gradient is bf16
    want = (dy * passed).reshape(-1, SHAPE[-1]).sum(axis=0)
    np.testing.assert_allclose(dbeta, want, rtol=1e-5, atol=1e-4)
    assert 0.2 < passed.mean() < 0.8


@pytest.mark.parametrize("dtype", [tf.float32, tf.bfloat16])
def test_fork_sums_the_branches_gradients_as_addn_does(dtype):
    x = tf.cast(tf.random.stateless_normal([5, 7, 9, 33], seed=[1, 2]), dtype)
    w1 = tf.cast(tf.random.stateless_normal(x.shape, seed=[3, 4]), dtype)
    w2 = tf.cast(tf.random.stateless_normal(x.shape, seed=[5, 6]), dtype)
    grads = []
    for own in (False, True):
        with own_kernels.use(own):
            fork = batch_norm.Fork(dtype=dtype.name)  # as under mixed_bfloat16: no autocast
        with tf.GradientTape() as tape:
            tape.watch(x)
            a, b = fork(x)
            loss = tf.reduce_sum(tf.cast(a * w1, tf.float32) + tf.cast(b * w2, tf.float32))
        np.testing.assert_array_equal(a.numpy(), x.numpy())
        grads.append(tf.cast(tape.gradient(loss, x), tf.float32).numpy())
    np.testing.assert_array_equal(grads[1], grads[0])  # one rounding of w1 + w2 either way
    assert np.abs(grads[0]).max() > 0.5
