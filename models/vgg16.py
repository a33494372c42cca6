"""vgg16: VGG-16 (configuration D of Simonyan & Zisserman 2014), 224x224.

Thirteen 3x3 convolutions with bias and ReLU in five blocks of
[2, 2, 3, 3, 3] layers (64, 128, 256, 512, 512 filters), each block ending in
a 2x2 max-pool; then 4096-4096-1000 fully connected layers with dropout 0.5
before the second and third, as in the paper.  No batch norm.
138,357,544 parameters, the published count (Keras Applications VGG16 and
torchvision vgg16 agree).  SGD with momentum 0.9 at 0.01 x batch/256 and
weight decay 5e-4, the paper's settings.

    tpubench train --model=vgg16 --use_synthetic_data --batch_size=32 \
        --train_steps=6 --steps_per_loop=1

Measured on this machine (2 vCPUs, Intel Xeon @ 2.50GHz, shared with other
jobs, so lower bounds; docs/models.md): 0.85 images/s training at batch 32
(synthetic data; 5 timed steps after 1 warm-up step), $39.72 per ImageNet
epoch on a GCP n1-standard-2 at the on-demand price; 93.1 GFLOPs per image
per training step (31.2 forward).
"""

import keras

from tpubench.model import layers, model_api, registry
from tpubench_models import _imagenet

_BLOCKS = ((2, 64), (2, 128), (3, 256), (3, 512), (3, 512))


def build_model(params):
    size = params["image_size"]
    reg = _imagenet.l2(params)
    inputs = layers.image_input(size, size, 3)
    x = inputs
    for convs, filters in _BLOCKS:
        for _ in range(convs):
            x = layers.Conv2D(
                _imagenet.scaled(filters, params),
                3,
                padding="same",
                activation="relu",
                kernel_regularizer=reg,
            )(x)
        x = keras.layers.MaxPooling2D(2)(x)
    x = keras.layers.Flatten()(x)
    for _ in range(2):
        x = layers.Dense(params["fc_units"], activation="relu", kernel_regularizer=reg)(x)
        x = layers.Dropout(params["dropout"])(x)
    outputs = keras.layers.Dense(params["num_classes"], kernel_regularizer=reg)(x)
    return keras.Model(inputs, outputs, name="vgg16")


SPEC = registry.register(
    model_api.ModelSpec(
        name="vgg16",
        description="VGG-16 (configuration D), 224x224 ImageNet shape",
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
            "image_size": 32,
            "width_multiplier": 1 / 16,
            "fc_units": 32,
            "num_classes": 10,
        },
        channels_first=True,
        default_batch_size=32,
    )
)
