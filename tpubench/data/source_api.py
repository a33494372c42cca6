"""What every `data prepare` source shares: its options, what it produces,
and the two image helpers (JPEG encoding, resizing) the image sources use.

A module of its own so that sources.py (the dispatcher) and the sources it
dispatches to (tfds_source.py) both import it rather than each other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import numpy as np


@dataclasses.dataclass
class Prepared:
    """What a source produces: records per split and the manifest's facts."""

    name: str
    format: str
    image_shape: tuple[int, ...]  # raw: the stored shape; jpeg: (0, 0, 3) = variable
    num_classes: int
    source: str
    splits: dict[str, Callable[[], Iterator[bytes]]]
    class_names: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Options:
    format: str = "auto"  # auto | raw | jpeg
    image_size: int | None = None  # raw records from big images are resized to this square
    examples: int | None = None  # photos: train examples (validation gets 1/8 of it)
    source_dir: str | None = None  # folder: the image folder; tfds: its data_dir
    manual_dir: str | None = None  # tfds: manual-download files (imagenet2012)
    validation_fraction: float = 0.1
    seed: int = 0


def _tf():
    import tensorflow as tf

    return tf


def jpeg_bytes(image: np.ndarray, quality: int = 90) -> bytes:
    """A uint8 HxWx3 image as JPEG bytes."""
    tf = _tf()
    return tf.io.encode_jpeg(tf.constant(image, tf.uint8), quality=quality).numpy()


def resize(image: np.ndarray, size: int) -> np.ndarray:
    """A uint8 image resized (antialiased) to SIZE x SIZE, still uint8."""
    tf = _tf()
    out = tf.image.resize(image[None].astype(np.float32), (size, size), antialias=True)[0]
    return np.clip(np.rint(out.numpy()), 0, 255).astype(np.uint8)
