"""`--fold_batch_norm`: inference with each batch norm folded into the convolution before it.

A folded network predicts what the unfolded one does (fp32 up to rounding,
bf16 within bf16's), from non-trivial batch-norm statistics; every batch norm
that reads a convolution is folded and nothing else; `auto` folds on a CPU
only; the record says how many were folded; a bad value is one line.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf
from conftest import one_line_error, run_cli

from tpubench.model import batch_norm, folding, registry
from tpubench.run import conv_grads


def _net(name: str, precision_policy: str = "float32"):
    spec = registry.get(name)
    params = registry.resolve_params(spec, {}, tiny=True)
    keras.mixed_precision.set_global_policy(precision_policy)
    try:
        keras.utils.set_random_seed(5)
        net = spec.build_model(params)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    # Statistics and affine weights far from their initial 0/1, so a wrong fold shows.
    rng = np.random.default_rng(0)
    for bn in (x for x in net.layers if isinstance(x, batch_norm.FusedBatchNorm)):
        c = bn.beta.shape[0]
        bn.moving_mean.assign(rng.normal(0, 0.5, c).astype("float32"))
        bn.moving_variance.assign(rng.uniform(0.5, 2.0, c).astype("float32"))
        bn.beta.assign(rng.normal(0, 0.3, c).astype("float32"))
        if bn.gamma is not None:
            bn.gamma.assign(rng.uniform(0.5, 1.5, c).astype("float32"))
    features, _ = spec.element_spec(params)
    x = tf.random.stateless_normal([4, *features.shape], seed=[3, 4])
    return net, x


@pytest.mark.parametrize("name", ["resnet50", "inception_v3"])
def test_a_folded_network_predicts_what_the_unfolded_one_does(name):
    net, x = _net(name)
    before = net(x, training=False).numpy()
    norms = [x for x in net.layers if isinstance(x, batch_norm.FusedBatchNorm)]
    assert folding.fold_batch_norms(net) == len(norms) > 0  # each reads a convolution
    after = net(x, training=False).numpy()
    scale = np.abs(before).max()
    assert scale > 0
    np.testing.assert_allclose(after, before, rtol=0, atol=1e-4 * scale)
    assert [v.name for v in net.weights] == [v.name for v in _net(name)[0].weights]


def test_in_bf16_a_folded_network_is_within_bf16_rounding():
    net, x = _net("resnet50", "mixed_bfloat16")
    before = tf.cast(net(x, training=False), tf.float32).numpy()
    assert folding.fold_batch_norms(net) > 0
    after = tf.cast(net(x, training=False), tf.float32).numpy()
    # bf16 keeps 8 bits: each rounding is up to 0.4%; a wrong fold is off by far more.
    assert np.abs(after - before).max() <= 0.05 * np.abs(before).max()


def test_a_network_without_batch_norm_folds_nothing():
    net, x = _net("googlenet")
    before = net(x).numpy()
    assert folding.fold_batch_norms(net) == 0
    np.testing.assert_array_equal(net(x).numpy(), before)


@pytest.mark.parametrize(
    "requested, accelerator, want",
    [("auto", "cpu", True), ("auto", "gpu", False), ("on", "gpu", True), ("off", "cpu", False)],
)
def test_auto_folds_on_a_cpu_only(requested, accelerator, want):
    assert conv_grads.folds(requested, accelerator) is want


def test_the_record_says_how_many_were_folded_and_a_bad_value_is_one_line(tmp_path):
    common = ["infer", "--model=resnet50", "--tiny", "--use_synthetic_data", "--num_batches=2"]
    proc, rec = run_cli(*common, results_dir=tmp_path / "auto")
    assert proc.returncode == 0, proc.stderr
    n = rec["model"]["batch_norms_folded"]
    norms = [x for x in _net("resnet50")[0].layers if isinstance(x, batch_norm.FusedBatchNorm)]
    assert n == len(norms)
    proc, rec = run_cli(*common, "--fold_batch_norm=off", results_dir=tmp_path / "off")
    assert proc.returncode == 0, proc.stderr
    assert rec["model"]["batch_norms_folded"] == 0
    assert rec["config"]["fold_batch_norm"] == "off"
    proc, _ = run_cli(*common, "--fold_batch_norm=maybe", results_dir=tmp_path / "bad")
    line = one_line_error(proc)
    assert "--fold_batch_norm=maybe" in line and "auto|on|off" in line
