"""The embedded real dataset: scikit-learn's handwritten digits.

scikit-learn ships 1,797 real 8x8 handwritten digits (UCI optdigits test
set).  tpubench prepares them at MNIST's shape so every MNIST model trains
on them offline: each digit is upsampled to 20x20 and centred in a 28x28
frame (MNIST's own layout), grey levels 0..16 scaled to 0..255.  Split 80/20,
stratified, with a fixed seed: 1,437 train and 360 test examples.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time

import numpy as np

from tpubench.data import manifest as manifest_lib
from tpubench.data import tfrecord
from tpubench.storage import cache as cache_lib

NAME = "digits"
IMAGE_SHAPE = (28, 28, 1)
NUM_CLASSES = 10
SPLIT_SEED = 0


def load_arrays() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Returns {"train": (images uint8 [N,28,28,1], labels), "test": (...)}."""
    import tensorflow as tf
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    images = digits.images.astype(np.float32)[..., None] * (255.0 / 16.0)  # [N, 8, 8, 1]
    big = tf.image.resize(images, (20, 20), method="bilinear", antialias=True).numpy()
    framed = np.pad(big, ((0, 0), (4, 4), (4, 4), (0, 0)))
    framed = np.clip(np.rint(framed), 0, 255).astype(np.uint8)
    labels = digits.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(
        framed, labels, test_size=0.2, random_state=SPLIT_SEED, stratify=labels
    )
    return {"train": (x_tr, y_tr), "test": (x_te, y_te)}


def prepare(output_dir: str, num_shards: int = 4) -> manifest_lib.Manifest:
    """Writes sharded raw-image TFRecords and manifest.json to OUTPUT_DIR."""
    import tensorflow as tf

    start = time.perf_counter()
    tf.io.gfile.makedirs(output_dir)
    splits = {}
    digest = hashlib.sha256()
    for split, (images, labels) in load_arrays().items():
        records = [tfrecord.encode_raw_image(x, y) for x, y in zip(images, labels, strict=True)]
        shards = num_shards if split == "train" else 1
        names, counts, size, sha = tfrecord.write_shards(output_dir, split, records, shards)
        digest.update(sha.encode())
        splits[split] = manifest_lib.Split(len(records), names, size, counts)
    manifest = manifest_lib.Manifest(
        name=NAME,
        format="raw_image",
        image_shape=IMAGE_SHAPE,
        num_classes=NUM_CLASSES,
        splits=splits,
        fingerprint="sha256:" + digest.hexdigest(),
        source="scikit-learn load_digits (UCI optdigits), upsampled to 28x28",
        prepare_seconds=round(time.perf_counter() - start, 3),
        data_dir=output_dir,
    )
    manifest_lib.write(output_dir, manifest)
    return manifest


def cache_dir() -> str:
    """Where embedded datasets are prepared: $TPUBENCH_CACHE or ~/.cache/tpubench."""
    return cache_lib.path("datasets", NAME)


def ensure_prepared() -> str:
    """Prepares digits in the local cache once (atomically) and returns its path."""
    target = cache_dir()
    if os.path.exists(os.path.join(target, manifest_lib.MANIFEST)):
        return target
    parent = os.path.dirname(target)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".digits-", dir=parent)
    try:
        prepare(tmp)
        try:
            os.rename(tmp, target)
        except OSError:  # another process prepared it first
            if not os.path.exists(os.path.join(target, manifest_lib.MANIFEST)):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
