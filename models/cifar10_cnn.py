"""cifar10_cnn: the VGG-like CIFAR-10 convnet of the CPU-vs-GPU cost study.

Keras's `cifar10_cnn.py` example: two 3x3 conv blocks (32, 64 filters) each
with max-pool and dropout 0.25, dense 512, dropout 0.5, 10 classes; RMSprop
at 1e-4, batch 32.  1,250,858 parameters.

    tpubench train --model=cifar10_cnn --use_synthetic_data --train_steps=50

Measured on this machine (2 vCPUs, Intel Xeon @ 2.50GHz, shared with other
jobs, so lower bounds; docs/models.md): 696 examples/s training at batch 32
(synthetic data, `--train_steps=100 --steps_per_loop=10`), $0.0019 per
50,000-example CIFAR-10 epoch on a GCP n1-standard-2 at the on-demand price;
138 MFLOPs per example per training step (41.6 forward).
"""

import keras
import tensorflow as tf

from tpubench.data import pipeline
from tpubench.model import layers, model_api, optim, registry


def build_model(params):
    size, width = params["image_size"], params["width"]
    inputs = layers.image_input(size, size, 3)
    x = inputs
    for filters in (width, 2 * width):
        x = layers.Conv2D(filters, 3, padding="same", activation="relu")(x)
        x = layers.Conv2D(filters, 3, activation="relu")(x)
        x = keras.layers.MaxPooling2D(2)(x)
        x = layers.Dropout(params["conv_dropout"])(x)
    x = keras.layers.Flatten()(x)
    x = layers.Dense(params["dense_units"], activation="relu")(x)
    x = layers.Dropout(params["dense_dropout"])(x)
    outputs = layers.Dense(params["num_classes"])(x)
    return keras.Model(inputs, outputs, name="cifar10_cnn")


def build_optimizer(params):
    return optim.RMSprop(learning_rate=params["learning_rate"])


def element_spec(params):
    size = params["image_size"]
    return tf.TensorSpec([size, size, 3], tf.float32), tf.TensorSpec([], tf.int32)


SPEC = registry.register(
    model_api.ModelSpec(
        name="cifar10_cnn",
        description="Keras CIFAR-10 VGG-like convnet (CPU-vs-GPU cost study)",
        build_model=build_model,
        build_optimizer=build_optimizer,
        model_fn=model_api.classification_model_fn,
        input_fn=pipeline.image_classification_input_fn(pipeline.scale_rgb_image),
        element_spec=element_spec,
        examples_per_epoch={"train": 50_000, "eval": 10_000},
        datasets=("cifar10",),
        default_params={
            "image_size": 32,
            "width": 32,
            "dense_units": 512,
            "conv_dropout": 0.25,
            "dense_dropout": 0.5,
            "num_classes": 10,
            "learning_rate": 1e-4,
        },
        tiny_params={"width": 4, "dense_units": 16, "image_size": 16},
        channels_first=True,
        default_batch_size=32,
    )
)
