"""Batch normalisation for the zoo's models, with the ReLU and residual addition after it.

No devices, strategies or flags here: the run chooses the kernel
(run/conv_grads.py) and layers keep what they were built with.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from tpubench.model import own_kernels


class FusedBatchNorm(keras.layers.Layer):
    """Batch normalisation through a fused kernel, optionally followed by `+ side` and ReLU.

    Keras 3's BatchNormalization computes moments with separate ops; on CPU
    the fused kernel (`FusedBatchNormV3`, what tf_cnn_benchmarks used) is
    about 20% faster for ResNet-50 (measured on a CPU).  With
    `synchronized=True` the batch statistics are all-reduced across replicas,
    so N replicas normalise exactly like one replica on the global batch.
    `scale=False` has no gamma (a fixed 1), as in Inception v3, where the
    next convolution absorbs any scale.  Images are normalised over the
    channel axis of the layout the layer was built in (`image_layout`);
    other inputs over their last axis.

    `relu=True` applies a ReLU to the result, and called on `[x, side]` the
    layer adds SIDE (a residual shortcut) before it: what a ResNet block's
    last batch norm, `Add` and `ReLU` layers compute.  Built under
    `own_kernels.use(True)`, a channels-last layer trains through tpubench's CPU
    kernel, which does all of it in one pass each way (docs/cpu.md).
    """

    def __init__(
        self,
        momentum=0.9,
        epsilon=1e-5,
        synchronized=False,
        gamma_zero=False,
        scale=True,
        relu=False,
        **kw,
    ):
        super().__init__(**kw)
        self.scale = scale
        self.momentum = momentum
        self.epsilon = epsilon
        self.synchronized = synchronized
        self.gamma_zero = gamma_zero
        self.relu = relu
        self.data_format = keras.config.image_data_format()
        self.own_kernel = own_kernels.chosen()

    def _nchw(self, shape) -> bool:
        return self.data_format == "channels_first" and len(shape) == 4

    def build(self, input_shape):
        if isinstance(input_shape, (list, tuple)) and isinstance(input_shape[0], (list, tuple)):
            input_shape = input_shape[0]  # [x, side]
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

    def _after(self, y, side):
        """The residual addition and ReLU that follow the normalisation, as separate ops."""
        if side is not None:
            y = tf.add(y, side)
        return tf.nn.relu(y) if self.relu else y

    def call(self, inputs, training=False):
        x, side = (inputs[0], inputs[1]) if isinstance(inputs, (list, tuple)) else (inputs, None)
        if self.__dict__.get("_folded_into_conv") and not training:
            return self._after(x, side)  # its convolution applies it (fold_batch_norms)
        beta = tf.convert_to_tensor(self.beta)
        # The fused kernel always takes a scale: without gamma it is ones.
        gamma = tf.convert_to_tensor(self.gamma) if self.scale else tf.ones_like(beta)
        nchw = self._nchw(x.shape)
        ctx = tf.distribute.get_replica_context()
        if training and self.synchronized and ctx is not None and ctx.num_replicas_in_sync > 1:
            return self._after(self._synchronized(x, gamma, beta, nchw, ctx), side)
        if training and self.own_kernel and not nchw and x.dtype in (tf.float32, tf.bfloat16):
            return self._own(x, gamma, beta, side)
        return self._after(self._fused(x, gamma, beta, nchw, training), side)

    def _synchronized(self, x, gamma, beta, nchw, ctx):
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

    def _own(self, x, gamma, beta, side):
        from tpubench.model import cpu_ops  # loads (and first builds) the kernel library

        y, mean, variance = cpu_ops.batch_norm_train(
            x, gamma, beta, side, epsilon=self.epsilon, relu=self.relu
        )
        # The moving variance takes the Bessel-corrected batch variance, as
        # TensorFlow's fused kernel gives it.
        n = tf.cast(tf.size(x) // tf.shape(x)[-1], tf.float32)
        unbiased = tf.stop_gradient(variance) * n / tf.maximum(n - 1.0, 1.0)
        self._update(tf.stop_gradient(mean), unbiased)
        return y

    def _fused(self, x, gamma, beta, nchw, training):
        shape = tf.shape(x)
        fmt = "NCHW" if nchw else "NHWC"
        x4 = x if len(x.shape) == 4 else tf.reshape(x, [-1, 1, 1, x.shape[-1]])
        # In training the kernel updates the moving averages itself (one op,
        # not six per layer): new = momentum * old + (1 - momentum) * batch,
        # the batch variance Bessel-corrected as before.
        y, mean, variance = tf.compat.v1.nn.fused_batch_norm(
            x4,
            gamma,
            beta,
            mean=tf.convert_to_tensor(self.moving_mean),
            variance=tf.convert_to_tensor(self.moving_variance),
            epsilon=self.epsilon,
            is_training=bool(training),
            exponential_avg_factor=1.0 - self.momentum if training else 1.0,
            data_format=fmt,
        )[:3]
        if training:
            self.moving_mean.assign(mean)
            self.moving_variance.assign(variance)
        return y if len(x.shape) == 4 else tf.reshape(y, shape)

    def compute_output_shape(self, input_shape):
        if isinstance(input_shape, (list, tuple)) and isinstance(input_shape[0], (list, tuple)):
            return input_shape[0]
        return input_shape


class Fork(keras.layers.Layer):
    """Two copies of its input, for a residual block's convolutions and its shortcut.

    What using a tensor twice does, except that built under
    `own_kernels.use(True)` the two branches' gradients are summed by tpubench's
    CPU kernel (`cpu_ops.fork`) rather than TensorFlow's `AddN`.
    """

    def __init__(self, **kw):
        super().__init__(**kw)
        self.own_kernel = own_kernels.chosen()

    def call(self, x):
        if self.own_kernel and x.dtype in (tf.float32, tf.bfloat16):
            from tpubench.model import cpu_ops

            return list(cpu_ops.fork(x))
        return [tf.identity(x), tf.identity(x)]

    def compute_output_shape(self, input_shape):
        return [input_shape, input_shape]
