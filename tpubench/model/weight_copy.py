"""bf16 copies of fp32 weights, kept between steps by the optimizer's update.

Under Keras' `mixed_bfloat16` policy the weights stay fp32: every training
step casts each one to bf16 for the forward pass (a pass that reads 4 bytes
and writes 2 an element) and casts its bf16 gradient back to fp32 (another)
before the update reads it.  With tpubench's CPU kernels chosen, the
Adadelta and RMSprop updates already read and write every weight once a
step; here they also write the new weights rounded to bf16 into a copy
kept between steps, the layer's forward pass reads the copy, and its
gradient reaches the update in bf16, widened inside the kernel
(model/optim_cpu.cc).  The rounding is `tf.cast`'s (nearest even) and the
widening exact, so training is the same, bit for bit, as with the casts.

Which weights: those of `layers.Conv2D` and `layers.Dense` built in bf16
under `own_kernels.use(True)`, without regularizers or constraints (both
read or rewrite the fp32 weights outside the update), on one replica, and
only where the optimizer says its update writes the copy
(`writes_bf16_copy`).  `attach` makes them once the model and optimizer
exist.  The copies are not the model's weights: checkpoints hold the fp32
ones, and `Copies.kept` recasts every copy at the start of a training loop
whenever the optimizer's step count is not the one they were written at
(a new process, a restored checkpoint).  Code that changes the weights
outside the train loop without moving the step count calls `invalidate`.
"""

from __future__ import annotations

import contextlib

import keras
import tensorflow as tf

from tpubench.model import own_kernels

_ATTR = "_tpubench_bf16_copy"


def wanted(layer) -> bool:
    """Whether LAYER, being built under the current choice, would read bf16 copies."""
    return own_kernels.chosen() and layer.compute_dtype == "bfloat16"


def _tf_variable(v):
    """The tf.Variable behind V; `_value`, not `value`, which a layer's call autocasts."""
    return v._value if isinstance(v, keras.Variable) else v


def of(variable):
    """The bf16 copy kept for VARIABLE (a Keras or tf.Variable), or None."""
    return getattr(_tf_variable(variable), _ATTR, None)


def read(variable):
    """VARIABLE for a bf16 layer's forward pass: its copy where one is kept.

    Differentiable: the gradient reaches the fp32 variable in bf16, as the
    update that writes the copy takes it.  Without a copy, Keras' own read
    (the cast to the layer's compute dtype).
    """
    copy = of(variable)
    if copy is None:
        return tf.convert_to_tensor(variable)

    @tf.custom_gradient
    def from_copy(weights):  # WEIGHTS: the fp32 read, through which the tape reaches the variable
        del weights

        def grad(dy):
            return dy

        return copy.read_value(), grad

    return from_copy(tf.convert_to_tensor(_tf_variable(variable)))


class Copies:
    """The copies one model keeps, and the optimizer step count they hold."""

    def __init__(self, pairs, iterations):
        self.pairs = pairs  # [(fp32 tf.Variable, bf16 copy)]
        self.iterations = iterations
        # -1: not written by any step yet (a new process, or after `invalidate`).  None
        # without copies: a run that keeps none (GPU, TPU, a cluster) makes no variable.
        self.at = None
        if pairs:
            self.at = tf.Variable(-1, dtype=tf.int64, trainable=False, name="bf16_copies_at")

    def __len__(self) -> int:
        return len(self.pairs)

    def invalidate(self) -> None:
        """Makes the next training loop recast every copy from the fp32 weights."""
        if self.at is not None:
            self.at.assign(-1)

    @contextlib.contextmanager
    def kept(self):
        """Around a training loop's steps (inside its tf.function): fresh copies in, step out."""
        if not self.pairs:
            yield
            return
        step = tf.cast(self.iterations, tf.int64)

        def recast():
            for var, copy in self.pairs:
                copy.assign(tf.cast(var, tf.bfloat16))
            return tf.constant(True)

        tf.cond(tf.not_equal(self.at, step), recast, lambda: tf.constant(False))
        yield
        self.at.assign(tf.cast(self.iterations, tf.int64))


def _eligible(layer) -> list:
    if not getattr(layer, "bf16_copies", False):
        return []
    if any(getattr(layer, k, None) is not None for k in _REWRITERS):
        return []
    return [w for w in layer.trainable_weights if w.dtype == "float32"]


# Regularizers read the fp32 weights (a second gradient, in fp32); constraints
# rewrite them after the update.  Layers with either keep Keras' casts.
_REWRITERS = ("kernel_regularizer", "bias_regularizer", "kernel_constraint", "bias_constraint")


def attach(model, optimizer, strategy) -> Copies:
    """Makes the bf16 copies MODEL's layers asked for where OPTIMIZER's update writes them.

    Called in STRATEGY's scope after the optimizer is built; one replica only
    (the update of a mirrored variable runs per device, its copy would not).
    OPTIMIZER None: no copies.
    """
    pairs = []
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    writes = getattr(inner, "writes_bf16_copy", None)
    if writes is not None and strategy.num_replicas_in_sync == 1:
        for layer in model._flatten_layers(include_self=False, recursive=True):
            for w in _eligible(layer):
                var = _tf_variable(w)
                if writes(var) and of(var) is None:
                    copy = tf.Variable(tf.cast(var, tf.bfloat16), trainable=False, name="bf16_copy")
                    setattr(var, _ATTR, copy)
                    pairs.append((var, copy))
    return Copies(pairs, inner.iterations if pairs else None)
