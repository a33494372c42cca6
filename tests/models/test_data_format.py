"""`--data_format`: a convolutional net built channels-first computes what it does channels-last.

The same weights give the same outputs, the same batch-norm statistics and
the same training losses in either layout (also with batch norm synchronised
over replicas), a checkpoint made in one layout resumes in the other, the
record says which layout ran, and a net that cannot take channels-first is
refused in one line.  On CPU, `auto` is channels-last; tests that run
channels-first on the CPU are marked `cpu_nchw` and skip on a CPU whose
TensorFlow runs NHWC only (tests/models/test_cpu_layout.py covers that host).
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf
from conftest import one_line_error, run_cli

from tpubench.core.precision import Precision
from tpubench.model import batch_norm, layers, registry

LAYOUT_NETS = [
    "resnet50",
    "resnet152",
    "inception_v3",
    "mnist_cnn",
    "alexnet",
    "vgg16",
    "cifar10_cnn",
]


def _build_both(name: str, overrides: dict):
    spec = registry.get(name)
    params = registry.resolve_params(spec, overrides, tiny=True)
    nets = {}
    for fmt in ("channels_last", "channels_first"):
        keras.utils.set_random_seed(3)
        with layers.image_layout(fmt):
            nets[fmt] = spec.build_model(params)
    nets["channels_first"].set_weights(nets["channels_last"].get_weights())
    features, _ = spec.element_spec(params)
    x = tf.random.stateless_normal([4, *features.shape], seed=[1, 2])
    return nets, {"channels_last": x, "channels_first": tf.transpose(x, (0, 3, 1, 2))}


def test_the_channels_first_nets_are_the_declared_ones():
    declared = sorted(n for n in registry.names() if registry.get(n).channels_first)
    assert declared == sorted(LAYOUT_NETS)
    # A net built channels-first really is: its first convolution sees NCHW.
    nets, _ = _build_both("resnet50", {})
    conv = next(x for x in nets["channels_first"].layers if isinstance(x, keras.layers.Conv2D))
    assert conv.data_format == "channels_first"
    assert conv.output.shape[1] == conv.filters
    assert keras.config.image_data_format() == "channels_last", "the global format is restored"


@pytest.mark.cpu_nchw
@pytest.mark.parametrize("name", LAYOUT_NETS)
def test_both_layouts_predict_the_same(name):
    nets, x = _build_both(name, {})
    last = nets["channels_last"](x["channels_last"], training=False).numpy()
    first = nets["channels_first"](x["channels_first"], training=False).numpy()
    assert last.shape == first.shape
    np.testing.assert_allclose(first, last, rtol=1e-4, atol=1e-4)


@pytest.mark.cpu_nchw
@pytest.mark.parametrize("name", ["resnet50", "inception_v3"])
def test_both_layouts_train_batch_norm_the_same(name):
    """Training mode: batch statistics over N, H, W in both layouts, and equal moving averages."""
    nets, x = _build_both(name, {"dropout": 0.0} if name == "inception_v3" else {})
    last = nets["channels_last"](x["channels_last"], training=True).numpy()
    first = nets["channels_first"](x["channels_first"], training=True).numpy()
    np.testing.assert_allclose(first, last, rtol=1e-4, atol=1e-4)

    def moving(net):
        return [w.numpy() for w in net.non_trainable_weights]

    for a, b in zip(moving(nets["channels_last"]), moving(nets["channels_first"]), strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("model", "requested", "accelerator", "precision", "expected"),
    [
        ("resnet50", "auto", "gpu", "fp32", "channels_first"),  # cuDNN fp32: NCHW
        ("resnet50", "auto", "gpu", "fp16", "channels_last"),  # tensor cores: NHWC
        ("resnet50", "auto", "gpu", "bf16", "channels_last"),
        ("resnet50", "auto", "cpu", "fp32", "channels_last"),
        ("resnet50", "auto", "tpu", "fp32", "channels_last"),
        ("resnet50", "channels_first", "cpu", "bf16", "channels_first"),  # asked for: given
        ("resnet50", "channels_last", "gpu", "fp32", "channels_last"),
        ("googlenet", "auto", "gpu", "fp32", "channels_last"),  # cannot choose
        ("mnist_mlp", "channels_last", "gpu", "fp32", "channels_last"),
    ],
)
def test_auto_chooses_by_accelerator_and_precision(
    model, requested, accelerator, precision, expected
):
    from tpubench.run import layout

    spec = registry.get(model)
    assert layout.resolve(requested, spec, accelerator, Precision(precision)) == expected


@pytest.mark.cpu_nchw
def test_fused_batch_norm_channels_first_matches_numpy():
    rng = np.random.default_rng(5)
    x = rng.normal(2.0, 3.0, size=(6, 4, 5, 5)).astype("float32")  # NCHW, 4 channels
    with layers.image_layout("channels_first"):
        bn = batch_norm.FusedBatchNorm(momentum=0.9, epsilon=1e-5)
    y = bn(x, training=True).numpy()
    mean = x.mean(axis=(0, 2, 3), dtype="float64")
    var = x.var(axis=(0, 2, 3), dtype="float64")
    expected = (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)
    n = x.size // 4
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.1 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        bn.moving_variance.numpy(), 0.9 + 0.1 * var * n / (n - 1), rtol=1e-5, atol=1e-6
    )


# ------------------------------------------------------------- through the CLI
COMMON = ["--model=resnet50", "--tiny", "--use_synthetic_data", "--batch_size=8", "--seed=7"]


def _train(tmp_path, name, *extra):
    out = tmp_path / name
    proc, record = run_cli(
        "train",
        *COMMON,
        "--params=sync_batch_norm=true",
        f"--model_dir={out / 'model'}",
        *extra,
        results_dir=out / "runs",
        timeout=400,
    )
    assert proc.returncode == 0, proc.stderr
    assert record is not None and record["status"] == "ok", proc.stderr
    record["_stdout"] = proc.stdout
    return record, out / "model"


@pytest.mark.cpu_nchw
def test_a_channels_first_run_says_so(tmp_path):
    proc, record = run_cli(
        "train",
        "--model=mnist_cnn",
        "--tiny",
        "--use_synthetic_data",
        "--train_steps=2",
        "--data_format=channels_first",
        results_dir=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert record["model"]["data_format"] == "channels_first"
    assert "fp32, channels-first, global batch" in proc.stdout
    assert record["config"]["data_format"] == "channels_first"


@pytest.mark.cpu_nchw
@pytest.mark.slow
def test_channels_first_trains_like_channels_last_and_resumes_across_layouts(tmp_path):
    """Two steps, channels-last on 1 replica against channels-first on 2 (synchronised BN)."""
    last, _ = _train(tmp_path, "last", "--train_steps=2")
    first, model_dir = _train(
        tmp_path, "first", "--train_steps=2", "--data_format=channels_first", "--num_cpu_devices=2"
    )
    assert last["model"]["data_format"] == "channels_last"  # auto, on a CPU
    assert first["model"]["data_format"] == "channels_first"
    assert first["placement"]["num_replicas"] == 2
    assert "fp32, channels-first, global batch 8" in first["_stdout"]
    assert "fp32, global batch 8" in last["_stdout"]
    assert first["results"]["final_loss"] == pytest.approx(last["results"]["final_loss"], rel=1e-4)
    # Its checkpoint resumes channels-last: the weights are the same in both layouts.
    out = model_dir.parent
    proc, resumed = run_cli(
        "train",
        *COMMON,
        "--params=sync_batch_norm=true",
        f"--model_dir={model_dir}",
        "--train_steps=3",
        "--data_format=channels_last",
        results_dir=out / "runs",
        timeout=400,
    )
    assert proc.returncode == 0, proc.stderr
    assert resumed["status"] == "ok"
    assert resumed["resumed_from_step"] == 2
    assert resumed["results"]["final_step"] == 3
    assert resumed["model"]["data_format"] == "channels_last"


def test_a_channels_last_only_model_refuses_channels_first(tmp_path):
    proc, record = run_cli(
        "train",
        "--model=mnist_mlp",
        "--data_format=channels_first",
        "--train_steps=1",
        results_dir=tmp_path / "runs",
    )
    line = one_line_error(proc)
    assert proc.returncode == 2
    assert "--data_format=channels_first" in line and "mnist_mlp" in line
    assert "auto or channels_last" in line and "resnet50" in line
    proc, _ = run_cli(
        "infer", "--model=googlenet", "--data_format=channels_first", results_dir=tmp_path / "runs"
    )
    assert "googlenet is built channels-last only" in one_line_error(proc)
    proc, _ = run_cli(
        "train", "--data_format=NCHW", "--train_steps=1", results_dir=tmp_path / "runs"
    )
    line = one_line_error(proc)
    assert "NCHW" in line and "channels_first" in line
