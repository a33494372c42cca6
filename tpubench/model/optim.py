"""Optimizers and weight decay that models may share, fast under TensorFlow.

Same arithmetic, variables and checkpoints as their Keras 3 counterparts,
fewer GPU kernels per step.  Keras 3 writes each optimizer update and each
L2 penalty as several element-wise ops; in a graph that XLA does not fuse
(the default, `--xla` off) every op is a kernel launch, and ResNet-50 has
161 variables.  On one H100 (ResNet-50, fp16, batch 256, docs/gpu.md) the
fused momentum update alone took tpubench from 3,599 to 4,001 images/s.
No devices, strategies or flags here: models call these like any layer.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from tpubench.model import cpu_ops, own_kernels, weight_copy


def _tf_variable(v):
    """The tf.Variable behind a Keras 3 variable (the replica's own component
    inside a distributed update)."""
    return v.value if isinstance(v, keras.Variable) else v


@keras.saving.register_keras_serializable(package="tpubench")
class MomentumSGD(keras.optimizers.SGD):
    """Keras 3 SGD whose TensorFlow update is one fused kernel per variable.

    With momentum, `ResourceApplyKerasMomentum` computes what Keras 3 spells
    out in four ops: accum = momentum * accum - lr * grad, then var += accum
    (Nesterov: var += momentum * accum - lr * grad), the kernel tf.keras 2
    and tf_cnn_benchmarks used.  Sparse gradients (embeddings), momentum 0
    and other Keras backends take Keras's own path.
    """

    def update_step(self, gradient, variable, learning_rate):
        if self.momentum == 0 or not _fused(gradient):
            return super().update_step(gradient, variable, learning_rate)
        var = _tf_variable(variable)
        accum = _tf_variable(self.momentums[self._get_variable_index(variable)])
        dtype = var.dtype
        return tf.raw_ops.ResourceApplyKerasMomentum(
            var=var.handle,
            accum=accum.handle,
            lr=tf.cast(learning_rate, dtype),
            grad=tf.cast(gradient, dtype),
            momentum=tf.cast(self.momentum, dtype),
            use_nesterov=self.nesterov,
        )


def _fused(gradient) -> bool:
    """Whether an update can take TensorFlow's fused kernel: a dense gradient, TF backend."""
    return not isinstance(gradient, tf.IndexedSlices) and keras.backend.backend() == "tensorflow"


def _untouched(opt) -> bool:
    """Whether gradients reach OPT's update as the tape gave them: no clipping,
    scaling or accumulation on the way (which would run in bf16 on a bf16 copy's)."""
    changes = ("clipnorm", "global_clipnorm", "clipvalue", "gradient_accumulation_steps")
    return not any(getattr(opt, k, None) for k in changes) and opt.loss_scale_factor is None


def _kernel_grad(gradient):
    """GRADIENT as tpubench's update kernels take it: fp32, or bf16 (a weight copy's)."""
    return gradient if gradient.dtype == tf.bfloat16 else tf.cast(gradient, tf.float32)


