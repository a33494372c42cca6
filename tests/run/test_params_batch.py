"""A model written against the old params["batch_size"] still trains, and is told once."""

from __future__ import annotations

import json
import subprocess
import sys

# A user model from before per_replica_batch_size: it reads params["batch_size"] in its
# model_fn (once per replica per traced step) and input_fn (synthetic data leaves it unused).
OLD_MODEL = """
import keras
import tensorflow as tf

from tpubench.model import model_api, registry


def input_fn(params, input_context, mode):
    n = 64
    x = tf.random.stateless_normal([n, 8], seed=[1, 2])
    y = tf.cast(tf.reduce_sum(x, axis=1) > 0, tf.int32)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).repeat()
    return ds.batch(params["batch_size"], drop_remainder=True)


def model_fn(model, features, labels, mode, params):
    out = model_api.classification_model_fn(model, features, labels, mode, params)
    assert params.get("batch_size") == params["per_replica_batch_size"]
    return out


SPEC = registry.register(
    model_api.ModelSpec(
        name="old_batch",
        description="reads params['batch_size']",
        build_model=lambda p: keras.Sequential([keras.Input((8,)), keras.layers.Dense(2)]),
        build_optimizer=lambda p: keras.optimizers.SGD(0.1),
        model_fn=model_fn,
        input_fn=input_fn,
        element_spec=lambda p: (tf.TensorSpec([8], tf.float32), tf.TensorSpec([], tf.int32)),
        examples_per_epoch={"train": 64, "eval": 64},
        default_batch_size=8,
    )
)
"""


def test_an_old_model_reading_params_batch_size_trains_and_is_told_once(tmp_path):
    (tmp_path / "old_batch.py").write_text(OLD_MODEL)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tpubench",
            "train",
            "--model_module=old_batch.py",
            "--model=old_batch",
            "--num_cpu_devices=2",
            "--batch_size=16",
            "--train_steps=3",
            "--use_synthetic_data",
            "--results_dir=runs",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    told = [x for x in proc.stderr.splitlines() if 'params["batch_size"] is deprecated' in x]
    assert len(told) == 1, proc.stderr[-3000:]
    assert 'read params["per_replica_batch_size"]' in told[0]
    (path,) = (tmp_path / "runs").glob("*.json")
    rec = json.loads(path.read_text())
    assert rec["status"] == "ok" and rec["train_steps"] == 3
    assert rec["per_replica_batch_size"] == 8 and rec["global_batch_size"] == 16
    # schema 2: the batch is recorded once per meaning, never in the model's params
    assert not {"batch_size", "global_batch_size"} & set(rec["model"]["params"])
