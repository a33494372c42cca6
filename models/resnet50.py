"""resnet50: standard ResNet-50 (v1.5) for ImageNet-shaped 224x224 input.

Bottleneck blocks [3, 4, 6, 3], stride in the 3x3 convolution (v1.5, as in
tf_cnn_benchmarks and the MLPerf reference), convolutions without bias
followed by batch norm through the fused kernel; 25,557,032 parameters, the
published count.  SGD with momentum 0.9, learning rate 0.1 x batch/256.

    tpubench train --model=resnet50 --use_synthetic_data --batch_size=32 \
        --train_steps=12 --steps_per_loop=2

Measured on this machine (2 vCPUs, Intel Xeon @ 2.50GHz, shared with other
jobs, so lower bounds; docs/models.md): 1.22 images/s training at batch 32
(synthetic data, `--train_steps=6 --steps_per_loop=1`: 5 timed steps after 1
warm-up step), $27.78 per ImageNet epoch on a GCP n1-standard-2 at the
on-demand price; 24.9 GFLOPs per image per training step (8.22 forward; the
back-propagation into symmetrically padded inputs is 0.27 GFLOPs of that).

Set `sync_batch_norm=true` to all-reduce batch statistics across replicas
(then N replicas compute exactly the single-replica loss).

Strided convolutions pad symmetrically (`padding=symmetric`, the default):
a kxk stride-2 convolution gets (k-1)/2 zeros on every side and no padding
of its own, as tf_cnn_benchmarks' SAME_RESNET mode does.  Keras' "same"
(`padding=same`) pads one pixel more on the bottom and right at even sizes;
cuDNN has no fast kernel for that asymmetric case and first copies the
input into a padded buffer (`PadInputCustomKernelNHWC`, about 3.8 ms of an
H100 step in docs/gpu.md).  Output shapes, parameters and FLOPs are the same
either way; the windows sit half a pixel apart.
"""

import keras

from tpubench.core import errors
from tpubench.model import batch_norm, layers, model_api, registry
from tpubench_models import _imagenet


def _bn(params, gamma_zero=False, relu=False):
    return batch_norm.FusedBatchNorm(
        momentum=0.9,
        epsilon=1e-5,
        synchronized=params["sync_batch_norm"],
        gamma_zero=gamma_zero,
        relu=relu,
    )


PADDINGS = ("symmetric", "same")


def _conv(filters, kernel, stride, params):
    explicit = stride > 1 and kernel > 1 and params["padding"] == "symmetric"
    conv = layers.Conv2D(
        filters,
        kernel,
        strides=stride,
        padding="valid" if explicit else "same",
        use_bias=False,
        kernel_initializer=keras.initializers.VarianceScaling(2.0, "fan_out"),
        kernel_regularizer=_imagenet.l2(params),
    )
    if not explicit:
        return conv
    side = (kernel - 1) // 2  # odd kernels: the same count on every side
    pad = keras.layers.ZeroPadding2D(((side, kernel - 1 - side), (side, kernel - 1 - side)))
    return lambda x: conv(pad(x))


def _bottleneck(x, filters, stride, params, project):
    # The input feeds two branches; on a CPU, Fork sums their gradients in one pass.
    x, shortcut = batch_norm.Fork()(x)
    if project:
        shortcut = _conv(filters * 4, 1, stride, params)(shortcut)
        shortcut = _bn(params)(shortcut)
    y = _bn(params, relu=True)(_conv(filters, 1, 1, params)(x))
    y = _bn(params, relu=True)(_conv(filters, 3, stride, params)(y))
    y = _conv(filters * 4, 1, 1, params)(y)
    # relu(bn(y) + shortcut): one layer, so a CPU run can do it in one pass.
    return _bn(params, gamma_zero=True, relu=True)([y, shortcut])


def build_model(params):
    if params["padding"] not in PADDINGS:
        raise errors.UsageError(
            f"--params padding={params['padding']}: accepted: {', '.join(PADDINGS)}"
        )
    size, width = params["image_size"], params["width"]
    inputs = layers.image_input(size, size, 3)
    x = inputs
    x = _conv(width, 7, 2, params)(x)
    x = _bn(params, relu=True)(x)
    x = keras.layers.MaxPooling2D(3, strides=2, padding="same")(x)
    for stage, blocks in enumerate(params["blocks"]):
        for block in range(blocks):
            stride = 2 if stage > 0 and block == 0 else 1
            x = _bottleneck(x, width * 2**stage, stride, params, project=block == 0)
    x = keras.layers.GlobalAveragePooling2D()(x)
    outputs = keras.layers.Dense(
        params["num_classes"],
        kernel_initializer=keras.initializers.RandomNormal(stddev=0.01),
    )(x)
    depth = 3 * sum(params["blocks"]) + 2  # three convolutions a block, plus stem and head
    return keras.Model(inputs, outputs, name=f"resnet{depth}")


SPEC = registry.register(
    model_api.ModelSpec(
        name="resnet50",
        description="ResNet-50 v1.5, 224x224 ImageNet shape, fused batch norm",
        build_model=build_model,
        build_optimizer=_imagenet.momentum_sgd,
        model_fn=model_api.classification_model_fn,
        input_fn=_imagenet.input_fn(),
        element_spec=_imagenet.element_spec,
        examples_per_epoch=_imagenet.EXAMPLES_PER_EPOCH,
        datasets=_imagenet.DATASETS,
        default_params={
            "image_size": 224,
            "width": 64,
            "blocks": (3, 4, 6, 3),
            "num_classes": 1000,
            "base_learning_rate": 0.1,
            "weight_decay": 1e-4,
            "sync_batch_norm": False,
            "padding": "symmetric",
        },
        tiny_params={"image_size": 32, "width": 4, "blocks": (1, 1, 1, 1), "num_classes": 10},
        channels_first=True,
        default_batch_size=32,
    )
)
