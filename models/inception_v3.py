"""inception_v3: Inception v3 (Szegedy et al. 2015) for 299x299 input.

The network as Keras Applications and TF-slim build it, without the
auxiliary classifier: a five-convolution stem, three 35x35 modules, a grid
reduction, four 17x17 modules with factorised 1x7/7x1 convolutions, a
second reduction, two 8x8 modules with split 1x3/3x1 outputs, global
average pooling, dropout 0.2 (slim's keep probability 0.8) and a 1000-way
linear layer.  Every convolution is bias-free, followed by batch norm
without a scale (epsilon 1e-3) through the fused kernel, and ReLU.
23,817,352 trainable parameters; with the 34,432 batch-norm statistics,
23,851,784 in all, Keras Applications' published InceptionV3 count (with the
1000-class top).  RMSprop (decay 0.9, epsilon 1.0) at 0.045, the paper's
optimizer; the paper's label smoothing is left out.

    tpubench train --model=inception_v3 --use_synthetic_data --batch_size=32 \
        --train_steps=6 --steps_per_loop=1

Set `sync_batch_norm=true` to all-reduce batch statistics across replicas.
Measured on this machine (2 vCPUs, Intel Xeon @ 2.50GHz, shared with other
jobs, so lower bounds; docs/models.md): 0.98 images/s training at batch 32
(synthetic data; 5 timed steps after 1 warm-up step), $34.48 per ImageNet
epoch on a GCP n1-standard-2 at the on-demand price; 34.7 GFLOPs per image
per training step (11.5 forward).
"""

import keras

from tpubench.core import errors
from tpubench.model import batch_norm, layers, model_api, optim, registry
from tpubench_models import _imagenet


def build_model(params):
    size = params["image_size"]
    reg = _imagenet.l2(params)

    def conv(x, filters, kh, kw=None, strides=1, padding="same"):
        x = layers.Conv2D(
            _imagenet.scaled(filters, params),
            (kh, kh if kw is None else kw),
            strides=strides,
            padding=padding,
            use_bias=False,
            kernel_regularizer=reg,
        )(x)
        return batch_norm.FusedBatchNorm(
            momentum=0.99,
            epsilon=1e-3,
            scale=False,
            synchronized=params["sync_batch_norm"],
            relu=True,
        )(x)

    def avg_pool(x):
        return keras.layers.AveragePooling2D(3, strides=1, padding="same")(x)

    def max_pool(x):
        return keras.layers.MaxPooling2D(3, strides=2)(x)

    def concat(branches):
        return keras.layers.Concatenate(axis=layers.channel_axis())(branches)

    def module_35(x, pool_proj):
        return concat(
            [
                conv(x, 64, 1),
                conv(conv(x, 48, 1), 64, 5),
                conv(conv(conv(x, 64, 1), 96, 3), 96, 3),
                conv(avg_pool(x), pool_proj, 1),
            ]
        )

    def reduce_35(x):
        return concat(
            [
                conv(x, 384, 3, strides=2, padding="valid"),
                conv(conv(conv(x, 64, 1), 96, 3), 96, 3, strides=2, padding="valid"),
                max_pool(x),
            ]
        )

    def module_17(x, n):
        seven = conv(conv(conv(x, n, 1), n, 1, 7), 192, 7, 1)
        double = conv(x, n, 1)
        for filters, (kh, kw) in ((n, (7, 1)), (n, (1, 7)), (n, (7, 1)), (192, (1, 7))):
            double = conv(double, filters, kh, kw)
        return concat([conv(x, 192, 1), seven, double, conv(avg_pool(x), 192, 1)])

    def reduce_17(x):
        three = conv(conv(x, 192, 1), 320, 3, strides=2, padding="valid")
        seven = conv(conv(conv(x, 192, 1), 192, 1, 7), 192, 7, 1)
        seven = conv(seven, 192, 3, strides=2, padding="valid")
        return concat([three, seven, max_pool(x)])

    def split(x):
        return concat([conv(x, 384, 1, 3), conv(x, 384, 3, 1)])

    def module_8(x):
        three = split(conv(x, 384, 1))
        double = split(conv(conv(x, 448, 1), 384, 3))
        return concat([conv(x, 320, 1), three, double, conv(avg_pool(x), 192, 1)])

    inputs = layers.image_input(size, size, 3)
    x = inputs
    x = conv(x, 32, 3, strides=2, padding="valid")  # 149
    x = conv(conv(x, 32, 3, padding="valid"), 64, 3)  # 147
    x = max_pool(x)  # 73
    x = conv(conv(x, 80, 1, padding="valid"), 192, 3, padding="valid")  # 71
    x = max_pool(x)  # 35
    counts = tuple(params["modules"])
    if len(counts) != 3 or min(counts) < 1:
        raise errors.UsageError(
            f"--params modules={':'.join(map(str, counts))}: inception_v3 takes three counts "
            "of at least 1 (modules at 35x35, 17x17 and 8x8; the standard net is 3:4:2)"
        )
    n35, n17, n8 = counts
    for i in range(n35):
        x = module_35(x, 32 if i == 0 else 64)
    x = reduce_35(x)  # 17
    for i in range(n17):
        x = module_17(x, 128 if i == 0 else 192 if i == n17 - 1 else 160)
    x = reduce_17(x)  # 8
    for _ in range(n8):
        x = module_8(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    x = layers.Dropout(params["dropout"])(x)
    outputs = keras.layers.Dense(params["num_classes"], kernel_regularizer=reg)(x)
    return keras.Model(inputs, outputs, name="inception_v3")


def build_optimizer(params):
    return optim.RMSprop(learning_rate=params["learning_rate"], rho=0.9, momentum=0.0, epsilon=1.0)


SPEC = registry.register(
    model_api.ModelSpec(
        name="inception_v3",
        description="Inception v3 (Keras Applications layout, no aux head), 299x299",
        build_model=build_model,
        build_optimizer=build_optimizer,
        model_fn=model_api.classification_model_fn,
        input_fn=_imagenet.input_fn(_imagenet.inception_preprocess, jpeg_style="inception"),
        element_spec=_imagenet.element_spec,
        examples_per_epoch=_imagenet.EXAMPLES_PER_EPOCH,
        datasets=_imagenet.DATASETS,
        default_params={
            "image_size": 299,
            "width_multiplier": 1.0,
            # Inception modules at 35x35, 17x17 and 8x8.
            "modules": (3, 4, 2),
            "dropout": 0.2,
            "num_classes": 1000,
            "learning_rate": 0.045,
            "weight_decay": 4e-5,
            "sync_batch_norm": False,
        },
        # 75x75 is the smallest input the stride pattern accepts; one module
        # per grid size keeps the graph (and its tracing time) small.
        tiny_params={
            "image_size": 75,
            "width_multiplier": 1 / 8,
            "modules": (1, 1, 1),
            "num_classes": 10,
        },
        channels_first=True,
        default_batch_size=32,
    )
)
