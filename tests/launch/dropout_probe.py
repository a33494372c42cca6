"""Models whose dropout layer prints what each training step read and dropped.

Each step prints one line per replica to the task's stderr (a worker's log
under a parameter-server cluster): `STEP <sum of the replica's pixels> <the
mask's first 64 elements as 0/1>`.  The layer drops from images shifted by
one, so no kept element is zero and the mask is exact.  `ps_probe` uses
tpubench's `layers.Dropout`, `keras_dropout_probe` Keras' own.
"""

import sys

import keras
import tensorflow as tf

from tpubench.data import pipeline
from tpubench.model import layers, model_api, registry


def _printing(base):
    class Printing(base):
        def call(self, inputs, training=False):
            out = super().call(inputs, training=training)
            if training:
                kept = tf.strings.as_string(tf.cast(tf.not_equal(out[0, :64], 0), tf.int32))
                pixels = tf.reduce_sum(tf.cast(inputs, tf.float64))
                pixels = tf.strings.as_string(pixels, precision=3)
                tf.print("STEP", pixels, tf.strings.reduce_join(kept), output_stream=sys.stderr)
            return out

    return Printing


def _register(name, dropout_class):
    def build_model(params):
        inputs = keras.Input(shape=(28, 28, 1))
        x = keras.layers.Flatten()(inputs)
        x = keras.layers.Rescaling(1.0, offset=1.0)(x)
        x = _printing(dropout_class)(0.5)(x)
        x = layers.Dense(64, activation="relu")(x)
        return keras.Model(inputs, layers.Dense(10)(x), name=name)

    return registry.register(
        model_api.ModelSpec(
            name=name,
            description="prints each step's batch and dropout mask",
            build_model=build_model,
            build_optimizer=lambda params: keras.optimizers.SGD(learning_rate=0.01),
            model_fn=model_api.classification_model_fn,
            input_fn=pipeline.image_classification_input_fn(pipeline.scale_image),
            element_spec=lambda params: (
                tf.TensorSpec([28, 28, 1], tf.float32),
                tf.TensorSpec([], tf.int32),
            ),
            examples_per_epoch={"train": 1_437, "eval": 360},
            datasets=("digits",),
            default_params={"num_classes": 10},
        )
    )


PS_PROBE = _register("ps_probe", layers.Dropout)
KERAS_PROBE = _register("keras_dropout_probe", keras.layers.Dropout)
