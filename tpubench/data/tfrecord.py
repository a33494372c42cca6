"""The TFRecord example layouts tpubench writes and reads.

Raw image records (`raw_image`): `image/raw` (uint8 bytes, HxWxC),
`image/shape` (int64 [3]) and `label` (int64): no decode cost, the layout
for small images and for measuring a pipeline without JPEG decoding.

JPEG records (`jpeg_image`) follow the ImageNet convention of the TPU and
tf_cnn_benchmarks scripts: `image/encoded` (the original JPEG bytes),
`image/format`, `image/height`, `image/width` and `image/class/label`
(0-based here).  Every path goes through tf.io.gfile, so local disk and
gs:// are the same code.
"""

from __future__ import annotations

import hashlib

import numpy as np


def _tf():
    import tensorflow as tf

    return tf


# Records are serialized deterministically (map keys sorted): protobuf's
# default map order differs between processes, and the fingerprint of the
# same data must not.


def encode_raw_image(image: np.ndarray, label: int) -> bytes:
    tf = _tf()
    image = np.ascontiguousarray(image, dtype=np.uint8)
    feature = {
        "image/raw": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image.tobytes()])),
        "image/shape": tf.train.Feature(int64_list=tf.train.Int64List(value=list(image.shape))),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(label)])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString(
        deterministic=True
    )


def encode_jpeg_image(encoded: bytes, label: int, height: int, width: int) -> bytes:
    tf = _tf()
    feature = {
        "image/encoded": tf.train.Feature(bytes_list=tf.train.BytesList(value=[encoded])),
        "image/format": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"JPEG"])),
        "image/height": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(height)])),
        "image/width": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(width)])),
        "image/class/label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(label)])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString(
        deterministic=True
    )


def parse_jpeg_record(serialized):
    """One serialized JPEG record -> (encoded JPEG bytes scalar, int32 label)."""
    tf = _tf()
    parsed = tf.io.parse_single_example(
        serialized,
        {
            "image/encoded": tf.io.FixedLenFeature([], tf.string),
            "image/class/label": tf.io.FixedLenFeature([], tf.int64),
        },
    )
    return parsed["image/encoded"], tf.cast(parsed["image/class/label"], tf.int32)


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


class ShardWriter:
    """Streams records round-robin into NUM_SHARDS files of one split.

    Nothing is held in memory, so an ImageNet-sized split streams through.
    `close()` returns (file names, examples per file, total bytes, sha256 of
    the records in write order).
    """

    def __init__(self, directory: str, prefix: str, num_shards: int):
        tf = _tf()
        self.directory = directory.rstrip("/")
        self.names = [f"{prefix}-{i:05d}-of-{num_shards:05d}.tfrecord" for i in range(num_shards)]
        self.counts = [0] * num_shards
        self.digest = hashlib.sha256()
        self._writers = [tf.io.TFRecordWriter(f"{self.directory}/{n}") for n in self.names]
        self._next = 0

    def write(self, record: bytes) -> None:
        i = self._next
        self._writers[i].write(record)
        self.counts[i] += 1
        self.digest.update(record)
        self._next = (i + 1) % len(self._writers)

    def close(self):
        tf = _tf()
        for w in self._writers:
            w.close()
        size = sum(tf.io.gfile.stat(f"{self.directory}/{n}").length for n in self.names)
        return tuple(self.names), tuple(self.counts), size, self.digest.hexdigest()


def write_shards(directory: str, prefix: str, records, num_shards: int):
    """Writes RECORDS into NUM_SHARDS files; returns (names, counts, bytes, sha256)."""
    writer = ShardWriter(directory, prefix, num_shards)
    for record in records:
        writer.write(record)
    return writer.close()
