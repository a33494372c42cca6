"""Layers models may share.  No devices, strategies or flags here either."""

from __future__ import annotations

import contextlib

import keras
import tensorflow as tf

from tpubench.model import own_kernels, randomness, weight_copy

DATA_FORMATS = ("channels_last", "channels_first")


@contextlib.contextmanager
def image_layout(data_format: str):
    """Builds layers in DATA_FORMAT: Keras layers read it when they are made.

    A model that declares `channels_first=True` builds with this around it;
    its layers keep the format they were made with, so the global setting is
    restored on exit.
    """
    if data_format not in DATA_FORMATS:
        raise ValueError(f"data_format={data_format!r}: expected one of {DATA_FORMATS}")
    before = keras.config.image_data_format()
    keras.config.set_image_data_format(data_format)
    try:
        yield
    finally:
        keras.config.set_image_data_format(before)


def channel_axis() -> int:
    """The channel axis of images in the layout being built: 1 or -1."""
    return 1 if keras.config.image_data_format() == "channels_first" else -1


def image_input(height: int, width: int, channels: int, **kw):
    """`keras.Input` for images in the layout being built: (C, H, W) when channels-first.

    The input pipeline gives NHWC batches; the runner transposes them for a
    network built channels-first, so the network itself has no extra layer
    (and its checkpoints are the same in either layout).
    """
    first = keras.config.image_data_format() == "channels_first"
    shape = (channels, height, width) if first else (height, width, channels)
    return keras.Input(shape=shape, **kw)


@contextlib.contextmanager
def building(data_format: str, pointwise_matmul: bool, own_cpu_kernels: bool):
    """Builds a network in DATA_FORMAT, its 1x1 convolutions and CPU kernels as chosen.

    `image_layout`, `pointwise_weight_grad` and `own_kernels.use` together.
    """
    with (
        image_layout(data_format),
        pointwise_weight_grad(pointwise_matmul),
        own_kernels.use(own_cpu_kernels),
    ):
        yield


_POINTWISE = {"matmul": False}


@contextlib.contextmanager
def pointwise_weight_grad(as_matmul: bool):
    """Builds 1x1 `Conv2D` layers whose weight gradient is one matrix product (or not).

    The run chooses (run/conv_grads.py); layers keep what they were built with.
    """
    before = _POINTWISE["matmul"]
    _POINTWISE["matmul"] = bool(as_matmul)
    try:
        yield
    finally:
        _POINTWISE["matmul"] = before


