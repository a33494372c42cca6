"""cancelling: a tiny image classifier whose bf16 path loses its input (a tune test's model).

It adds 1024 to every pixel (0..1) and takes it away again.  In fp32 the
round trip is exact to 1e-4; bf16 keeps 8 bits of mantissa, so between 1024
and 2048 it holds only multiples of 8: every pixel becomes 1024, then 0,
and a bf16 run trains on blank images (its loss stays at ln 10 = 2.30 while
fp32's falls).  Catastrophic cancellation, the way a large offset in a
model breaks in low precision, made on purpose.  The 1024 is a weight, not
a constant, so no graph rewrite folds (x + c) - c into x.

Like the ImageNet CNNs and cifar10_cnn it has no embedded data of its shape
(16x16 RGB; it names cifar10), so tune's numerics guard gives it the
embedded digits, resized.
"""

import keras
import tensorflow as tf
from keras import ops

from tpubench.data import pipeline
from tpubench.model import model_api, registry


class Cancel(keras.layers.Layer):
    def build(self, input_shape):
        self.one = self.add_weight(shape=(), initializer="ones", trainable=False)

    def call(self, x):
        big = 1024.0 * ops.cast(self.one, self.compute_dtype)
        return (x + big) - big


def build_model(params):
    size = params["image_size"]
    inputs = keras.Input(shape=(size, size, 3))
    x = keras.layers.Flatten()(Cancel()(inputs))
    return keras.Model(inputs, keras.layers.Dense(params["num_classes"])(x), name="cancelling")


def element_spec(params):
    size = params["image_size"]
    return tf.TensorSpec([size, size, 3], tf.float32), tf.TensorSpec([], tf.int32)


SPEC = registry.register(
    model_api.ModelSpec(
        name="cancelling",
        description="a linear classifier whose bf16 path cancels its input (tune's tests)",
        build_model=build_model,
        build_optimizer=lambda params: keras.optimizers.RMSprop(params["learning_rate"]),
        model_fn=model_api.classification_model_fn,
        input_fn=pipeline.image_classification_input_fn(pipeline.scale_rgb_image),
        element_spec=element_spec,
        examples_per_epoch={"train": 50_000, "eval": 10_000},
        datasets=("cifar10",),
        default_params={"image_size": 16, "num_classes": 10, "learning_rate": 0.003},
        default_batch_size=32,
    )
)
