"""googlenet: GoogLeNet (Inception v1, Szegedy et al. 2014), 224x224.

The paper's table 1 network as Caffe's `bvlc_googlenet` defines it, without
the two auxiliary classifiers (they only train, and benchmarks leave them
out): a 7x7/2 stem, 3x3/2 max-pools, local response normalisation after the
first pool and the 3x3 convolution, nine inception modules (1x1, 1x1->3x3,
1x1->5x5 and 3x3-pool->1x1 branches, all convolutions with bias and ReLU,
no batch norm), global average pooling, dropout 0.4 and a 1000-way linear
layer.  6,998,552 parameters: Caffe's bvlc_googlenet without its auxiliary
classifiers (the paper's table 1 gives only rounded per-layer figures).
torchvision's googlenet (6,624,904) differs: batch norm instead of biases
and 3x3 convolutions in the "5x5" branch.  SGD with momentum 0.9 at 0.01 x
batch/256 and weight decay 2e-4 (Caffe's solver).

    tpubench train --model=googlenet --use_synthetic_data --batch_size=32 \
        --train_steps=11 --steps_per_loop=1

Measured on this machine (2 vCPUs, Intel Xeon @ 2.50GHz, shared with other
jobs, so lower bounds; docs/models.md): 2.75 images/s training at batch 32
(synthetic data; 10 timed steps after 1 warm-up step), $12.28 per ImageNet
epoch on a GCP n1-standard-2 at the on-demand price; 9.55 GFLOPs per image
per training step (3.20 forward).
"""

import keras
import tensorflow as tf

from tpubench.core import errors
from tpubench.model import layers, model_api, registry
from tpubench_models import _imagenet

# Inception modules of stages 3, 4 and 5 as in table 1: (#1x1, #3x3 reduce,
# #3x3, #5x5 reduce, #5x5, pool proj).  A 3x3/2 max-pool separates stages.
_STAGES = (
    (
        (64, 96, 128, 16, 32, 32),  # 3a
        (128, 128, 192, 32, 96, 64),  # 3b
    ),
    (
        (192, 96, 208, 16, 48, 64),  # 4a
        (160, 112, 224, 24, 64, 64),  # 4b
        (128, 128, 256, 24, 64, 64),  # 4c
        (112, 144, 288, 32, 64, 64),  # 4d
        (256, 160, 320, 32, 128, 128),  # 4e
    ),
    (
        (256, 160, 320, 32, 128, 128),  # 5a
        (384, 192, 384, 48, 128, 128),  # 5b
    ),
)


class LocalResponseNorm(keras.layers.Layer):
    """Caffe's across-channel LRN (local_size 5, alpha 1e-4, beta 0.75).

    Caffe divides alpha by the window size; TensorFlow's op does not, hence
    alpha / 5.  Computed in float32: the op has no bfloat16 CPU kernel.
    """

    def call(self, x):
        y = tf.nn.local_response_normalization(
            tf.cast(x, tf.float32), depth_radius=2, bias=1.0, alpha=1e-4 / 5, beta=0.75
        )
        return tf.cast(y, x.dtype)

    def compute_output_shape(self, input_shape):
        return input_shape


def build_model(params):
    size = params["image_size"]
    reg = _imagenet.l2(params)

    def conv(x, filters, kernel, strides=1):
        return layers.Conv2D(
            _imagenet.scaled(filters, params),
            kernel,
            strides=strides,
            padding="same",
            activation="relu",
            kernel_regularizer=reg,
        )(x)

    def pool(x):
        return keras.layers.MaxPooling2D(3, strides=2, padding="same")(x)

    def inception(x, n1, n3r, n3, n5r, n5, npool):
        branches = [
            conv(x, n1, 1),
            conv(conv(x, n3r, 1), n3, 3),
            conv(conv(x, n5r, 1), n5, 5),
            conv(keras.layers.MaxPooling2D(3, strides=1, padding="same")(x), npool, 1),
        ]
        return keras.layers.Concatenate()(branches)

    inputs = keras.Input(shape=(size, size, 3))
    x = LocalResponseNorm()(pool(conv(inputs, 64, 7, strides=2)))  # 56
    x = pool(LocalResponseNorm()(conv(conv(x, 64, 1), 192, 3)))  # 28
    counts = tuple(params["modules"])
    most = tuple(len(m) for m in _STAGES)
    if len(counts) != 3 or not all(1 <= c <= m for c, m in zip(counts, most, strict=True)):
        raise errors.UsageError(
            f"--params modules={':'.join(map(str, counts))}: googlenet takes three counts, "
            f"1..{':'.join(map(str, most))} (inception modules in stages 3, 4, 5)"
        )
    for stage, (modules, count) in enumerate(zip(_STAGES, counts, strict=True)):
        if stage:
            x = pool(x)  # 14, then 7
        for module in modules[:count]:
            x = inception(x, *module)
    x = keras.layers.GlobalAveragePooling2D()(x)  # the paper's 7x7 average pool at 224
    x = layers.Dropout(params["dropout"])(x)
    outputs = keras.layers.Dense(params["num_classes"], kernel_regularizer=reg)(x)
    return keras.Model(inputs, outputs, name="googlenet")


SPEC = registry.register(
    model_api.ModelSpec(
        name="googlenet",
        description="GoogLeNet / Inception v1 (bvlc_googlenet, no aux heads), 224x224",
        build_model=build_model,
        build_optimizer=_imagenet.momentum_sgd,
        model_fn=model_api.classification_model_fn,
        input_fn=_imagenet.input_fn(),
        element_spec=_imagenet.element_spec,
        examples_per_epoch=_imagenet.EXAMPLES_PER_EPOCH,
        datasets=_imagenet.DATASETS,
        default_params={
            "image_size": 224,
            "width_multiplier": 1.0,
            # Inception modules used in stages 3, 4 and 5 (the first ones of each).
            "modules": (2, 5, 2),
            "dropout": 0.4,
            "num_classes": 1000,
            "base_learning_rate": 0.01,
            "weight_decay": 2e-4,
        },
        tiny_params={
            "image_size": 32,
            "width_multiplier": 1 / 8,
            "modules": (1, 1, 1),
            "num_classes": 10,
        },
        default_batch_size=32,
    )
)
