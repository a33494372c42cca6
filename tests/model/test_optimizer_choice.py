"""--optimizer: the chosen update's arithmetic at the model's learning rate, weight decay
and clipping; train records it; the tf_cnn_benchmarks studies train with its plain SGD."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf
from conftest import one_line_error, run_cli

from tpubench.core import vocab
from tpubench.model import optim, optimizer_choice
from tpubench.study.run import cells
from tpubench.study.spec import spec


def _steps(opt, steps=2, loss_scale=False):
    """W after STEPS updates of w=1 with gradient 0.5 (loss 0.5 w)."""
    w = keras.Variable(np.ones(1, "float32"))
    if loss_scale:
        opt = optim.LossScaleOptimizer(opt)
    opt.build([w])
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = 0.5 * tf.reduce_sum(w.value)
            scaled = opt.scale_loss(loss) if loss_scale else loss
        opt.apply_gradients([(tape.gradient(scaled, w.value), w)])
    return float(w.numpy()[0])


def test_model_keeps_its_own():
    own = keras.optimizers.RMSprop(learning_rate=0.01)
    assert optimizer_choice.choose("model", own) is own
    assert optimizer_choice.describe("model", own) == "model (RMSprop)"


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("sgd", 1 - 2 * 0.1 * 0.5),  # w -= lr * g, twice: 0.9
        ("momentum", 1 - 0.05 - (0.9 * 0.05 + 0.05)),  # accum = 0.9 accum - lr g: 0.855
    ],
)
def test_sgd_and_momentum_at_the_models_rate(name, want):
    own = keras.optimizers.Adam(learning_rate=0.1)
    assert _steps(optimizer_choice.choose(name, own)) == pytest.approx(want, abs=1e-6)


def test_choices_compose_with_fp16_loss_scaling():
    for name in ("sgd", "momentum"):
        own = keras.optimizers.RMSprop(learning_rate=0.1)
        plain = _steps(optimizer_choice.choose(name, own))
        scaled = _steps(optimizer_choice.choose(name, own), loss_scale=True)
        assert scaled == pytest.approx(plain, abs=1e-6), name


def test_rmsprop_and_adam_take_tf_cnn_benchmarks_hyperparameters():
    own = optim.MomentumSGD(learning_rate=0.2, momentum=0.9)
    rms = optimizer_choice.choose("rmsprop", own)
    assert (rms.rho, rms.momentum, rms.epsilon) == (0.9, 0.9, 1.0)
    adam = optimizer_choice.choose("adam", own)
    assert (adam.beta_1, adam.beta_2, adam.epsilon) == (0.9, 0.999, 1e-8)
    assert float(adam.learning_rate) == pytest.approx(0.2)


def test_schedule_and_clipping_are_kept():
    schedule = keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)
    own = keras.optimizers.SGD(learning_rate=schedule, global_clipnorm=0.25)
    chosen = optimizer_choice.choose("sgd", own)
    assert chosen._learning_rate is schedule
    assert chosen.global_clipnorm == 0.25


def test_every_choice_builds():
    own = keras.optimizers.SGD(learning_rate=0.1)
    for name in vocab.OPTIMIZERS:
        assert optimizer_choice.choose(name, own) is not None
    with pytest.raises(ValueError, match="lamb"):
        optimizer_choice.choose("lamb", own)


def test_weight_decay_is_kept():
    own = optim.MomentumSGD(learning_rate=0.25, momentum=0.9, weight_decay=1e-4)
    for name in ("sgd", "momentum", "rmsprop", "adam"):
        assert optimizer_choice.choose(name, own).weight_decay == 1e-4, name


def test_train_records_the_optimizer_and_refuses_an_unknown_one(tmp_path):
    proc, record = run_cli(
        "train", "--model=mnist_mlp", "--tiny", "--train_steps=4", "--optimizer=sgd",
        results_dir=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert record["config"]["optimizer"] == "sgd" and record["status"] == "ok"
    proc, _ = run_cli("train", "--optimizer=lamb", results_dir=tmp_path)
    line = one_line_error(proc)
    assert "--optimizer=lamb" in line and "model|sgd|momentum|rmsprop|adam" in line


@pytest.mark.parametrize("name", ["strategies", "cnn_scaling"])
def test_the_tf_cnn_benchmarks_studies_train_with_its_plain_sgd(name):
    study = spec.load(str(spec.shipped_dir() / f"{name}.yaml"))
    host = cells.Host(tuple(range(64)), 8, "NVIDIA H100 80GB HBM3", False, "gs://b/p")
    train = [c for c in cells.expand(study, "full") if c.part.command == "train"]
    assert train and all(c.flags(host, "r", "j")["optimizer"] == "sgd" for c in train)