def _sampled(x, stride: int):
    """X at every STRIDE-th row and column (NHWC): the pixels a 1x1 strided conv reads.

    When the stride divides the height and width this is a reshape and a
    slice of whole channel rows, a plain copy; TensorFlow's strided slice of
    a bf16 tensor copies element by element, about 20x slower on a CPU.
    """
    if stride == 1:
        return x
    n, h, w, c = x.shape
    if None in (h, w, c) or h % stride or w % stride:
        return x[:, ::stride, ::stride, :]
    rows = tf.reshape(x, [-1, h // stride, stride, w // stride, stride * c])
    return rows[:, :, 0, :, :c]


def pointwise_conv(x, kernel, stride: int):
    """A channels-last 1x1 convolution whose weight gradient is a matrix product.

    The weight gradient of a 1x1 convolution is X^T dY summed over every
    pixel of the batch (X sampled at the stride).  On an AMX CPU, oneDNN's
    bf16 weight-gradient convolution runs these shapes at 100-350 GFLOP/s
    and the same product as a `MatMul` at 600-1,000 (docs/cpu.md).  The
    forward pass and the input gradient stay convolutions, which are fast.
    """

    @tf.custom_gradient
    def conv(x, kernel):
        y = tf.nn.conv2d(x, kernel, strides=stride, padding="VALID")

        def grad(dy):
            cin, cout = kernel.shape[2], kernel.shape[3]
            pixels = tf.reshape(_sampled(x, stride), [-1, cin])
            dw = tf.matmul(pixels, tf.reshape(dy, [-1, cout]), transpose_a=True)
            dx = tf.raw_ops.Conv2DBackpropInput(
                input_sizes=tf.shape(x),
                filter=kernel,
                out_backprop=dy,
                strides=[1, stride, stride, 1],
                padding="VALID",
            )
            return dx, tf.reshape(dw, tf.shape(kernel))

        return y, grad

    return conv(x, kernel)


def _own_bias_relu(layer, channels_last: bool) -> bool:
    """Whether LAYER, being built, takes its bias and ReLU gradient from tpubench's kernel.

    bf16 only: there TensorFlow's `ReluGrad` and `BiasAddGrad` are scalar
    code and the kernel took under a third of their time; in fp32 the two were
    level in a whole step (docs/cpu.md).
    """
    return (
        weight_copy.wanted(layer)  # tpubench's kernels chosen, bf16 compute
        and channels_last
        and layer.use_bias
        and layer.activation is keras.activations.relu
    )


class Conv2D(keras.layers.Conv2D):
    """Keras' Conv2D.  A channels-last 1x1 one built under
    `pointwise_weight_grad(True)` takes its weight gradient as a matrix
    product (`pointwise_conv`).  Built in bf16 under `own_kernels.use(True)`,
    it trains from the bf16 copies of its weights that the update keeps
    (`weight_copy`), where the run attached them; channels-last with a bias
    and ReLU, also with the gradient of its bias and ReLU in one pass of
    tpubench's CPU kernel (`cpu_ops.bias_relu`).  Its weights, output and
    input gradient are Keras' own."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        channels_last = self.data_format == "channels_last"
        self.pointwise_matmul = (
            _POINTWISE["matmul"]
            and tuple(self.kernel_size) == (1, 1)
            and tuple(self.dilation_rate) == (1, 1)
            and self.groups == 1
            and channels_last
            and self.strides[0] == self.strides[1]
        )
        self.own_bias_relu = _own_bias_relu(self, channels_last)
        self.bf16_copies = weight_copy.wanted(self)

    def convolution_op(self, inputs, kernel):
        if not self.pointwise_matmul:
            return super().convolution_op(inputs, kernel)
        # A read of the variable (fp32) or its bf16 cast: the gradient reaches the
        # variable through it, so the custom gradient sees tensors only.
        return pointwise_conv(inputs, tf.convert_to_tensor(kernel), int(self.strides[0]))

    def call(self, inputs, training=None):
        folded = self.__dict__.get("_folded")
        fmt = "NCHW" if self.data_format == "channels_first" else "NHWC"
        if folded is not None:
            kernel, bias = folded
            y = tf.nn.bias_add(self.convolution_op(inputs, kernel), bias, data_format=fmt)
            return self.activation(y) if self.activation is not None else y
        if not (training and (self.own_bias_relu or weight_copy.of(self.kernel) is not None)):
            return super().call(inputs)
        z = self.convolution_op(inputs, weight_copy.read(self.kernel))
        return _bias_activation(self, z, fmt)


class Dense(keras.layers.Dense):
    """Keras' Dense.  Built in bf16 under `own_kernels.use(True)`, it trains
    from the bf16 copies of its weights that the update keeps (`weight_copy`),
    where the run attached them, and with a bias and ReLU, with the gradient
    of its bias and ReLU in one pass of tpubench's CPU kernel
    (`cpu_ops.bias_relu`); the rest is Keras' own."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.own_bias_relu = _own_bias_relu(self, channels_last=True)
        self.bf16_copies = weight_copy.wanted(self)

    def call(self, inputs, training=None):
        own = self.own_bias_relu or weight_copy.of(self.kernel) is not None
        if not (training and own and self.quantization_mode is None and not self.lora_enabled):
            return super().call(inputs, training=training)
        return _bias_activation(self, keras.ops.matmul(inputs, weight_copy.read(self.kernel)), None)


def _bias_activation(layer, z, data_format):
    """LAYER's bias and activation on its product Z, in training (Keras' arithmetic).

    The bias and ReLU of an `own_bias_relu` layer take tpubench's one-pass
    gradient; the weights are read from their bf16 copies where kept.
    """
    if layer.own_bias_relu:
        from tpubench.model import cpu_ops  # loads (and first builds) the kernel library

        return cpu_ops.bias_relu(z, weight_copy.read(layer.bias))
    if layer.use_bias:
        bias = weight_copy.read(layer.bias)
        if data_format is not None:  # as Keras' Conv2D adds it: the same ops, the same numbers
            bias = tf.reshape(bias, [1, -1, 1, 1] if data_format == "NCHW" else [1, 1, 1, -1])
        z = keras.ops.add(z, bias)
    return layer.activation(z) if layer.activation is not None else z


def dropout(x, rate: float, seed):
    """X with each element zeroed with probability RATE and the rest scaled by 1 / (1 - RATE).

    The mask is drawn as 8 random bits an element when RATE is a multiple
    of 1/256 (0.25, 0.5) and as 16 bits otherwise (RATE then holds to within
    2**-17), four or two elements to each 32-bit number, where TensorFlow's
    `stateless_dropout` draws a whole 32-bit float for each: on a CPU the
    dropout then takes about a third of the time (docs/cpu.md).  SEED: a stateless
    seed, shape [2].  Differentiable in X (the gradient is the same mask).
    """
    bits = 8 if float(rate * 256).is_integer() else 16
    levels = 1 << bits
    threshold = round(rate * levels)
    if threshold == 0:
        return x
    if threshold == levels:
        return tf.zeros_like(x)
    per_word = 32 // bits
    n = x.shape.num_elements()
    if n is None:
        n = tf.size(x)
    words = tf.random.stateless_uniform(
        [(n + per_word - 1) // per_word], seed, minval=None, maxval=None, dtype=tf.uint32
    )
    small = tf.reshape(tf.bitcast(words, tf.uint8 if bits == 8 else tf.uint16), [-1])
    if not isinstance(n, int) or n % per_word:
        small = small[:n]
    scale = tf.constant(levels / (levels - threshold), x.dtype)
    keep = tf.cast(small >= threshold, x.dtype) * scale
    return x * tf.reshape(keep, tf.shape(x))


class Dropout(keras.layers.Dropout):
    """Keras' Dropout, its mask drawn from fewer random bits (`dropout`).

    The same layer otherwise: rate, seed generator (its state is the
    layer's one variable, so checkpoints are unchanged) and `noise_shape`,
    which takes Keras' own path.
    """

    def call(self, inputs, training=False):
        if not training or self.rate == 0 or self.noise_shape is not None:
            return super().call(inputs, training=training)
        # Each replica's and each parameter-server worker's own (model/randomness.py).
        seed = randomness.draw(self.seed_generator)
        return dropout(inputs, self.rate, seed)
