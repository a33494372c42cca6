"""ImageNet training augmentation draws each random choice from its own numbers.

Stateful random ops given one op-level seed draw the same numbers: with
`seed=params["seed"]` on every op, Inception's preprocessing flipped an image
exactly when it darkened it, and moved saturation, hue and contrast with the
brightness (one random number an image for all five).
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from tpubench.data import image_preprocessing

RANDOM_OPS = ("RandomUniform", "SampleDistortedBoundingBoxV2")


def _seeds_of_random_ops(style: str, seed) -> list[tuple[str, int, int]]:
    graph = (
        tf.function(lambda x: image_preprocessing.decode(x, True, 32, style, seed))
        .get_concrete_function(tf.TensorSpec([], tf.string))
        .graph
    )
    return [
        (op.type, op.get_attr("seed"), op.get_attr("seed2"))
        for op in graph.get_operations()
        if op.type in RANDOM_OPS
    ]


@pytest.mark.parametrize("style, count", [("resnet", 2), ("inception", 6)])
@pytest.mark.parametrize("seed", [0, 7, None])
def test_each_random_choice_has_a_seed_of_its_own(style, count, seed):
    tf.random.set_seed(1)  # as keras.utils.set_random_seed does in a run
    ops = _seeds_of_random_ops(style, seed)
    assert len(ops) == count, ops
    assert len({(s, s2) for _, s, s2 in ops}) == count, ops


def test_a_seed_repeats_the_same_augmentation_and_another_seed_changes_it():
    tf.random.set_seed(1)
    image = tf.cast(tf.tile(tf.range(64, dtype=tf.int32)[None, :, None] * 4, [48, 1, 3]), tf.uint8)
    jpeg = tf.io.encode_jpeg(image)

    def run(seed):
        tf.random.set_seed(1)
        ds = tf.data.Dataset.from_tensors(jpeg).repeat(40)
        ds = ds.map(lambda x: image_preprocessing.decode(x, True, 16, "inception", seed))
        return np.stack([x.numpy() for x in ds])

    first, again, other = run(3), run(3), run(4)
    assert np.array_equal(first, again)
    assert not np.array_equal(first, other)
    # The image brightens left to right: a flipped output darkens instead; about half are.
    flipped = first[:, :, :4].mean(axis=(1, 2, 3)) > first[:, :, -4:].mean(axis=(1, 2, 3))
    assert 8 <= flipped.sum() <= 32
