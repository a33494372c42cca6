"""The numeric precision of a run: one type where three tables mapped a bare string.

`--precision` stays a name (`fp32`, `bf16`, `fp16`) in flags, configs and
records; everything that needs more than the name asks `of(name)`:

- the Keras mixed-precision policy the model is built under (`policy`),
- the dtype its math runs in and the dtype its variables are kept in,
- whether the optimizer scales the loss (fp16's narrow exponent underflows
  small gradients; bf16 keeps fp32's exponent and needs no scaling),
- the row of the peak FLOP/s datasheet an MFU is measured against,
- whether training on a GPU compiles with XLA unless `--xla`/`--noxla` says.

No TensorFlow here: dtypes are their names, `tf.as_dtype(name)` turns one
into a TensorFlow dtype where a module already imports TensorFlow.
"""

from __future__ import annotations

import dataclasses

from tpubench.core import errors


@dataclasses.dataclass(frozen=True)
class Precision:
    """What one `--precision` value means for a model and its peak.

    Attributes:
      name: the flag and record value.
      policy: the Keras mixed-precision policy the model is built under.
      compute_dtype: the dtype layers compute in (matmuls, convolutions).
      variable_dtype: the dtype variables (weights, optimizer slots) are kept in.
      loss_scaling: whether training wraps the optimizer in dynamic loss scaling.
      peak_key: the precision row of the peak FLOP/s tables (hardware/peaks.py).
      gpu_xla: whether a GPU training run compiles its step with XLA when
        neither --xla nor --noxla is given.  True for bf16: without XLA,
        TensorFlow's graph optimizer fuses batch norm with the ReLU and the
        residual addition after it (and their gradients) into one cuDNN call
        for float16 only, so bf16 runs each as its own element-wise kernel
        (bench/step_graph.py counts them); XLA fuses them for any dtype.
    """

    name: str
    policy: str
    compute_dtype: str
    variable_dtype: str
    loss_scaling: bool
    peak_key: str
    tune_loss_tolerance: float
    gpu_xla: bool = False


FP32 = Precision("fp32", "float32", "float32", "float32", False, "fp32", 0.15)
BF16 = Precision("bf16", "mixed_bfloat16", "bfloat16", "float32", False, "bf16", 0.25, gpu_xla=True)
FP16 = Precision("fp16", "mixed_float16", "float16", "float32", True, "fp16", 0.20)

ALL = (FP32, BF16, FP16)  # their names are core/vocab.PRECISIONS, the --precision values
_BY_NAME = {p.name: p for p in ALL}


def of(name: str | Precision) -> Precision:
    """The Precision called NAME (a Precision passes through); a one-line error otherwise."""
    if isinstance(name, Precision):
        return name
    try:
        return _BY_NAME[name]
    except (KeyError, TypeError):
        raise errors.UsageError(
            f"--precision={name}: not a precision; accepted: {', '.join(_BY_NAME)}"
        ) from None
