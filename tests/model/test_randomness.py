"""A model's randomness: every zoo model starts with weights and dropout seeds of its own, a
model that repeats one is told on the console, and a resumed run continues its dropout masks
(model/randomness.py, run/restoring.py)."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import textwrap

import keras
import pytest
import tensorflow as tf
from conftest import run_cli

from tpubench.model import layers, model_api, randomness, registry


def _build(name: str):
    spec = registry.get(name)
    keras.utils.set_random_seed(0)  # as the runner does before every build
    return spec.build_model(model_api.RunParams(registry.resolve_params(spec, {}, tiny=True)))


@pytest.mark.parametrize("name", registry.names())
def test_each_zoo_model_starts_with_weights_and_dropout_seeds_of_its_own(name):
    """One initializer instance, or one integer seed, handed to several layers made
    ResNet's, BERT's and the PTB LSTM's weights start as copies of each other, and
    mnist_mlp's two dropout layers drop the same units."""
    model = _build(name)
    assert randomness.repeats(model) == []
    seeds = [int(state.numpy()[0]) for state in randomness.seed_states(model)]
    assert len(set(seeds)) == len(seeds), seeds


def test_a_shared_initializer_and_a_shared_dropout_seed_are_found_scaled_copies_too():
    keras.utils.set_random_seed(0)
    shared = keras.initializers.RandomNormal(stddev=0.05)
    inputs = keras.Input((32,))
    x = keras.layers.Dense(32, kernel_initializer=shared, name="a")(inputs)
    x = layers.Dropout(0.5, seed=7, name="drop_a")(x)
    x = keras.layers.Dense(32, kernel_initializer=shared, name="b")(x)
    x = layers.Dropout(0.5, seed=7, name="drop_b")(x)
    weights, dropout = randomness.repeats(keras.Model(inputs, x))
    assert weights.startswith("1 weight starts as a copy of another (a/kernel = b/kernel):")
    assert dropout.startswith("dropout layers drop_a, drop_b share one seed")
    # The same integer seed at another fan-in gives a scaled copy: found too.
    x = inputs
    for name, units in (("c", 16), ("d", 64), ("e", 8)):
        seeded = keras.initializers.VarianceScaling(2.0, seed=3)
        x = keras.layers.Dense(units, kernel_initializer=seeded, name=name)(x)
    (weights,) = randomness.repeats(keras.Model(inputs, x))
    assert weights.startswith(
        "2 weights start as copies of others (c/kernel = d/kernel = e/kernel):"
    )
    # Biases of zeros, LSTM's forget-gate ones, and independent initializers are no repeats.
    keras.utils.set_random_seed(0)
    inputs = keras.Input((5, 8))
    x = keras.layers.LSTM(16, return_sequences=True)(inputs)
    x = keras.layers.LSTM(16)(x)
    x = layers.Dropout(0.5)(keras.layers.Dense(16)(x))
    x = layers.Dropout(0.5)(keras.layers.Dense(16)(x))
    assert randomness.repeats(keras.Model(inputs, x)) == []


LEAKY = """
    import keras
    import tensorflow as tf

    from tpubench.data import pipeline
    from tpubench.model import layers, model_api, registry

    def build_model(params):
        init = keras.initializers.GlorotUniform(seed=params["seed"])
        inputs = keras.Input(shape=(8, 8, 1))
        x = keras.layers.Flatten()(inputs)
        x = keras.layers.Dense(64, activation="relu", kernel_initializer=init, name="h1")(x)
        x = layers.Dropout(0.5, seed=1, name="drop1")(x)
        x = keras.layers.Dense(64, activation="relu", kernel_initializer=init, name="h2")(x)
        x = layers.Dropout(0.5, seed=1, name="drop2")(x)
        return keras.Model(inputs, keras.layers.Dense(3)(x))

    SPEC = registry.register(
        model_api.ModelSpec(
            name="leaky",
            description="one initializer and one dropout seed, each used twice",
            build_model=build_model,
            build_optimizer=lambda params: keras.optimizers.SGD(0.1),
            model_fn=model_api.classification_model_fn,
            input_fn=pipeline.image_classification_input_fn(pipeline.scale_image),
            element_spec=lambda params: (
                tf.TensorSpec([8, 8, 1], tf.float32),
                tf.TensorSpec([], tf.int32),
            ),
            examples_per_epoch={"train": 1000},
            default_params={"num_classes": 3, "seed": 0},
        )
    )
"""


