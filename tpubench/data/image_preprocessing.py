"""The standard ImageNet preprocessing of JPEG records, per example.

Two styles, as the reference implementations train them:

* ``resnet``: training takes a random crop covering 5%-100% of the image
  (aspect ratio 3/4-4/3, `sample_distorted_bounding_box`), decoding only the
  crop (`decode_and_crop_jpeg`, the cheap path), resizes it to the model's
  size and flips it left-right at random; evaluation decodes a centre crop
  of 87.5% of the shorter side and resizes it.
* ``inception``: the same distorted crop (8%-100% of the area) plus random
  brightness/saturation/hue/contrast, and the same central crop for eval.

Each random operation gets an op-level seed of its own (`op_seeds`): ops
given one seed draw the same numbers, which made the flip happen exactly
when the brightness went down, and saturation, hue and contrast move with
them (one random number an image for all five).

Both return uint8 [size, size, 3] so a model's own batch preprocessing
(mean/std, scaling) stays the same for raw and JPEG records; resizing is
bilinear and the result is rounded back to uint8.
"""

from __future__ import annotations

STYLES = ("resnet", "inception")
_CROP_FRACTION = 0.875


def _tf():
    import tensorflow as tf

    return tf


def op_seeds(seed, count: int) -> list:
    """COUNT op-level seeds of their own from SEED (None: TensorFlow numbers the ops)."""
    return [None] * count if seed is None else [int(seed) * 16 + k for k in range(count)]


def _random_crop_window(encoded, area_range, seed):
    tf = _tf()
    shape = tf.image.extract_jpeg_shape(encoded)
    begin, size, _ = tf.image.sample_distorted_bounding_box(
        shape,
        bounding_boxes=tf.constant([0.0, 0.0, 1.0, 1.0], shape=[1, 1, 4]),
        min_object_covered=0.1,
        aspect_ratio_range=(3 / 4, 4 / 3),
        area_range=area_range,
        max_attempts=10,
        use_image_if_no_bounding_boxes=True,
        seed=seed or 0,
    )
    y, x, _ = tf.unstack(begin)
    h, w, _ = tf.unstack(size)
    return tf.stack([y, x, h, w])


def _center_crop_window(encoded):
    tf = _tf()
    shape = tf.image.extract_jpeg_shape(encoded)
    h, w = shape[0], shape[1]
    side = tf.cast(tf.cast(tf.minimum(h, w), tf.float32) * _CROP_FRACTION, tf.int32)
    return tf.stack([(h - side + 1) // 2, (w - side + 1) // 2, side, side])


def _resize_uint8(image, size):
    tf = _tf()
    image = tf.image.resize(image, (size, size), method="bilinear")
    return tf.cast(tf.clip_by_value(tf.round(image), 0.0, 255.0), tf.uint8)


def _color(image, seeds):
    tf = _tf()
    brightness, saturation, hue, contrast = seeds
    image = tf.cast(image, tf.float32) / 255.0
    image = tf.image.random_brightness(image, 32.0 / 255.0, seed=brightness)
    image = tf.image.random_saturation(image, 0.5, 1.5, seed=saturation)
    image = tf.image.random_hue(image, 0.2, seed=hue)
    image = tf.image.random_contrast(image, 0.5, 1.5, seed=contrast)
    return tf.clip_by_value(image, 0.0, 1.0) * 255.0


def decode(encoded, training: bool, size: int, style: str = "resnet", seed=None):
    """Encoded JPEG bytes (scalar string) -> uint8 [size, size, 3]."""
    tf = _tf()
    if style not in STYLES:
        raise ValueError(f"unknown preprocessing style {style!r}; accepted: {', '.join(STYLES)}")
    crop, flip, *color = op_seeds(seed, 6)
    if training:
        area = (0.05, 1.0) if style == "resnet" else (0.08, 1.0)
        window = _random_crop_window(encoded, area, crop)
    else:
        window = _center_crop_window(encoded)
    image = tf.image.decode_and_crop_jpeg(encoded, window, channels=3)
    if training:
        image = tf.image.random_flip_left_right(image, seed=flip)
        if style == "inception":
            image = tf.image.resize(_color(image, color), (size, size), method="bilinear")
            return tf.cast(tf.clip_by_value(tf.round(image), 0.0, 255.0), tf.uint8)
    return _resize_uint8(image, size)
