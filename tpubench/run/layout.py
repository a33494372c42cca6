"""Which image layout a run's network is built in (`--data_format`).

Models never name a device: a network that can run channels-first declares
it (`ModelSpec.channels_first`) and this module chooses, from the flag and
the accelerator the run placed on, the layout it is built in
(`layers.image_layout`).  The weights are the same in either layout, so a
checkpoint trained in one restores in the other.
"""

from __future__ import annotations

from tpubench.core import errors
from tpubench.core.precision import Precision


def check(requested: str, spec) -> None:
    """Refuses, before anything is built, a layout SPEC's network cannot take."""
    if requested == "channels_first" and not spec.channels_first:
        from tpubench.model import registry

        able = ", ".join(n for n in registry.names() if registry.get(n).channels_first)
        raise errors.UsageError(
            f"--data_format=channels_first: {spec.name} is built channels-last only; "
            f"accepted: auto or channels_last (channels-first models: {able})"
        )


def resolve(requested: str, spec, accelerator: str, precision: Precision) -> str:
    """The layout SPEC's network is built in.

    auto: channels-first for fp32 on a GPU, where cuDNN's float32
    convolutions favour NCHW (tf_cnn_benchmarks' GPU default, and the layout
    TensorFlow's own graph optimizer converts float32 GPU convolutions to);
    channels-last otherwise: tensor cores take fp16 and bf16 in NHWC, and
    CPUs (oneDNN) and TPUs favour NHWC.  Models that cannot choose are
    channels-last.
    """
    check(requested, spec)
    if not spec.channels_first:
        return "channels_last"
    if requested == "auto":
        fp32_gpu = accelerator == "gpu" and precision is Precision.FP32
        return "channels_first" if fp32_gpu else "channels_last"
    return requested


def check_host(data_format: str, accelerator: str, requested: str) -> None:
    """Refuses a channels-first network on a CPU whose TensorFlow cannot run NCHW.

    Only an explicit --data_format=channels_first reaches here on a CPU
    (auto is channels-last there); the refusal comes before the model is
    built, in one line that says why and what to pass instead.
    """
    if data_format != "channels_first" or accelerator != "cpu":
        return
    from tpubench.hardware import cpu_layout

    answer = cpu_layout.nchw()
    if not answer.ok:
        raise errors.UsageError(answer.refusal(f"--data_format={requested}"))
