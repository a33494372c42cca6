"""mnist_cnn: the Keras MNIST convnet of the CPU-vs-GPU cost study.

Keras's `mnist_cnn.py` example: 3x3 convolutions of 32 and 64 filters with
ReLU (no padding), a 2x2 max-pool, dropout 0.25, dense 128 with ReLU,
dropout 0.5, 10 classes; Adadelta at learning rate 1.0 (rho 0.95, the
Keras 2 defaults the example ran with), batch 128.  1,199,882 parameters.
Offline it trains on the embedded `digits` dataset (real handwritten digits
at MNIST's shape):

    tpubench train --model=mnist_cnn --train_steps=150 --steps_per_loop=10

Measured on this machine (2 vCPUs, Intel Xeon @ 2.50GHz, shared with other
jobs, so lower bounds; docs/models.md): the command above reached 0.972 eval
accuracy on the 360 held-out digits (seed 42, 429 examples/s); 399
examples/s training at batch 128 on synthetic data (`--use_synthetic_data
--train_steps=100 --steps_per_loop=10`), $0.0040 per 60,000-example MNIST
epoch on a GCP n1-standard-2 at the on-demand price; 79.7 MFLOPs per example
per training step (24.1 forward).  The test trains 200 steps of batch 32
with `--deterministic_input` and asserts >= 0.94 (seeds 1-3 reached
0.953-0.958).
"""

import keras
import tensorflow as tf

from tpubench.data import pipeline
from tpubench.model import layers, model_api, optim, registry


def build_model(params):
    width = params["width"]
    inputs = layers.image_input(28, 28, 1)
    x = inputs
    x = layers.Conv2D(width, 3, activation="relu")(x)
    x = layers.Conv2D(2 * width, 3, activation="relu")(x)
    x = keras.layers.MaxPooling2D(2)(x)
    x = layers.Dropout(params["conv_dropout"])(x)
    x = keras.layers.Flatten()(x)
    x = layers.Dense(params["dense_units"], activation="relu")(x)
    x = layers.Dropout(params["dense_dropout"])(x)
    outputs = layers.Dense(params["num_classes"])(x)
    return keras.Model(inputs, outputs, name="mnist_cnn")


def build_optimizer(params):
    # Keras 3's Adadelta defaults to 0.001, which barely moves; the example
    # ran on Keras 2, whose Adadelta defaulted to 1.0.
    return optim.Adadelta(learning_rate=params["learning_rate"], rho=0.95)


def element_spec(params):
    return tf.TensorSpec([28, 28, 1], tf.float32), tf.TensorSpec([], tf.int32)


SPEC = registry.register(
    model_api.ModelSpec(
        name="mnist_cnn",
        description="Keras MNIST convnet 32-64 conv, dense 128 (CPU-vs-GPU cost study)",
        build_model=build_model,
        build_optimizer=build_optimizer,
        model_fn=model_api.classification_model_fn,
        input_fn=pipeline.image_classification_input_fn(pipeline.scale_image),
        element_spec=element_spec,
        examples_per_epoch={"train": 60_000, "eval": 10_000},
        datasets=("mnist", "digits"),
        default_params={
            "width": 32,
            "dense_units": 128,
            "conv_dropout": 0.25,
            "dense_dropout": 0.5,
            "num_classes": 10,
            "learning_rate": 1.0,
        },
        tiny_params={"width": 4, "dense_units": 16},
        channels_first=True,
        default_batch_size=128,
    )
)