def test_a_users_model_that_repeats_its_randomness_is_told_and_still_trains(tmp_path):
    module = tmp_path / "leaky.py"
    module.write_text(textwrap.dedent(LEAKY))
    proc, record = run_cli(
        "train",
        f"--model_module={module}",
        "--model=leaky",
        "--use_synthetic_data",
        "--batch_size=8",
        "--train_steps=2",
        f"--model_dir={tmp_path / 'run'}",
        results_dir=tmp_path / "results",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    warned = [line for line in proc.stderr.splitlines() if line.startswith("tpubench train: warn")]
    assert warned == [
        "tpubench train: warning: leaky: 1 weight starts as a copy of another (h1/kernel = "
        "h2/kernel): an initializer seeded with an integer, or one instance given to "
        "several layers, gives the same values on every call; give each layer its own "
        "initializer, without a seed (--seed seeds them all)",
        "tpubench train: warning: leaky: dropout layers drop1, drop2 share one seed and "
        "drop the same units each step; give them no seed (--seed seeds them all)",
    ]
    assert record["status"] == "ok"
    assert record["warnings"] == [line.split("warning: ", 1)[1] for line in warned]


TRAIN = (
    "train",
    "--model=mnist_cnn",
    "--tiny",
    "--use_synthetic_data",
    "--batch_size=16",
    "--checkpoint_every_steps=4",
)


def _train(tmp_path, steps: int, model_dir: str, name: str):
    proc, record = run_cli(
        *TRAIN,
        f"--train_steps={steps}",
        f"--model_dir={tmp_path / model_dir}",
        results_dir=tmp_path / name,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc, record


def test_a_resumed_run_with_dropout_ends_where_the_uninterrupted_one_ends(tmp_path):
    """The dropout layers' seed states are in the checkpoint: the resumed run draws the
    masks the uninterrupted run drew at the same steps (before, it drew the first steps'
    again and ended elsewhere)."""
    _, whole = _train(tmp_path, 8, "whole", "r_whole")
    _train(tmp_path, 4, "halves", "r_first")
    proc, resumed = _train(tmp_path, 8, "halves", "r_resumed")
    assert resumed["resumed_from_step"] == 4
    assert "warning" not in proc.stderr
    assert resumed["results"]["final_loss"] == whole["results"]["final_loss"]
    saved = dict(tf.train.list_variables(str(tmp_path / "halves" / "checkpoints" / "ckpt-8")))
    states = [name for name in saved if name.startswith("dropout_rng/")]
    assert len(states) == 2 and all(saved[name] == [2] for name in states)


def test_a_checkpoint_without_dropout_state_resumes_with_one_warning(tmp_path):
    """A checkpoint saved before the dropout state was kept still resumes: the network and
    optimizer are restored, and one line says the masks start again."""
    from tpubench.run import restoring
    from tpubench.run import runner as runner_lib

    _train(tmp_path, 4, "new", "r_new")
    spec = registry.get("mnist_cnn")
    params = registry.resolve_params(spec, {}, tiny=True)
    params.update(per_replica_batch_size=16, global_batch_size=16, seed=0)
    runner = runner_lib.Runner(spec, params, tf.distribute.OneDeviceStrategy("/cpu:0"))
    runner.checkpoint().restore(str(tmp_path / "new" / "checkpoints" / "ckpt-4"))
    assert int(runner.global_step.numpy()) == 4
    old = tf.train.Checkpoint(**restoring.parts(runner, dropout_state=False))
    tf.train.CheckpointManager(old, str(tmp_path / "old" / "checkpoints"), 2).save(4)
    proc, record = _train(tmp_path, 8, "old", "r_old")
    assert record["resumed_from_step"] == 4 and record["status"] == "ok"
    path = tmp_path / "old" / "checkpoints" / "ckpt-4"
    assert record["warnings"] == [
        f"checkpoint {path} holds no dropout state (an older tpubench saved it): the dropout "
        "masks start again from the first step's"
    ]
    assert proc.stderr.count("warning:") == 1


_REPLICAS = textwrap.dedent(
    """
    import numpy as np
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    from tpubench.model import layers

    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        drop = layers.Dropout(0.5, seed=11)
        drop.build((8, 128))
    masks = strategy.experimental_local_results(
        tf.function(lambda: strategy.run(lambda: drop(tf.ones([8, 128]), training=True)))()
    )
    a, b = (m.numpy() != 0 for m in masks)
    print("same", int((a == b).all()), "kept", round(a.mean(), 2), round(b.mean(), 2))
    # One replica: the seed as it was, the mask of `layers.dropout` at the generator's seed.
    alone = layers.Dropout(0.5, seed=11)
    alone.build((8, 128))
    first = alone(tf.ones([8, 128]), training=True).numpy()
    seed = tf.constant([11, 0], tf.int32)
    print("alone", int(np.array_equal(first, layers.dropout(tf.ones([8, 128]), 0.5, seed).numpy())))

    # Keras' own random layers, as a user's model has them, after the runner's
    # separate_streams: Dropout, Dropout with a noise shape and GaussianNoise.
    import keras
    from tpubench.model import randomness

    def build():
        x = keras.Input((128,))
        return keras.Model(x, [
            keras.layers.Dropout(0.5, seed=21)(x),
            keras.layers.Dropout(0.5, noise_shape=(None, 1), seed=22)(x),
            keras.layers.GaussianNoise(1.0, seed=23)(x),
        ])

    with strategy.scope():
        model = build()
        print("streams", randomness.separate_streams(model))
    outs = tf.function(lambda: strategy.run(lambda: model(tf.ones([8, 128]), training=True)))()
    pairs = [strategy.experimental_local_results(o) for o in outs]
    print("keras_same", *(int(np.array_equal(a.numpy(), b.numpy())) for a, b in pairs))
    # One replica: separated or not, the same numbers.
    plain, separated = build(), build()
    randomness.separate_streams(separated)
    same = [np.array_equal(a, b) for a, b in zip(plain(tf.ones([8, 128]), training=True),
                                                 separated(tf.ones([8, 128]), training=True))]
    print("keras_alone", *map(int, same))
    """
)


def test_each_replica_draws_its_own_dropout_masks():
    """The seed state is mirrored, so every replica drew the same masks for its share of
    the batch; each now folds its replica id into the seed (one replica: unchanged)."""
    proc = subprocess.run(
        [sys.executable, "-c", _REPLICAS], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    same, alone, streams, keras_same, keras_alone = (
        line.split() for line in proc.stdout.splitlines()[-5:]
    )
    assert same[:2] == ["same", "0"] and all(0.4 < float(k) < 0.6 for k in same[3:])
    assert alone == ["alone", "1"]
    # Keras' own layers drew the same numbers on both replicas before separate_streams.
    assert streams == ["streams", "3"]
    assert keras_same == ["keras_same", "0", "0", "0"]
    assert keras_alone == ["keras_alone", "1", "1", "1"]


PROBE = pathlib.Path(__file__).parents[1] / "launch" / "dropout_probe.py"


def test_a_users_keras_dropout_draws_a_mask_of_its_own_on_each_replica(tmp_path):
    """A user's model with Keras' own Dropout, on two replicas: every replica drew the
    same mask before the runner gave each seed generator a stream a replica."""
    proc, record = run_cli(
        "train",
        f"--model_module={PROBE}",
        "--model=keras_dropout_probe",
        "--num_cpu_devices=2",
        "--batch_size=32",
        "--train_steps=3",
        "--steps_per_loop=3",
        "--deterministic_input",
        f"--model_dir={tmp_path / 'run'}",
        results_dir=tmp_path / "results",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert record["status"] == "ok" and record["placement"]["num_replicas"] == 2
    steps = [line.split() for line in proc.stderr.splitlines() if line.startswith("STEP ")]
    assert len(steps) == 6  # 3 steps, 2 replicas
    assert len({pixels for _, pixels, _ in steps}) == 6  # each replica its half of the batch
    assert len({mask for _, _, mask in steps}) == 6