@keras.saving.register_keras_serializable(package="tpubench")
class Adadelta(keras.optimizers.Adadelta):
    """Keras 3 Adadelta whose TensorFlow update is one fused kernel per variable.

    `ResourceApplyAdadelta` computes Keras's eight ops in one: accum = rho *
    accum + (1 - rho) * grad^2, update = sqrt(accum_update + eps) / sqrt(accum
    + eps) * grad, accum_update = rho * accum_update + (1 - rho) * update^2,
    var -= lr * update.  Same variables, so the same checkpoints.  Built under
    `own_kernels.use(True)`, fp32 variables take tpubench's CPU kernel instead,
    the same arithmetic in one pass over the arrays where TensorFlow's
    kernel makes three (`cpu_ops.apply_adadelta`).
    """

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.own_kernel = own_kernels.chosen()

    def writes_bf16_copy(self, variable) -> bool:
        """Whether VARIABLE's update is tpubench's kernel, which can also write its bf16 copy."""
        return self.own_kernel and variable.dtype == tf.float32 and _untouched(self)

    def update_step(self, gradient, variable, learning_rate):
        if not _fused(gradient):
            return super().update_step(gradient, variable, learning_rate)
        i = self._get_variable_index(variable)
        var = _tf_variable(variable)
        dtype = var.dtype
        accum = _tf_variable(self._accumulated_grads[i])
        accum_update = _tf_variable(self._accumulated_delta_vars[i])
        if self.own_kernel and dtype == tf.float32:
            return cpu_ops.apply_adadelta(
                var,
                accum,
                accum_update,
                grad=_kernel_grad(gradient),
                lr=tf.cast(learning_rate, dtype),
                rho=tf.cast(self.rho, dtype),
                epsilon=tf.cast(self.epsilon, dtype),
                copy=weight_copy.of(var),
            )
        return tf.raw_ops.ResourceApplyAdadelta(
            var=var.handle,
            accum=accum.handle,
            accum_update=accum_update.handle,
            lr=tf.cast(learning_rate, dtype),
            rho=tf.cast(self.rho, dtype),
            epsilon=tf.cast(self.epsilon, dtype),
            grad=tf.cast(gradient, dtype),
        )


@keras.saving.register_keras_serializable(package="tpubench")
class Adam(keras.optimizers.Adam):
    """Keras 3 Adam whose TensorFlow update is one fused kernel per variable.

    `ResourceApplyAdam` computes what Keras spells out in about a dozen ops:
    m = beta1 * m + (1 - beta1) * grad, v = beta2 * v + (1 - beta2) * grad^2,
    var -= lr * sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + eps).
    AMSGrad and sparse gradients take Keras's own path.
    """

    def update_step(self, gradient, variable, learning_rate):
        if self.amsgrad or not _fused(gradient):
            return super().update_step(gradient, variable, learning_rate)
        i = self._get_variable_index(variable)
        var = _tf_variable(variable)
        dtype = var.dtype
        step = tf.cast(self.iterations + 1, dtype)
        beta_1 = tf.cast(self.beta_1, dtype)
        beta_2 = tf.cast(self.beta_2, dtype)
        return tf.raw_ops.ResourceApplyAdam(
            var=var.handle,
            m=_tf_variable(self._momentums[i]).handle,
            v=_tf_variable(self._velocities[i]).handle,
            beta1_power=tf.pow(beta_1, step),
            beta2_power=tf.pow(beta_2, step),
            lr=tf.cast(learning_rate, dtype),
            beta1=beta_1,
            beta2=beta_2,
            epsilon=tf.cast(self.epsilon, dtype),
            grad=tf.cast(gradient, dtype),
        )


