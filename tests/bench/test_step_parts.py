"""bench/step_parts.py: Keras' parts against tpubench's in one process, alternating, and a ratio.

The two contenders build different layers (Keras' Dropout against the
zoo's, TensorFlow's Adadelta kernel against tpubench's), both train, the
printed ratio is the per-round median, and a model that is no image
classifier, or no model, is one line.
"""

from __future__ import annotations

import pathlib
import sys

import pytest
import tensorflow as tf

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import step_parts  # noqa: E402


def test_a_tiny_run_prints_both_and_the_speed_ratio(capsys):
    assert step_parts.main(["--tiny", "--rounds=2", "--steps=2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "mnist_cnn train, batch 32, fp32, 2 rounds of 2 steps:"
    assert out[1].lstrip().startswith("keras: ") and out[2].lstrip().startswith("tpubench: ")
    assert out[3].startswith("  tpubench's speed / keras': ")


def _tiny_mnist_cnn():
    """(spec, params, images, labels): tiny mnist_cnn and one batch of 8."""
    from tpubench.model import registry

    spec = registry.get("mnist_cnn")
    params = {**registry.resolve_params(spec, {}, tiny=True), "global_batch_size": 8, "seed": 1}
    images = tf.random.stateless_uniform([8, 28, 28, 1], seed=[1, 2])
    labels = tf.random.stateless_uniform([8], seed=[3, 4], maxval=10, dtype=tf.int32)
    return spec, params, images, labels


def test_the_contenders_differ_in_their_dropout_and_update_and_both_train():
    from tpubench.model import cpu_ops

    spec, params, images, labels = _tiny_mnist_cnn()
    ops = {}
    for ours in (False, True):
        step = step_parts.make_step(spec, params, images, labels, "fp32", ours)
        losses = [float(step()) for _ in range(40)]  # 8 random labels, learnt by heart
        assert sum(losses[-5:]) / 5 < 0.85 * losses[0], losses
        graph = step.get_concrete_function().graph
        ops[ours] = {op.type for op in graph.get_operations()}
    assert "StatelessRandomUniformV2" in ops[False] and "ResourceApplyAdadelta" in ops[False]
    assert "StatelessRandomUniformFullIntV2" in ops[True]
    if cpu_ops.available()[0]:
        assert "TpubenchApplyAdadelta" in ops[True]


def test_compare_weight_copy_times_tpubench_with_and_without_the_bf16_copies(capsys):
    from tpubench.model import cpu_ops

    if not cpu_ops.available()[0]:
        pytest.skip("no C++ compiler here")
    args = ["--tiny", "--rounds=2", "--steps=2", "--precision=bf16", "--compare=weight_copy"]
    assert step_parts.main(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "mnist_cnn train, batch 32, bf16, 2 rounds of 2 steps:"
    assert out[1].lstrip().startswith("casts: ") and out[2].lstrip().startswith("copies: ")
    assert out[3].startswith("  copies's speed / casts': ")


def test_only_the_copies_contender_reads_bf16_copies():
    from tpubench.model import cpu_ops

    if not cpu_ops.available()[0]:
        pytest.skip("no C++ compiler here")
    spec, params, images, labels = _tiny_mnist_cnn()
    casts = {}
    for copies in (False, True):
        step = step_parts.make_step(spec, params, images, labels, "bf16", True, copies)
        assert float(step()) > 0
        graph = step.get_concrete_function().graph
        casts[copies] = sum(op.type == "Cast" for op in graph.get_operations())
    assert casts[False] > casts[True]  # no cast of the copied weights or their gradients


def test_the_ratio_is_the_median_of_the_rounds():
    args = step_parts.parse_args(["--rounds=3", "--steps=5"])
    out = step_parts.report(args, {"keras": [10.0, 12.0, 9.0], "tpubench": [8.0, 12.0, 10.0]})
    assert out.endswith("tpubench's speed / keras': 1.000x (0.900-1.250)")


@pytest.mark.parametrize(
    ("model", "says"),
    [
        ("ptb_lstm", "error: --model=ptb_lstm: not an image classifier; try mnist_cnn, resnet50"),
        ("nosuch", "error: unknown model 'nosuch'; accepted: alexnet"),
    ],
)
def test_a_model_that_is_no_image_classifier_is_one_line(model, says):
    with pytest.raises(SystemExit) as e:
        step_parts.main([f"--model={model}"])
    assert str(e.value).startswith(says)
    assert "\n" not in str(e.value)
