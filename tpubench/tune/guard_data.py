"""Which real data the numerics guard trains on, for any model.

Speed trials read synthetic batches, which a net memorises (any loss falls
to ~0, in fp32 and in a broken bf16 alike), so the guard's own runs read
real data, chosen in this order:

1. the user's: `--data_dir` or `--dataset`;
2. the model's embedded dataset: the digits for the MNIST models, the
   pydoc texts for every text model;
3. an image model with neither (the ImageNet CNNs, cifar10_cnn): the
   embedded digits.  A model with an `image_size` param takes square RGB
   images of that size, and its preprocessing makes the 28x28 grey digits
   RGB and resizes them (models/_imagenet.py, pipeline.scale_rgb_image);
   the run fits its head to the digits' 10 classes (data/manifest.py), as
   any run on a dataset of other classes does.  Not the model's task, but
   real images with learnable labels: fp32 learns them, and a setting that
   trains differently shows it in its loss.

Otherwise the guard compares the speed trials' losses on synthetic data
and says the check is weak.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class GuardData:
    flags: dict  # what a numerics check adds to a trial's flags ({}: checks on the trials)
    text: str  # the data, for the console and the summary (`guard_data`)


def choose(spec, params: dict, own_params: dict, data, synthetic: bool) -> GuardData:
    """The guard's data for model SPEC with resolved PARAMS (OWN_PARAMS: the user's
    --params), the trials' DATA config, and whether the trials read SYNTHETIC batches."""
    from tpubench.data import digits, embedded

    if not synthetic:
        return GuardData({}, "the trials' own data (not synthetic)")
    if data.data_dir or data.dataset:
        return GuardData(
            {"use_synthetic_data": False}, f"real data ({data.data_dir or data.dataset})"
        )
    offline = next((d for d in spec.datasets if d in embedded.NAMES), None)
    if offline:
        return GuardData(
            {"use_synthetic_data": False}, f"real data (the embedded {offline} dataset)"
        )
    size = params.get("image_size")
    classes = own_params.get("num_classes")
    if size and classes is not None and int(classes) < digits.NUM_CLASSES:
        why = f"--params num_classes={classes} is below the embedded digits' 10 classes"
        return _weak(why)
    if size:
        path = embedded.ensure_prepared(digits.NAME)
        h, w, c = digits.IMAGE_SHAPE
        text = (
            f"real data (the embedded digits, {h}x{w}x{c} grey, made RGB and resized to "
            f"{size}x{size}x3 by the model; {digits.NUM_CLASSES} classes)"
        )
        return GuardData({"use_synthetic_data": False, "data_dir": path}, text)
    return _weak("the model has no offline dataset and does not take images")


def _weak(why: str) -> GuardData:
    return GuardData({}, f"synthetic data: {why} (a weak check: pass --data_dir)")
