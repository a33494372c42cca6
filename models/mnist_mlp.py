"""mnist_mlp: the Keras MNIST MLP of the CPU-vs-GPU cost study.

784-512-512-10 with ReLU and dropout 0.2, RMSprop, batch 128 (Keras's
`mnist_mlp.py` example).  669,706 parameters.  Offline it trains on the
embedded `digits` dataset (real handwritten digits at MNIST's shape):

    tpubench train --model=mnist_mlp --train_steps=400 --steps_per_loop=20

Measured on this machine (2 vCPUs, Intel Xeon @ 2.50GHz, shared with other
jobs, so lower bounds; docs/models.md): 5,328 examples/s training at batch
128 (synthetic data, `--use_synthetic_data --train_steps=400
--steps_per_loop=20`), $0.0003 per 60,000-example MNIST epoch on a GCP
n1-standard-2 at the on-demand price; 3.22 MFLOPs per example per training
step (1.34 forward).
"""

import keras
import tensorflow as tf

from tpubench.data import pipeline
from tpubench.model import layers, model_api, optim, registry


def build_model(params):
    inputs = keras.Input(shape=(28, 28, 1))
    x = keras.layers.Flatten()(inputs)
    for _ in range(params["num_hidden_layers"]):
        x = layers.Dense(params["hidden_units"], activation="relu")(x)
        x = layers.Dropout(params["dropout"])(x)
    outputs = layers.Dense(params["num_classes"])(x)
    return keras.Model(inputs, outputs, name="mnist_mlp")


def build_optimizer(params):
    return optim.RMSprop(learning_rate=params["learning_rate"])


def element_spec(params):
    return tf.TensorSpec([28, 28, 1], tf.float32), tf.TensorSpec([], tf.int32)


SPEC = registry.register(
    model_api.ModelSpec(
        name="mnist_mlp",
        description="Keras MNIST MLP 784-512-512-10 (CPU-vs-GPU cost study)",
        build_model=build_model,
        build_optimizer=build_optimizer,
        model_fn=model_api.classification_model_fn,
        input_fn=pipeline.image_classification_input_fn(pipeline.scale_image),
        element_spec=element_spec,
        examples_per_epoch={"train": 60_000, "eval": 10_000},
        datasets=("mnist", "digits"),
        default_params={
            "hidden_units": 512,
            "num_hidden_layers": 2,
            "dropout": 0.2,
            "num_classes": 10,
            "learning_rate": 0.001,
        },
        tiny_params={"hidden_units": 32},
        default_batch_size=128,
    )
)
