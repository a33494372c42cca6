"""TFDS image-classification datasets as a `tpubench data prepare` source.

The TFDS data_dir may be local or on gs:// (TFDS reads through tf.io.gfile).
A dataset already prepared there is read directly, even when this TFDS has
no builder code for it (`builder_from_directory`); otherwise TFDS downloads
and prepares it, which needs the network, or for manual-download datasets
(imagenet2012) the files in --manual_dir.  JPEG images are kept as encoded
(TFDS stores ImageNet's original JPEG bytes); other encodings are decoded
and re-encoded, or stored raw for small images.
"""

from __future__ import annotations

import os
import socket

from tpubench.core import errors
from tpubench.data import source_api, tfrecord

_EVAL_SPLITS = ("validation", "test")


def _online(host: str = "storage.googleapis.com") -> bool:
    """A quick DNS + TCP probe: TFDS itself retries for minutes before giving up."""

    try:
        with socket.create_connection((host, 443), timeout=5):
            return True
    except OSError:
        return False


def _builder(name: str, data_dir: str | None, manual_dir: str | None):
    import tensorflow as tf
    import tensorflow_datasets as tfds

    root = data_dir or os.path.expanduser("~/tensorflow_datasets")
    base = f"{root.rstrip('/')}/{name}"
    try:
        versions = sorted(tf.io.gfile.listdir(base)) if tf.io.gfile.isdir(base) else []
    except tf.errors.OpError as e:
        raise errors.DataError(f"cannot list {base}: {e.message.splitlines()[0]}") from None
    versions = [v.rstrip("/") for v in versions if v[:1].isdigit()]
    if versions:  # prepared already: read it, builder code or not
        return tfds.builder_from_directory(f"{base}/{versions[-1]}")
    try:
        builder = tfds.builder(name, data_dir=root)
    except Exception:  # noqa: BLE001 - tfds raises DatasetNotFoundError and friends
        raise errors.UsageError(
            f"unknown TFDS dataset {name!r} (no builder, and nothing prepared under {base}); "
            "`python -c 'import tensorflow_datasets as tfds; print(tfds.list_builders())'` "
            "lists them"
        ) from None
    config = tfds.download.DownloadConfig(manual_dir=manual_dir) if manual_dir else None
    if not manual_dir and not _online():
        raise errors.DataError(
            f"TFDS dataset {name!r} is not prepared under {base} and there is no network to "
            f"download it; run `tfds build {name} --data_dir=DIR` on a machine with network, "
            "copy DIR here (or to gs://) and pass --source=DIR"
        )
    try:
        builder.download_and_prepare(download_config=config)
    except Exception as e:  # noqa: BLE001 - network, checksum and manual-file errors
        why = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
        raise errors.DataError(
            f"TFDS could not download/prepare {name!r} ({why}); with no network, run "
            f"`tfds build {name} --data_dir=DIR` on a machine that has it and pass "
            "--source=DIR (local or gs://), or for manual-download datasets put the files "
            "in --manual_dir=DIR"
        ) from None
    return builder


def load(name: str, options: source_api.Options) -> source_api.Prepared:
    import numpy as np
    import tensorflow as tf
    import tensorflow_datasets as tfds

    builder = _builder(name, options.source_dir, options.manual_dir)
    features = builder.info.features
    image_key = next((k for k, f in features.items() if isinstance(f, tfds.features.Image)), None)
    label_key = next(
        (k for k, f in features.items() if isinstance(f, tfds.features.ClassLabel)), None
    )
    if image_key is None or label_key is None:
        raise errors.UsageError(
            f"TFDS dataset {name!r} has no image + class-label features "
            f"({', '.join(features.keys())}); tpubench prepares image classification data"
        )
    shape = tuple(d or 0 for d in features[image_key].shape)
    small = shape[0] and shape[1] and max(shape[:2]) <= 64
    fmt = options.format
    if fmt == "auto":
        fmt = "raw" if small else "jpeg"
    if fmt == "raw" and not small and not options.image_size:
        raise errors.UsageError(
            f"--format=raw for {name!r} (images {shape}) needs --image_size=N to resize to"
        )
    splits = list(builder.info.splits.keys())
    wanted = ["train"] + [next((s for s in _EVAL_SPLITS if s in splits), None)]
    wanted = [s for s in wanted if s in splits]
    if "train" not in wanted:
        raise errors.DataError(f"TFDS dataset {name!r} has no train split ({', '.join(splits)})")

    def records(split):
        ds = builder.as_dataset(
            split=split,
            shuffle_files=False,
            decoders={image_key: tfds.decode.SkipDecoding()},
        )
        for ex in ds.as_numpy_iterator():
            data, label = ex[image_key], int(ex[label_key])
            if fmt == "jpeg" and data[:3] == b"\xff\xd8\xff":
                h, w = tf.image.extract_jpeg_shape(data).numpy()[:2]
                yield tfrecord.encode_jpeg_image(data, label, h, w)
                continue
            image = tf.io.decode_image(data, expand_animations=False).numpy()
            if fmt == "jpeg":
                rgb = image if image.shape[-1] == 3 else np.repeat(image[..., :1], 3, axis=-1)
                yield tfrecord.encode_jpeg_image(
                    source_api.jpeg_bytes(rgb), label, image.shape[0], image.shape[1]
                )
            else:
                if options.image_size and image.shape[0] != options.image_size:
                    image = source_api.resize(image, options.image_size)
                yield tfrecord.encode_raw_image(image, label)

    raw_shape = shape
    if fmt == "raw" and options.image_size:
        raw_shape = (options.image_size, options.image_size, shape[2] or 3)
    out_splits = {("validation" if s in _EVAL_SPLITS else s): s for s in wanted}
    return source_api.Prepared(
        name=name,
        format="raw_image" if fmt == "raw" else "jpeg_image",
        image_shape=raw_shape if fmt == "raw" else (0, 0, 3),
        num_classes=features[label_key].num_classes,
        source=f"TFDS {builder.info.full_name} from {builder.data_dir}",
        splits={k: (lambda s=s: records(s)) for k, s in out_splits.items()},
        class_names=tuple(features[label_key].names),
    )
