"""How a run's convolutions are computed: 1x1 weight gradients (`--pointwise_weight_grad`),
the batch norms after them in training (`--batch_norm_kernel`) and, in inference, batch
norms folded into convolutions (`--fold_batch_norm`).

Models never name a device: they build `layers.Conv2D` and
`batch_norm.FusedBatchNorm`, and this module chooses, from the flags and the
accelerator the run placed on, whether a channels-last 1x1 convolution's
weight gradient is one matrix product (`layers.pointwise_weight_grad`) and
whether an inference session folds batch norms into the convolutions before
them (`folding.fold_batch_norms`).  The weights are the same either way; only
the kernels that compute the results change.
"""

from __future__ import annotations

from tpubench.core import errors


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


def own_batch_norm(requested: str, placement, xla: bool) -> tuple[bool, str | None]:
    """Whether training batch norms run through tpubench's CPU kernel (model/cpu_ops.py).

    auto: on a CPU, without XLA (which cannot compile an op it does not
    know) and without parameter servers (whose worker processes serve a
    graph they did not build, so they would lack the op), when the kernel
    builds here; otherwise TensorFlow's, with a note (returned with the
    choice, for the record and the console) saying why it did not build.
    With batch norm, residual addition and ReLU in one pass each way,
    ResNet-50 trains faster in both precisions, more in bf16 (docs/cpu.md).
    The same choice runs fp32 Adadelta updates, and RMSprop's without
    momentum, through tpubench's kernels (model/optim.py), which have the
    same limits.
    tpubench: the same places, and an error naming what stands in the way.
    """
    if requested == "tensorflow":
        return False, None
    why = None
    if placement.accelerator != "cpu":
        why = f"it is a CPU kernel and this run is on {placement.accelerator}"
    elif xla:
        why = "XLA cannot compile it: add --noxla"
    elif placement.strategy == "parameter_server":
        why = "parameter servers' workers would run a graph with an op they never loaded"
    if why is None:
        from tpubench.model import cpu_ops
        from tpubench.run import session

        # (auto only: an explicit request that fails says so in its one error line)
        first = requested == "auto" and not cpu_ops.library_path().exists()
        if first and placement.is_chief:
            session.say("building tpubench's CPU kernels (once per machine, 10-30 s)")
        ok, failure = cpu_ops.available()
        if ok:
            return True, None
        if requested == "auto":
            return False, f"batch norm: TensorFlow's kernels ({failure})"
        why = failure
    if requested == "tpubench":
        raise errors.UsageError(
            f"--batch_norm_kernel=tpubench: {why}; accepted here: auto, tensorflow"
        )
    return False, None
