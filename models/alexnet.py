"""alexnet: AlexNet, the single-tower variant of torchvision's `alexnet`, 224x224.

Krizhevsky et al. (2012) split their net over two GPUs; the one-tower form
that frameworks ship (Krizhevsky's 2014 "one weird trick" layout as
torchvision has it) is what this reproduces: convolutions 11x11/4 (64),
5x5 (192), 3x3 (384, 256, 256) with ReLU, 3x3/2 max-pools after the first,
second and fifth, then dropout 0.5, 4096, dropout 0.5, 4096, 1000.  No
local response normalisation.  61,100,840 parameters, torchvision's
published count.  (tf_cnn_benchmarks' AlexNet, the one the 2017 TensorFlow
benchmarks timed, has 384 filters in the fourth convolution: 61,838,248
parameters with 1,000 classes, and more FLOPs.)  SGD with momentum 0.9 at 0.01 x
batch/256 and weight decay 5e-4; batch 512 as in tf_cnn_benchmarks.

    tpubench train --model=alexnet --use_synthetic_data --batch_size=512 \
        --train_steps=6 --steps_per_loop=1

Measured on this machine (2 vCPUs, Intel Xeon @ 2.50GHz, shared with other
jobs, so lower bounds; docs/models.md): 31.0 images/s training at batch 512
(synthetic data; 5 timed steps after 1 warm-up step), $1.09 per ImageNet
epoch on a GCP n1-standard-2 at the on-demand price; 4.43 GFLOPs per image
per training step (1.55 forward).
"""

import keras

from tpubench.model import layers, model_api, registry
from tpubench_models import _imagenet


def build_model(params):
    size = params["image_size"]
    reg = _imagenet.l2(params)

    def conv(x, filters, kernel, strides=1, padding="same"):
        return layers.Conv2D(
            _imagenet.scaled(filters, params),
            kernel,
            strides=strides,
            padding=padding,
            activation="relu",
            kernel_regularizer=reg,
        )(x)

    def pool(x):
        return keras.layers.MaxPooling2D(3, strides=2)(x)

    inputs = layers.image_input(size, size, 3)
    x = inputs
    # Padding 2 then an unpadded 11x11/4 convolution: 224 -> 55, as in torchvision.
    x = conv(keras.layers.ZeroPadding2D(2)(x), 64, 11, strides=4, padding="valid")
    x = pool(x)  # 27
    x = pool(conv(x, 192, 5))  # 13
    x = conv(conv(x, 384, 3), 256, 3)
    x = pool(conv(x, 256, 3))  # 6: 6 x 6 x 256 = 9,216 features at 224x224
    x = keras.layers.Flatten()(x)
    for _ in range(2):
        x = layers.Dropout(params["dropout"])(x)
        x = layers.Dense(params["fc_units"], activation="relu", kernel_regularizer=reg)(x)
    outputs = keras.layers.Dense(params["num_classes"], kernel_regularizer=reg)(x)
    return keras.Model(inputs, outputs, name="alexnet")


SPEC = registry.register(
    model_api.ModelSpec(
        name="alexnet",
        description="AlexNet (torchvision's one-tower variant), 224x224 ImageNet shape",
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
            "fc_units": 4096,
            "dropout": 0.5,
            "num_classes": 1000,
            "base_learning_rate": 0.01,
            "weight_decay": 5e-4,
        },
        tiny_params={
            "image_size": 64,
            "width_multiplier": 1 / 16,
            "fc_units": 32,
            "num_classes": 10,
        },
        channels_first=True,
        default_batch_size=512,
    )
)
