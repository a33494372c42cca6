"""Pieces the text models share (not a model: the registry skips `_` modules)."""

import keras
import tensorflow as tf


def head_units(params) -> int:
    """Two classes get one logit (Keras's sigmoid head); more get one logit each."""
    n = int(params["num_classes"])
    return 1 if n == 2 else n


def classifier_element_spec(params):
    return tf.TensorSpec([params["max_length"]], tf.int32), tf.TensorSpec([], tf.int32)


class OneHot(keras.layers.Layer):
    """Token ids [B, T] -> float one-hot [B, T, depth] (the Keras examples' input encoding)."""

    def __init__(self, depth, **kwargs):
        super().__init__(**kwargs)
        self.depth = int(depth)

    def call(self, ids):
        return tf.one_hot(ids, self.depth, dtype=self.compute_dtype)

    def compute_output_shape(self, input_shape):
        return (*input_shape, self.depth)

    def get_config(self):
        return super().get_config() | {"depth": self.depth}
