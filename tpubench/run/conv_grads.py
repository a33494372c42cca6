"""How a run's convolutions are computed: 1x1 weight gradients (`--pointwise_weight_grad`)
and, in inference, batch norms folded into convolutions (`--fold_batch_norm`).

Models never name a device: they build `layers.Conv2D` and
`layers.FusedBatchNorm`, and this module chooses, from the flags and the
accelerator the run placed on, whether a channels-last 1x1 convolution's
weight gradient is one matrix product (`layers.pointwise_weight_grad`) and
whether an inference session folds batch norms into the convolutions before
them (`layers.fold_batch_norms`).  The weights are the same either way; only
the kernels that compute the results change.
"""

from __future__ import annotations


def as_matmul(requested: str, accelerator: str) -> bool:
    """Whether 1x1 weight gradients are matrix products.

    auto: on a CPU, yes.  oneDNN's weight-gradient convolution reads NHWC
    activations at 100-350 GFLOP/s for these shapes in bf16 on an AMX CPU,
    where the same product as a `MatMul` runs at 600-1,000 (docs/cpu.md); in
    fp32 the two are level.  On GPUs and TPUs the framework's own
    convolution gradient stays (not measured against the product there).
    """
    return _chosen(requested, accelerator, "matmul")


def describe(matmul: bool) -> str:
    """The record's `model.pointwise_weight_grad`."""
    return "matmul" if matmul else "convolution"


def folds(requested: str, accelerator: str) -> bool:
    """Whether an inference session folds batch norms into their convolutions.

    auto: on a CPU, yes.  TensorFlow's graph optimizer fuses an inference
    batch norm (and the ReLU after it) into the oneDNN convolution before it
    for fp32, but not for bf16, where each batch norm then runs as its own
    pass over the activations: bf16 ResNet-50 inference ran at a third of its
    folded speed (docs/cpu.md).  On GPUs and TPUs the framework's own graph
    stays (not measured there).
    """
    return _chosen(requested, accelerator, "on")


def _chosen(requested: str, accelerator: str, yes: str) -> bool:
    """Both flags' rule: auto means on a CPU only; otherwise whether REQUESTED is YES."""
    if requested == "auto":
        return accelerator == "cpu"
    return requested == yes
