"""The TFRecord example layout tpubench writes and reads.

Raw image records: `image/raw` (uint8 bytes, HxWxC), `image/shape` (int64
[3]) and `label` (int64).  Every path goes through tf.io.gfile, so local
disk and gs:// are the same code.
"""

from __future__ import annotations

import hashlib

import numpy as np


def _tf():
    import tensorflow as tf

    return tf


def encode_raw_image(image: np.ndarray, label: int) -> bytes:
    tf = _tf()
    image = np.ascontiguousarray(image, dtype=np.uint8)
    feature = {
        "image/raw": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image.tobytes()])),
        "image/shape": tf.train.Feature(int64_list=tf.train.Int64List(value=list(image.shape))),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(label)])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def parse_raw_image_batch(serialized, image_shape):
    """A batch of serialized examples -> (uint8 images [B, H, W, C], int32 labels [B]).

    Vectorised: one parse and one decode per batch instead of per example,
    which is what keeps small models fed on a 2-core host.
    """
    tf = _tf()
    parsed = tf.io.parse_example(
        serialized,
        {
            "image/raw": tf.io.FixedLenFeature([], tf.string),
            "label": tf.io.FixedLenFeature([], tf.int64),
        },
    )
    images = tf.reshape(tf.io.decode_raw(parsed["image/raw"], tf.uint8), [-1, *image_shape])
    return images, tf.cast(parsed["label"], tf.int32)


def write_shards(directory: str, prefix: str, records: list[bytes], num_shards: int):
    """Writes records round-robin into NUM_SHARDS files; returns (names, bytes, sha256)."""
    tf = _tf()
    names = [f"{prefix}-{i:05d}-of-{num_shards:05d}.tfrecord" for i in range(num_shards)]
    digest = hashlib.sha256()
    writers = [tf.io.TFRecordWriter(directory.rstrip("/") + "/" + n) for n in names]
    try:
        for i, record in enumerate(records):
            writers[i % num_shards].write(record)
            digest.update(record)
    finally:
        for w in writers:
            w.close()
    size = sum(tf.io.gfile.stat(directory.rstrip("/") + "/" + n).length for n in names)
    return tuple(names), size, digest.hexdigest()
