"""resnet152: standard ResNet-152 (v1.5) for ImageNet-shaped 224x224 input.

The ResNet-50 network of `resnet50.py` with bottleneck blocks [3, 8, 36, 3]
(He et al. 2015, table 1): same v1.5 stride placement, bias-free
convolutions with fused batch norm, SGD with momentum 0.9 at 0.1 x
batch/256.  60,192,808 trainable parameters, the published count
(torchvision's resnet152; Keras Applications' ResNet152 reports 60,419,944
because its convolutions carry biases and it counts batch-norm statistics).

    tpubench train --model=resnet152 --use_synthetic_data --batch_size=32 \
        --train_steps=6 --steps_per_loop=1

Measured on this machine (2 vCPUs, Intel Xeon @ 2.50GHz, shared with other
jobs, so lower bounds; docs/models.md): 0.68 images/s training at batch 32
(synthetic data; 5 timed steps after 1 warm-up step), $49.58 per ImageNet
epoch on a GCP n1-standard-2 at the on-demand price; 69.5 GFLOPs per image
per training step (23.2 forward).
"""

from tpubench.model import model_api, registry
from tpubench_models import _imagenet, resnet50

SPEC = registry.register(
    model_api.ModelSpec(
        name="resnet152",
        description="ResNet-152 v1.5, 224x224 ImageNet shape, fused batch norm",
        build_model=resnet50.build_model,
        build_optimizer=_imagenet.momentum_sgd,
        model_fn=model_api.classification_model_fn,
        input_fn=_imagenet.input_fn(),
        element_spec=_imagenet.element_spec,
        examples_per_epoch=_imagenet.EXAMPLES_PER_EPOCH,
        datasets=_imagenet.DATASETS,
        default_params=dict(resnet50.SPEC.default_params, blocks=(3, 8, 36, 3)),
        # Two blocks in the deep stage keep a trace of the 36-block stage in the tiny net.
        tiny_params={"image_size": 32, "width": 4, "blocks": (1, 1, 2, 1), "num_classes": 10},
        channels_first=True,
        default_batch_size=32,
    )
)