@keras.saving.register_keras_serializable(package="tpubench")
class RMSprop(keras.optimizers.RMSprop):
    """Keras 3 RMSprop whose TensorFlow update is one fused kernel per variable.

    `ResourceApplyRMSProp` (`ResourceApplyCenteredRMSProp` when centered)
    computes ms = rho * ms + (1 - rho) * grad^2, mom = momentum * mom + lr *
    grad / sqrt(ms + eps) (centered: ms - mg^2 + eps, mg the mean gradient),
    var -= mom: Keras's arithmetic.  The kernel always writes a momentum
    buffer; without momentum Keras keeps none, so each variable gets a
    scratch one here that is written and never read (0 x mom), and is not
    saved: checkpoints hold what Keras's own RMSprop holds.  Built under
    `own_kernels.use(True)`, fp32 variables without momentum or centering take
    tpubench's CPU kernel instead, which needs no scratch buffer
    (`cpu_ops.apply_rmsprop`).
    """

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.own_kernel = own_kernels.chosen()

    def _plain_own(self) -> bool:
        """Whether fp32 updates take tpubench's kernel: built for it, no momentum, not centered."""
        return self.own_kernel and self.momentum == 0 and not self.centered

    def writes_bf16_copy(self, variable) -> bool:
        """Whether VARIABLE's update is tpubench's kernel, which can also write its bf16 copy."""
        return self._plain_own() and variable.dtype == tf.float32 and _untouched(self)

    def build(self, var_list):
        super().build(var_list)
        if self._plain_own():
            return
        if self.momentum == 0 and keras.backend.backend() == "tensorflow":
            # Set through __dict__: Keras tracks attributes it is given, and
            # these are no part of the optimizer's state.
            self.__dict__["_scratch"] = [
                tf.Variable(tf.zeros(v.shape, v.dtype), trainable=False, name="rmsprop_scratch")
                for v in var_list
            ]

    def update_step(self, gradient, variable, learning_rate):
        if not _fused(gradient):
            return super().update_step(gradient, variable, learning_rate)
        i = self._get_variable_index(variable)
        var = _tf_variable(variable)
        dtype = var.dtype
        if self._plain_own() and dtype == tf.float32:
            return cpu_ops.apply_rmsprop(
                var,
                _tf_variable(self._velocities[i]),
                grad=_kernel_grad(gradient),
                lr=tf.cast(learning_rate, dtype),
                rho=tf.cast(self.rho, dtype),
                epsilon=tf.cast(self.epsilon, dtype),
                copy=weight_copy.of(var),
            )
        scratch = self.__dict__.get("_scratch")
        if self.momentum == 0 and scratch is None:
            return super().update_step(gradient, variable, learning_rate)
        mom = scratch[i] if self.momentum == 0 else self._momentums[i]
        common = dict(
            var=var.handle,
            ms=_tf_variable(self._velocities[i]).handle,
            mom=_tf_variable(mom).handle,
            lr=tf.cast(learning_rate, dtype),
            rho=tf.cast(self.rho, dtype),
            momentum=tf.cast(self.momentum, dtype),
            epsilon=tf.cast(self.epsilon, dtype),
            grad=tf.cast(gradient, dtype),
        )
        if self.centered:
            mg = _tf_variable(self._average_gradients[i]).handle
            return tf.raw_ops.ResourceApplyCenteredRMSProp(mg=mg, **common)
        return tf.raw_ops.ResourceApplyRMSProp(**common)


@keras.saving.register_keras_serializable(package="tpubench")
class L2(keras.regularizers.Regularizer):
    """`l2 * sum(w ** 2)`, as keras.regularizers.L2, through one `L2Loss` kernel.

    Keras's L2 is square, sum and multiply forward and as many ops again
    backward, for every regularised kernel; `tf.nn.l2_loss` (sum(w**2) / 2)
    is one op each way, as in tf_cnn_benchmarks.
    """

    def __init__(self, l2=0.01):
        self.l2 = float(l2)

    def __call__(self, x):
        return (2.0 * self.l2) * tf.nn.l2_loss(tf.cast(x, tf.float32))

    def get_config(self):
        return {"l2": self.l2}


@keras.saving.register_keras_serializable(package="tpubench")
class LossScaleOptimizer(keras.optimizers.LossScaleOptimizer):
    """Keras 3's dynamic loss scaling with a whole-model finiteness check.

    Keras tests every gradient on its own (`isfinite` and `all` per
    variable: two kernels each, 322 for ResNet-50, every fp16 step); here
    the gradients of each dtype are flattened into one vector first (one
    concat kernel) and tested once.  The answer
    is the same: every gradient finite, or not.
    """

    def check_finite(self, grads):
        groups: dict = {}
        for g in grads:
            if g is None:
                continue
            if isinstance(g, tf.IndexedSlices):
                g = g.values
            groups.setdefault(g.dtype, []).append(tf.reshape(g, [-1]))
        if not groups:
            return tf.constant(True)
        finite = [
            tf.reduce_all(tf.math.is_finite(tf.concat(parts, 0) if len(parts) > 1 else parts[0]))
            for parts in groups.values()
        ]
        return finite[0] if len(finite) == 1 else tf.reduce_all(tf.stack(finite))

    def apply_summed(self, grads, trainable_variables):
        """Applies gradients already summed over the replicas, from the strategy's
        cross-replica context (the parameter server's step, run/central_step.py),
        where Keras' `apply` asks for a replica context: unscaled, checked and
        applied, or skipped with the scale halved, as `apply` would."""
        self._common_apply(grads, trainable_variables=trainable_variables)
