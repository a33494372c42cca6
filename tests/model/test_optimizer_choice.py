"""--optimizer: the model's own optimizer, or tf_cnn_benchmarks' plain SGD and the others,
at the model's learning rate."""

from __future__ import annotations

import keras
import pytest
from conftest import one_line_error, run_cli

from tpubench.model import optim
from tpubench.study import cells, spec


def test_each_choice_keeps_the_models_learning_rate_and_weight_decay():
    own = optim.MomentumSGD(learning_rate=0.25, momentum=0.9, weight_decay=1e-4)
    assert optim.choose(own, "model") is own
    sgd = optim.choose(own, "sgd")
    assert isinstance(sgd, optim.MomentumSGD) and sgd.momentum == 0.0
    assert float(sgd.learning_rate) == 0.25 and sgd.weight_decay == 1e-4
    assert optim.choose(own, "momentum").momentum == 0.9
    assert isinstance(optim.choose(own, "rmsprop"), keras.optimizers.RMSprop)
    adam = optim.choose(own, "adam")
    assert isinstance(adam, keras.optimizers.Adam) and float(adam.learning_rate) == 0.25


def test_a_schedule_stays_a_schedule():
    schedule = keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)
    chosen = optim.choose(keras.optimizers.RMSprop(learning_rate=schedule), "sgd")
    assert chosen._learning_rate is schedule


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
