"""Whether this host's TensorFlow can run channels-first (NCHW) image ops on the CPU.

TensorFlow's own CPU kernels for convolutions, pooling and their gradients
take NHWC only ("The Conv2D op currently only supports the NHWC tensor
format on the CPU"); NCHW runs on the CPU only through its oneDNN kernels.
TensorFlow turns oneDNN on by default on x86 CPUs with AVX-512 VNNI, BF16
or AMX and leaves it off elsewhere (many AMD EPYC and older Intel parts),
unless `TF_ENABLE_ONEDNN_OPTS` says otherwise.  Rather than mirror that rule,
a tiny NCHW training step (convolution, max pooling, fused batch norm and
their gradients) is run once and the answer cached per CPU, instruction
set, TensorFlow version and `TF_ENABLE_ONEDNN_OPTS` value in
`$TPUBENCH_CACHE/cpu_layouts.json`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os

from tpubench.storage import cache as cache_lib

CACHE_FILE = "cpu_layouts.json"
ONEDNN_ENV = "TF_ENABLE_ONEDNN_OPTS"


@dataclasses.dataclass(frozen=True)
class Nchw:
    """The answer for this host: OK, and if not, the kernel's own reason."""

    ok: bool
    reason: str = ""  # the first line of TensorFlow's error when not OK
    onednn: bool | None = None  # whether TensorFlow's oneDNN kernels are on
    cached: bool = False

    def refusal(self, what: str) -> str:
        """The one line that refuses WHAT (a flag and its value) on this CPU."""
        onednn = "off" if self.onednn is False else "unknown"
        return (
            f"{what}: this CPU's TensorFlow runs image ops channels-last only (its oneDNN "
            f"kernels are {onednn}; {self.reason}); accepted: --data_format=auto or "
            f"channels_last, or set {ONEDNN_ENV}=1 to try TensorFlow's oneDNN kernels here"
        )


def _key(tf_version: str) -> str:
    from tpubench.hardware import probe

    cpu = probe.cpu()
    raw = "|".join(
        [
            str(cpu.get("brand") or ""),
            ",".join(sorted(cpu.get("isa") or ())),
            tf_version,
            os.environ.get(ONEDNN_ENV, "<unset>"),
        ]
    )
    return hashlib.sha1(raw.encode()).hexdigest()[:16]


def nchw() -> Nchw:
    """Whether a channels-first training step runs on this CPU (probed once, then cached).

    Loads TensorFlow: callers are the train and infer runs (which have it
    loaded already) and tune, before it plans its layout axis.
    """
    import tensorflow as tf

    key = _key(tf.__version__)
    cache = cache_lib.load_json(CACHE_FILE)
    entry = cache.get(key)
    if isinstance(entry, dict) and isinstance(entry.get("ok"), bool):
        return Nchw(entry["ok"], str(entry.get("reason", "")), entry.get("onednn"), True)
    result = _probe(tf)
    entry = dataclasses.asdict(result) | {"tensorflow": tf.__version__}
    entry.pop("cached")
    cache[key] = entry
    cache_lib.store_json(CACHE_FILE, cache)
    return result


def onednn_on() -> bool | None:
    """Whether TensorFlow's oneDNN kernels are on in this process (None: cannot tell)."""
    try:
        from tensorflow.python.util import _pywrap_util_port  # noqa: PLC2701

        return bool(_pywrap_util_port.IsMklEnabled())
    except (ImportError, AttributeError):  # a build without the helper: unknown
        return None


def _probe(tf) -> Nchw:
    """Runs one tiny NCHW forward and backward step on the CPU (about 0.1 s)."""
    with tf.device("/CPU:0"):
        x = tf.random.stateless_normal((2, 2, 6, 6), seed=(1, 2))
        kernel = tf.Variable(tf.random.stateless_normal((3, 3, 2, 4), seed=(3, 4)))
        scale, offset = tf.ones((4,)), tf.zeros((4,))

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                y = tf.nn.conv2d(x, kernel, 1, "SAME", data_format="NCHW")
                y, _, _ = tf.compat.v1.nn.fused_batch_norm(
                    y, scale, offset, data_format="NCHW", is_training=True
                )
                y = tf.nn.max_pool2d(y, 2, 2, "VALID", data_format="NCHW")
                loss = tf.reduce_sum(y)
            return tape.gradient(loss, kernel)

        try:
            step()
        except (tf.errors.InvalidArgumentError, tf.errors.UnimplementedError) as e:
            return Nchw(False, _first_line(e), onednn_on())
    return Nchw(True, "", onednn_on())


def _first_line(error) -> str:
    """The kernel's own sentence: TensorFlow wraps it in 'Graph execution error' lines."""
    text = getattr(error, "message", None) or str(error)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for line in lines:
        if "NHWC" in line or "NCHW" in line or "format" in line:
            return line.rstrip(".")[:200]
    return (lines[-1] if lines else type(error).__name__)[:200]
