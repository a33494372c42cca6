"""broken_lr: a tiny image classifier whose bf16 setting trains at a broken learning rate.

The optimizer's learning rate is read from the compute dtype, the way a
schedule tuned for one precision leaks into another: in bf16 it is 10,000
times the model's `learning_rate`, so SGD steps overshoot, the weights blow
up and the loss climbs far above fp32's, which falls.  The network is the
same in both precisions; only the learning rate of one setting is broken,
which is what tune's numerics guard must catch on real data.

Like cifar10_cnn it has no embedded data of its shape (16x16 RGB; it names
cifar10), so tune's numerics guard gives it the embedded digits, resized.
"""

import keras
import tensorflow as tf

from tpubench.data import pipeline
from tpubench.model import model_api, registry

BROKEN = 1e4  # the bf16 setting's learning rate, over the model's


def build_model(params):
    size = params["image_size"]
    inputs = keras.Input(shape=(size, size, 3))
    x = keras.layers.Flatten()(inputs)
    return keras.Model(inputs, keras.layers.Dense(params["num_classes"])(x), name="broken_lr")


def build_optimizer(params):
    rate = params["learning_rate"]
    if keras.mixed_precision.global_policy().compute_dtype == "bfloat16":
        rate *= BROKEN
    return keras.optimizers.SGD(rate)


def element_spec(params):
    size = params["image_size"]
    return tf.TensorSpec([size, size, 3], tf.float32), tf.TensorSpec([], tf.int32)


SPEC = registry.register(
    model_api.ModelSpec(
        name="broken_lr",
        description="a linear classifier whose bf16 setting has a broken learning rate (tests)",
        build_model=build_model,
        build_optimizer=build_optimizer,
        model_fn=model_api.classification_model_fn,
        input_fn=pipeline.image_classification_input_fn(pipeline.scale_rgb_image),
        element_spec=element_spec,
        examples_per_epoch={"train": 50_000, "eval": 10_000},
        datasets=("cifar10",),
        default_params={"image_size": 16, "num_classes": 10, "learning_rate": 0.05},
        default_batch_size=32,
    )
)
