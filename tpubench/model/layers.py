"""Layers models may share.  No devices, strategies or flags here either."""

from __future__ import annotations

import contextlib

import keras
import tensorflow as tf

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


class FusedBatchNorm(keras.layers.Layer):
    """Batch normalisation through TensorFlow's fused kernel.

    Keras 3's BatchNormalization computes moments with separate ops; on CPU
    the fused kernel (`FusedBatchNormV3`, what tf_cnn_benchmarks used) is
    about 20% faster for ResNet-50 (measured on a CPU).  With
    `synchronized=True` the batch statistics are all-reduced across replicas,
    so N replicas normalise exactly like one replica on the global batch.
    `scale=False` has no gamma (a fixed 1), as in Inception v3, where the
    next convolution absorbs any scale.  Images are normalised over the
    channel axis of the layout the layer was built in (`image_layout`);
    other inputs over their last axis.
    """

    def __init__(
        self, momentum=0.9, epsilon=1e-5, synchronized=False, gamma_zero=False, scale=True, **kw
    ):
        super().__init__(**kw)
        self.scale = scale
        self.momentum = momentum
        self.epsilon = epsilon
        self.synchronized = synchronized
        self.gamma_zero = gamma_zero
        self.data_format = keras.config.image_data_format()

    def _nchw(self, shape) -> bool:
        return self.data_format == "channels_first" and len(shape) == 4

    def build(self, input_shape):
        c = int(input_shape[1] if self._nchw(input_shape) else input_shape[-1])
        self.gamma = None
        if self.scale:
            self.gamma = self.add_weight(
                shape=(c,),
                initializer="zeros" if self.gamma_zero else "ones",
                name="gamma",
                autocast=False,
            )
        self.beta = self.add_weight(shape=(c,), initializer="zeros", name="beta", autocast=False)
        self.moving_mean = self._statistic(c, "zeros", "moving_mean")
        self.moving_variance = self._statistic(c, "ones", "moving_variance")

    def _statistic(self, c: int, initializer: str, name: str):
        """A moving average each replica updates on its own, read as their mean.

        Synchronised on read (as tf.keras kept batch-norm statistics): an
        update inside a replica's step needs no cross-replica merge_call, so
        the step can be compiled with XLA under MirroredStrategy too.  The
        mean of the replicas' moving averages is the moving average of their
        mean batch statistics, which checkpoints hold.
        """
        with keras.name_scope(self.name, caller=self):
            v = keras.Variable(
                initializer=keras.initializers.get(initializer),
                shape=(c,),
                dtype=self.variable_dtype,
                trainable=False,
                autocast=False,
                aggregation="mean",
                synchronization="on_read",
                name=name,
            )
        self._track_variable(v)
        return v

    def _update(self, mean, variance):
        m = self.momentum
        self.moving_mean.assign(self.moving_mean * m + tf.cast(mean, tf.float32) * (1 - m))
        self.moving_variance.assign(
            self.moving_variance * m + tf.cast(variance, tf.float32) * (1 - m)
        )

    def call(self, x, training=False):
        if self.__dict__.get("_folded_into_conv") and not training:
            return x  # its convolution applies it (fold_batch_norms)
        beta = tf.convert_to_tensor(self.beta)
        # The fused kernel always takes a scale: without gamma it is ones.
        gamma = tf.convert_to_tensor(self.gamma) if self.scale else tf.ones_like(beta)
        nchw = self._nchw(x.shape)
        ctx = tf.distribute.get_replica_context()
        if training and self.synchronized and ctx is not None and ctx.num_replicas_in_sync > 1:
            xf = tf.cast(x, tf.float32)
            channel = 1 if nchw else len(x.shape) - 1
            axes = [a for a in range(len(x.shape)) if a != channel]
            count = tf.cast(tf.size(xf) // tf.shape(xf)[channel], tf.float32)
            s, ss, n = ctx.all_reduce(
                "sum", [tf.reduce_sum(xf, axes), tf.reduce_sum(tf.square(xf), axes), count]
            )
            mean = s / n
            variance = tf.maximum(ss / n - tf.square(mean), 0.0)
            # Per-channel vectors broadcast over the last axis: (C, 1, 1) for NCHW.
            c = (lambda v: tf.reshape(v, [-1, 1, 1])) if nchw else (lambda v: v)
            y = tf.nn.batch_normalization(xf, c(mean), c(variance), c(beta), c(gamma), self.epsilon)
            self._update(mean, variance)
            return tf.cast(y, x.dtype)
        shape = tf.shape(x)
        fmt = "NCHW" if nchw else "NHWC"
        x4 = x if len(x.shape) == 4 else tf.reshape(x, [-1, 1, 1, x.shape[-1]])
        if training:
            # The kernel updates the moving averages itself (one op, not six
            # per layer): new = momentum * old + (1 - momentum) * batch, the
            # batch variance Bessel-corrected as before.
            y, mean, variance = tf.compat.v1.nn.fused_batch_norm(
                x4,
                gamma,
                beta,
                mean=tf.convert_to_tensor(self.moving_mean),
                variance=tf.convert_to_tensor(self.moving_variance),
                epsilon=self.epsilon,
                is_training=True,
                exponential_avg_factor=1.0 - self.momentum,
                data_format=fmt,
            )[:3]
            self.moving_mean.assign(mean)
            self.moving_variance.assign(variance)
        else:
            y = tf.compat.v1.nn.fused_batch_norm(
                x4,
                gamma,
                beta,
                mean=tf.convert_to_tensor(self.moving_mean),
                variance=tf.convert_to_tensor(self.moving_variance),
                epsilon=self.epsilon,
                is_training=False,
                data_format=fmt,
            )[0]
        return y if len(x.shape) == 4 else tf.reshape(y, shape)

    def compute_output_shape(self, input_shape):
        return input_shape


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


class Conv2D(keras.layers.Conv2D):
    """Keras' Conv2D.  A channels-last 1x1 one built under
    `pointwise_weight_grad(True)` takes its weight gradient as a matrix
    product (`pointwise_conv`); its weights, output and input gradient are
    Keras' own."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.pointwise_matmul = (
            _POINTWISE["matmul"]
            and tuple(self.kernel_size) == (1, 1)
            and tuple(self.dilation_rate) == (1, 1)
            and self.groups == 1
            and self.data_format == "channels_last"
            and self.strides[0] == self.strides[1]
        )

    def convolution_op(self, inputs, kernel):
        if not self.pointwise_matmul:
            return super().convolution_op(inputs, kernel)
        # A read of the variable (fp32) or its bf16 cast: the gradient reaches the
        # variable through it, so the custom gradient sees tensors only.
        return pointwise_conv(inputs, tf.convert_to_tensor(kernel), int(self.strides[0]))

    def call(self, inputs):
        folded = self.__dict__.get("_folded")
        if folded is None:
            return super().call(inputs)
        kernel, bias = folded
        fmt = "NCHW" if self.data_format == "channels_first" else "NHWC"
        y = tf.nn.bias_add(self.convolution_op(inputs, kernel), bias, data_format=fmt)
        return self.activation(y) if self.activation is not None else y


def fold_batch_norms(model, strategy=None) -> int:
    """Folds each batch norm that reads only a `Conv2D` into that convolution, for inference.

    The convolution then runs with kernel x gamma / sqrt(variance + eps) and
    bias beta - mean x gamma / sqrt(variance + eps), made once here from the
    current weights (the moving statistics: inference only), in the layer's
    compute dtype, and the batch norm passes its input through.  TensorFlow's
    graph optimizer makes the same fold itself for fp32 on a CPU, but not
    for bf16, where the batch norm then runs as its own pass (docs/cpu.md).
    Returns how many were folded; a model trained afterwards would be wrong,
    so only an inference session calls this.
    """
    with strategy.scope() if strategy is not None else contextlib.nullcontext():
        return _fold(model)


def _fold(model) -> int:
    folded = 0
    for bn in model.layers:
        if not isinstance(bn, FusedBatchNorm) or len(bn._inbound_nodes) != 1:
            continue
        parents = bn._inbound_nodes[0].parent_nodes
        if len(parents) != 1 or not isinstance(parents[0].operation, Conv2D):
            continue
        conv = parents[0].operation
        if len(conv._inbound_nodes) != 1 or len(conv._outbound_nodes) != 1:
            continue
        beta = tf.convert_to_tensor(bn.beta)
        gamma = tf.convert_to_tensor(bn.gamma) if bn.scale else tf.ones_like(beta)
        scale = gamma * tf.math.rsqrt(tf.convert_to_tensor(bn.moving_variance) + bn.epsilon)
        bias = beta - tf.convert_to_tensor(bn.moving_mean) * scale
        if conv.use_bias:
            bias += tf.convert_to_tensor(conv.bias) * scale
        kernel = tf.convert_to_tensor(conv.kernel) * scale  # HWIO: scales the output channels
        dtype = conv.compute_dtype
        pair = (
            tf.Variable(tf.cast(kernel, dtype), trainable=False),
            tf.Variable(tf.cast(bias, dtype), trainable=False),
        )
        # Plain attributes, untracked: the folded copies are not the model's weights.
        conv.__dict__["_folded"] = pair
        bn.__dict__["_folded_into_conv"] = True
        folded += 1
    return folded
