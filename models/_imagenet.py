"""What the ImageNet-shaped classifiers share: data, preprocessing, optimizers.

Not a model (the leading underscore keeps the registry from importing it as
one).  Every ImageNet classifier declares dataset "imagenet", takes square
RGB images of `params["image_size"]` and reads prepared records through
`pipeline.image_classification_input_fn`: JPEG records are decoded with the
standard ResNet or Inception crop (`tpubench.data.image_preprocessing`) at
that size, raw-image records are resized to it; then each batch is
normalised the way the model was trained.
"""

import tensorflow as tf

from tpubench.data import pipeline
from tpubench.model import optim

# "imagenet2012" is the name `tpubench data prepare --dataset=tfds:imagenet2012` gives it.
DATASETS = ("imagenet", "imagenet2012")
# ILSVRC-2012: 1,281,167 training images, 50,000 validation images.
EXAMPLES_PER_EPOCH = {"train": 1_281_167, "eval": 50_000}

# Per-channel ImageNet mean and standard deviation on the 0..255 scale.
_MEAN = (123.68, 116.78, 103.94)
_STD = (58.40, 57.12, 57.38)


def element_spec(params):
    size = params["image_size"]
    return tf.TensorSpec([size, size, 3], tf.float32), tf.TensorSpec([], tf.int32)


def _rgb_resized(image, params):
    image = tf.cast(image, tf.float32)
    if image.shape[-1] == 1:
        image = tf.image.grayscale_to_rgb(image)
    size = params["image_size"]
    if tuple(image.shape[1:3]) == (size, size):
        return image  # JPEG records arrive decoded at the model's size
    return tf.image.resize(image, (size, size))


def mean_std_preprocess(image, label, mode, params):
    """Raw-record batch -> the model's size, ImageNet mean/std (ResNet, VGG, AlexNet)."""
    del mode
    return (_rgb_resized(image, params) - tf.constant(_MEAN)) / tf.constant(_STD), label


def inception_preprocess(image, label, mode, params):
    """Raw-record batch -> the model's size, scaled to [-1, 1] (Inception's convention)."""
    del mode
    return _rgb_resized(image, params) / 127.5 - 1.0, label


def input_fn(preprocess=mean_std_preprocess, jpeg_style="resnet"):
    """The input_fn over prepared JPEG (decoded in JPEG_STYLE) or raw-image records."""
    return pipeline.image_classification_input_fn(preprocess, jpeg_style=jpeg_style)


def scaled(filters, params):
    """A layer width times params["width_multiplier"] (tiny variants shrink every layer)."""
    return max(1, int(round(filters * params["width_multiplier"])))


def l2(params):
    """Weight decay as a regularizer (None when 0), summed into aux_loss: wd/2 * sum(w**2)."""
    wd = params["weight_decay"]
    return optim.L2(wd / 2) if wd else None


def momentum_sgd(params):
    """SGD with momentum 0.9, learning rate base x global batch / 256 (linear scaling).

    Keras 3's SGD arithmetic in one fused kernel per variable (tpubench.model.optim).
    """
    lr = params["base_learning_rate"] * params["global_batch_size"] / 256
    return optim.MomentumSGD(learning_rate=lr, momentum=0.9)
