"""Where `tpubench data prepare` gets examples from.

A source yields, per split, the serialized TFRecord examples of one layout
(`raw_image` or `jpeg_image`, see tfrecord.py) plus what the manifest says
about them.  Sources:

* ``digits``: scikit-learn's real handwritten digits (embedded, offline).
* ``photos``: crops of the two real photographs scikit-learn ships
  (sklearn.datasets.load_sample_images, 427x640 JPEGs), re-encoded as JPEG
  records of ImageNet-like size: the embedded stand-in for ImageNet's *I/O
  and decode cost*, labelled by photo and quadrant (8 classes).  It measures
  pipelines; it is not a benchmark of accuracy.
* ``folder``: an image folder with one sub-folder per class (optionally
  ``train/`` and ``validation/`` at the top), JPEG files kept as they are.
* ``tfds:NAME``: any TFDS image-classification dataset (mnist, cifar10,
  imagenet2012 with its manual_dir, ...), from a TFDS data_dir on local disk
  or gs://, downloaded and prepared by TFDS when it is not there yet.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator

import numpy as np

from tpubench.core import errors
from tpubench.data import tfrecord
from tpubench.data.source_api import Options, Prepared, jpeg_bytes, resize
from tpubench.storage import any_path

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif")
MAX_IMAGE_BYTES = 256 << 20  # one image of an image folder: photos are a few MB


KINDS = {
    "digits": "scikit-learn's 1,797 real 8x8 digits at MNIST's 28x28 (embedded, offline)",
    "photos": "JPEG crops of scikit-learn's two sample photographs, ImageNet-sized "
    "(embedded, offline; for pipeline and decode measurements)",
    "folder": "an image folder, one sub-folder per class (--source=DIR)",
    "tfds:NAME": "a TFDS image dataset, e.g. tfds:mnist, tfds:cifar10, tfds:imagenet2012 "
    "(--source=TFDS_DATA_DIR local or gs://, --manual_dir for manual downloads)",
}


# ---------------------------------------------------------------- digits
def digits(options: Options) -> Prepared:
    from tpubench.data import digits as digits_lib

    if options.format == "jpeg":
        raise errors.UsageError("--format=jpeg does not fit digits (28x28 grey); use raw")
    arrays = digits_lib.load_arrays()

    def split(name):
        images, labels = arrays[name]
        pairs = list(zip(images, labels, strict=True))
        return lambda: (tfrecord.encode_raw_image(x, y) for x, y in pairs)

    return Prepared(
        name=digits_lib.NAME,
        format="raw_image",
        image_shape=digits_lib.IMAGE_SHAPE,
        num_classes=digits_lib.NUM_CLASSES,
        source="scikit-learn load_digits (UCI optdigits), upsampled to 28x28",
        splits={"train": split("train"), "test": split("test")},
    )


# ---------------------------------------------------------------- photos
def photos(options: Options) -> Prepared:
    from sklearn.datasets import load_sample_images

    pictures = load_sample_images().images  # two real 427x640 RGB photographs
    n_train = options.examples or 2048
    fmt = "raw_image" if options.format == "raw" else "jpeg_image"
    size = options.image_size or 224

    def crops(count: int, seed: int) -> Iterator[bytes]:
        rng = np.random.default_rng(seed)
        for _ in range(count):
            which = int(rng.integers(len(pictures)))
            pic = pictures[which]
            h, w = pic.shape[:2]
            side = int(rng.integers(int(0.55 * h), h + 1))
            aspect = rng.uniform(0.8, 1.25)
            ch, cw = side, min(w, int(side * aspect))
            y, x = int(rng.integers(h - ch + 1)), int(rng.integers(w - cw + 1))
            crop = pic[y : y + ch, x : x + cw]
            if rng.random() < 0.5:
                crop = crop[:, ::-1]
            quadrant = int(y + ch / 2 >= h / 2) * 2 + int(x + cw / 2 >= w / 2)
            label = which * 4 + quadrant
            if fmt == "raw_image":
                yield tfrecord.encode_raw_image(resize(crop, size), label)
            else:
                crop = np.ascontiguousarray(crop)
                yield tfrecord.encode_jpeg_image(jpeg_bytes(crop), label, ch, cw)

    return Prepared(
        name="photos",
        format=fmt,
        image_shape=(size, size, 3) if fmt == "raw_image" else (0, 0, 3),
        num_classes=8,
        source="crops of scikit-learn's sample photographs (china.jpg, flower.jpg); "
        "label = photo x quadrant",
        splits={
            "train": lambda: crops(n_train, options.seed),
            "validation": lambda: crops(max(8, n_train // 8), options.seed + 1),
        },
    )


# ---------------------------------------------------------------- folder
def folder(options: Options) -> Prepared:
    import tensorflow as tf

    root = options.source_dir
    if not root:
        raise errors.UsageError("--dataset=folder needs --source=DIR (one sub-folder per class)")
    if not tf.io.gfile.isdir(root):
        raise errors.DataError(f"--source={root} is not a directory of class folders")
    top = sorted(tf.io.gfile.listdir(root))
    top = [d.rstrip("/") for d in top if tf.io.gfile.isdir(f"{root.rstrip('/')}/{d}")]
    split_dirs = {s: s for s in ("train", "validation") if s in top}
    if "train" in split_dirs and "validation" in split_dirs:
        class_root = f"{root.rstrip('/')}/train"
    else:
        split_dirs = {}
        class_root = root.rstrip("/")
    classes = sorted(
        d.rstrip("/")
        for d in tf.io.gfile.listdir(class_root)
        if tf.io.gfile.isdir(f"{class_root}/{d}")
    )
    if not classes:
        raise errors.DataError(
            f"--source={root} has no class sub-folders (expected DIR/CLASS/*.jpg)"
        )
    fmt = "raw_image" if options.format == "raw" else "jpeg_image"
    size = options.image_size or 224

    def files_of(base: str) -> list[tuple[str, int]]:
        out = []
        for label, name in enumerate(classes):
            d = f"{base}/{name}"
            if not tf.io.gfile.isdir(d):
                continue
            for f in sorted(tf.io.gfile.listdir(d)):
                if f.lower().endswith(IMAGE_SUFFIXES):
                    out.append((f"{d}/{f}", label))
        return out

    if split_dirs:
        listing = {s: files_of(f"{root.rstrip('/')}/{s}") for s in split_dirs}
    else:
        every = files_of(class_root)

        def held_out(path: str) -> bool:  # stable under re-runs and added files
            h = int(hashlib.sha256(path.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
            return h < options.validation_fraction

        listing = {
            "train": [x for x in every if not held_out(x[0])],
            "validation": [x for x in every if held_out(x[0])],
        }
    for split, items in listing.items():
        if not items:
            raise errors.DataError(
                f"--source={root}: split {split!r} has no images ({', '.join(IMAGE_SUFFIXES)})"
            )

    def records(items):
        for path, label in items:
            data = any_path.read_bytes(path, MAX_IMAGE_BYTES, "an image file")
            try:
                image = tf.io.decode_image(data, channels=3, expand_animations=False).numpy()
            except tf.errors.InvalidArgumentError:
                raise errors.DataError(f"{path} is not a readable image") from None
            if fmt == "raw_image":
                yield tfrecord.encode_raw_image(resize(image, size), label)
            else:
                if data[:3] != b"\xff\xd8\xff":  # keep JPEGs as they are
                    data = jpeg_bytes(image)
                yield tfrecord.encode_jpeg_image(data, label, image.shape[0], image.shape[1])

    return Prepared(
        name=os.path.basename(root.rstrip("/")) or "folder",
        format=fmt,
        image_shape=(size, size, 3) if fmt == "raw_image" else (0, 0, 3),
        num_classes=len(classes),
        source=f"image folder {root}",
        splits={s: (lambda items=items: records(items)) for s, items in listing.items()},
        class_names=tuple(classes),
    )


# ---------------------------------------------------------------- tfds
def tfds_source(name: str, options: Options) -> Prepared:
    from tpubench.data import tfds_source as tfds_lib

    return tfds_lib.load(name, options)


def check_name(dataset: str) -> None:
    """Raises the one-line error `get` gives an unknown DATASET, without loading TensorFlow."""
    from tpubench.data import text_sources

    tfds_name = dataset.startswith("tfds:") and len(dataset) > len("tfds:")
    if dataset not in KINDS and not tfds_name and dataset not in text_sources.PREPARERS:
        raise errors.unknown("dataset", dataset, [*KINDS, *text_sources.PREPARERS])


def get(dataset: str, options: Options) -> Prepared:
    """The source for DATASET ('digits', 'photos', 'folder', 'tfds:NAME', or a text source)."""
    check_name(dataset)
    if dataset == "digits":
        return digits(options)
    if dataset == "photos":
        return photos(options)
    if dataset == "folder":
        return folder(options)
    if dataset.startswith("tfds:") and len(dataset) > len("tfds:"):
        return tfds_source(dataset[len("tfds:") :], options)
    from tpubench.data import text_sources

    raise errors.unknown("dataset", dataset, [*KINDS, *text_sources.PREPARERS])
