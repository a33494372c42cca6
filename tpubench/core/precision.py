"""The numeric precision of a run: one typed value, parsed once where it enters.

`--precision` is text (`fp32`, `bf16`, `fp16`) only at the edge: the flag
(cli/configs.py), a study setup's or model's `precision:`, a sweep file's,
a record read back.  `parse` turns it into a `Precision` member once; past
the edge it travels typed and code compares members
(`p is Precision.BF16`).  Being a `StrEnum`, a member writes the same JSON
string and command-line value records and flags always held, so old
records read unchanged.  No other module spells the values.

A member's facts, for a model and its peak:

- the Keras mixed-precision policy the model is built under (`policy`),
- the dtype its math runs in and the dtype its variables are kept in,
- whether the optimizer scales the loss (fp16's narrow exponent underflows
  small gradients; bf16 keeps fp32's exponent and needs no scaling),
- the row of the peak FLOP/s datasheet an MFU is measured against,
- how far a tune trial's loss may stray from fp32's,
- whether training on a GPU compiles with XLA unless `--xla`/`--noxla` says.

No TensorFlow here: dtypes are their names, `tf.as_dtype(name)` turns one
into a TensorFlow dtype where a module already imports TensorFlow.
"""

from __future__ import annotations

import dataclasses
import enum

from tpubench.core import errors


@dataclasses.dataclass(frozen=True)
class _Facts:
    """What one precision means for a model and its peak.

    Attributes:
      policy: the Keras mixed-precision policy the model is built under.
      compute_dtype: the dtype layers compute in (matmuls, convolutions).
      variable_dtype: the dtype variables (weights, optimizer slots) are kept in.
      loss_scaling: whether training wraps the optimizer in dynamic loss scaling.
      tune_loss_tolerance: how far (relative) a tune trial's loss may be from fp32's.
      gpu_xla: whether a GPU training run compiles its step with XLA when
        neither --xla nor --noxla is given.  True for bf16: without XLA,
        TensorFlow's graph optimizer fuses batch norm with the ReLU and the
        residual addition after it (and their gradients) into one cuDNN call
        for float16 only, so bf16 runs each as its own element-wise kernel
        (bench/step_graph.py counts them); XLA fuses them for any dtype.
    """

    policy: str
    compute_dtype: str
    variable_dtype: str
    loss_scaling: bool
    tune_loss_tolerance: float
    gpu_xla: bool = False


class Precision(enum.StrEnum):
    """A `--precision` value; its str() and JSON are the flag's text."""

    FP32 = "fp32"
    BF16 = "bf16"
    FP16 = "fp16"

    @property
    def policy(self) -> str:
        return _FACTS[self].policy

    @property
    def compute_dtype(self) -> str:
        return _FACTS[self].compute_dtype

    @property
    def variable_dtype(self) -> str:
        return _FACTS[self].variable_dtype

    @property
    def loss_scaling(self) -> bool:
        return _FACTS[self].loss_scaling

    @property
    def tune_loss_tolerance(self) -> float:
        return _FACTS[self].tune_loss_tolerance

    @property
    def gpu_xla(self) -> bool:
        return _FACTS[self].gpu_xla


_FACTS = {
    Precision.FP32: _Facts("float32", "float32", "float32", False, 0.15),
    Precision.BF16: _Facts("mixed_bfloat16", "bfloat16", "float32", False, 0.25, gpu_xla=True),
    Precision.FP16: _Facts("mixed_float16", "float16", "float32", True, 0.20),
}

ALL = tuple(Precision)  # the --precision values, in the order help text lists them
DEFAULT = Precision.FP32  # --precision unset; a record or study setup that names none


def parse(value: object, where: str = "--precision") -> Precision:
    """VALUE (text a user or a file wrote; a member passes through) as a Precision.

    Raises:
      UsageError: one line naming WHERE, the bad value and the accepted ones,
        e.g. "--precision=fp8: not a precision; accepted: fp32, bf16, fp16".
    """
    if isinstance(value, str) and value in _BY_TEXT:
        return _BY_TEXT[value]
    raise errors.UsageError(f"{where}={value}: not a precision; accepted: {', '.join(ALL)}")


def recorded(value: object) -> Precision | None:
    """The precision a record says; DEFAULT when it names none; None for text no tpubench wrote."""
    if value is None or value == "":
        return DEFAULT
    return _BY_TEXT.get(value) if isinstance(value, str) else None


_BY_TEXT = {p.value: p for p in Precision}
