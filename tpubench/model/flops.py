"""FLOPs per example of a model's forward pass and training step, counted from its graph.

TensorFlow's graph profiler on the traced (never executed) eval and train
functions, multiply and add counted apart; recurrent layers unrolled so
every time step is seen.
"""

from __future__ import annotations

from tpubench.model import recurrent
from tpubench.model.model_api import Mode


def count_flops(spec, params, batch: int = 2) -> dict:
    """FLOPs per example of the forward pass and of a training step.

    Traces the model's eval and train (loss + gradients) functions on a
    small batch, never executes them, and asks TensorFlow's graph profiler
    for the float operations.
    """
    import keras
    import tensorflow as tf

    # Unrolled, so the profiler sees every time step of recurrent layers.
    model = recurrent.unrolled_copy(spec.build_model(params))
    features_spec, labels_spec = spec.element_spec(params)

    def with_batch(s):
        return tf.TensorSpec([batch, *s.shape], s.dtype)

    def forward(x, y):
        return tf.reduce_sum(spec.model_fn(model, x, y, Mode.EVAL, params).per_example_loss)

    def train(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(spec.model_fn(model, x, y, Mode.TRAIN, params).per_example_loss)
        return tape.gradient(loss, model.trainable_variables)

    options = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
    options["output"] = "none"
    result = {}
    for name, fn in (("forward", forward), ("train", train)):
        concrete = tf.function(fn).get_concrete_function(
            tf.nest.map_structure(with_batch, features_spec), with_batch(labels_spec)
        )
        prof = tf.compat.v1.profiler.profile(graph=concrete.graph, options=options)
        result[f"{name}_flops_per_example"] = prof.total_float_ops / batch
    result["parameters"] = int(sum(v.shape.num_elements() for v in model.trainable_variables))
    keras.backend.clear_session()
    return result
