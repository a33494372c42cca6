"""tpubench's own CPU kernels: built from source on first use, loaded into TensorFlow.

From two sources beside this file, into one library.  batch_norm_cpu.cc
registers `TpubenchBatchNormTrain` (batch_norm_forward.h) and its gradient
(batch_norm_backward.h), a training batch norm for channels-last tensors
that also applies the residual addition and the ReLU after it, in two
passes over the activations each way; and (grads_cpu.h) `TpubenchAdd`,
the sum of a residual block's two branch gradients (`fork`), and
`TpubenchBiasReluGrad`, the gradient of a convolution's or dense layer's
bias and ReLU in one pass (`bias_relu`).  TensorFlow 2.21 has no such
kernel on a CPU (its fused batch norm with a side input and activation is
for GPUs only), and its own element-wise kernels are scalar code for
bfloat16 (docs/cpu.md).  The kernels sit in headers by concern and
compile as one translation unit, so TensorFlow's headers are parsed once
per source.
optim_cpu.cc: `TpubenchApplyAdadelta` and `TpubenchApplyRmsprop`, Adadelta's
update and RMSprop's without momentum, each in one pass over the
variable's arrays, where TensorFlow's kernels make several
(`apply_adadelta`, `apply_rmsprop`); they take bf16 gradients too, and
may write the new weights' bf16 copy (weight_copy.py).

The library is compiled once per source, TensorFlow build and CPU with the
C++ compiler the machine has (`$CXX`, else `c++`), into the per-user
cache ($TPUBENCH_CACHE, else ~/.cache/tpubench), and reused from there.
`available()` says whether it could be built; `load()` raises
`KernelUnavailable` with the compiler's first error line.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pathlib
import platform
import shlex
import subprocess
import tempfile

import tensorflow as tf

from tpubench.storage import cache

SOURCES = tuple(
    pathlib.Path(__file__).with_name(name) for name in ("batch_norm_cpu.cc", "optim_cpu.cc")
)
# Every header beside them (element access, blocks of rows, the kernels
# batch_norm_cpu.cc registers): part of the library's key.
HEADERS = tuple(sorted(pathlib.Path(__file__).parent.glob("*.h")))
NAMES = ", ".join(s.name for s in SOURCES)


class KernelUnavailable(RuntimeError):
    """The kernel library could not be built or loaded here."""


def cache_dir() -> pathlib.Path:
    """Where built libraries live: kernels/ in the per-user cache (storage/cache.py)."""
    return pathlib.Path(cache.path("kernels"))


def _cpu_flags() -> str:
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return line
    except OSError:
        pass
    return platform.processor()


# Tried in order until one builds.  -march=native vectorises for this CPU
# (the library is built per CPU); Eigen's headers in TensorFlow 2.21 do not
# compile with AVX512-FP16 on, hence its -mno-; a compiler that knows
# neither flag gets plain -O3.
TARGETS = (("-march=native", "-mno-avx512fp16"), ("-march=native",), ())


def _compile_command(cxx: str, source: pathlib.Path, out: pathlib.Path, target) -> list[str]:
    return [
        *shlex.split(cxx),
        "-c",
        "-fPIC",
        "-O3",
        # The backward pass recomputes the forward's a x + b bit for bit.
        "-ffp-contract=off",
        # sqrt without errno: the compiler may then vectorise it.
        "-fno-math-errno",
        *target,
        *tf.sysconfig.get_compile_flags(),
        str(source),
        "-o",
        str(out),
    ]


def _compile(cxx: str, out: pathlib.Path, target) -> subprocess.CompletedProcess:
    """Compiles every source at once (one compiler each), then links them into OUT."""
    objects = [out.with_name(f"{out.stem}.{s.stem}.o") for s in SOURCES]
    try:
        procs = [
            subprocess.Popen(
                _compile_command(cxx, s, o, target),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for s, o in zip(SOURCES, objects, strict=True)
        ]
        outputs = [proc.communicate() for proc in procs]  # every compiler waited for
        for proc, (stdout, stderr) in zip(procs, outputs, strict=True):
            if proc.returncode:
                return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
        link = [*shlex.split(cxx), "-shared", *map(str, objects), "-o", str(out)]
        link += tf.sysconfig.get_link_flags()
        return subprocess.run(link, capture_output=True, text=True)
    finally:
        for o in objects:
            if o.exists():
                o.unlink()


def library_path() -> pathlib.Path:
    """The built library's path for these sources, TensorFlow, compiler and CPU."""
    cxx = os.environ.get("CXX", "c++")
    key = hashlib.sha256()
    sources = [s.read_bytes() for s in (*SOURCES, *HEADERS)]
    for part in (*sources, tf.__version__.encode(), cxx.encode(), _cpu_flags().encode()):
        key.update(part)
        key.update(b"\0")
    return cache_dir() / f"tpubench_ops_{key.hexdigest()[:16]}.so"


def _build(out: pathlib.Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    # Built beside its final name and renamed: a concurrent process either
    # finds the whole library or builds its own copy, never half of one.
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=out.parent)
    os.close(fd)
    try:
        cxx = os.environ.get("CXX", "c++")
        for target in TARGETS:
            try:
                done = _compile(cxx, pathlib.Path(tmp), target)
            except OSError as e:
                raise KernelUnavailable(f"cannot run the C++ compiler {cxx!r}: {e.strerror}") from e
            if done.returncode == 0:
                os.replace(tmp, out)
                return
        lines = [ln.strip() for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
        errors = [ln for ln in lines if "error:" in ln] or lines
        why = errors[0] if errors else f"exit status {done.returncode}"
        raise KernelUnavailable(f"building {NAMES} with {cxx!r} failed: {why}")
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@functools.cache
def load():
    """The loaded op library (built first if this machine has none yet)."""
    path = library_path()
    if not path.exists():
        _build(path)
    try:
        lib = tf.load_op_library(str(path))
    except (tf.errors.NotFoundError, OSError) as e:
        raise KernelUnavailable(f"loading {path.name} failed: {e}") from e
    _register_gradient()
    return lib


def available() -> tuple[bool, str]:
    """(True, "") when the kernels load here, else (False, why)."""
    try:
        load()
    except KernelUnavailable as e:
        return False, str(e)
    return True, ""


def _register_gradient():
    @tf.RegisterGradient("TpubenchBatchNormTrain")
    def _grad(op, dy, *_):
        relu, has_side = op.get_attr("relu"), op.get_attr("has_side")
        x, scale, offset, side = op.inputs
        y, mean, _variance, inv = op.outputs
        dx, dscale, doffset, dside = load().tpubench_batch_norm_train_grad(
            dy=dy,
            x=x,
            # The ReLU's mask: recomputed from x, or read from y after a side input.
            y=y if relu and has_side else tf.zeros([0], x.dtype),
            scale=scale,
            offset=offset,
            mean=mean,
            inv_std=inv,
            relu=relu,
            has_side=has_side,
        )
        return dx, dscale, doffset, dside if has_side else tf.zeros_like(side)


def batch_norm_train(x, scale, offset, side=None, *, epsilon: float, relu: bool):
    """y = relu?(batch_norm(x) + side?) over the last axis, with the batch statistics.

    Returns (y, mean, variance): the biased batch variance, the one y was
    normalised with.  Differentiable in x, scale, offset and side.
    """
    ops = load()
    y, mean, variance, _ = ops.tpubench_batch_norm_train(
        x=x,
        scale=scale,
        offset=offset,
        side=side if side is not None else tf.zeros([0], x.dtype),
        epsilon=epsilon,
        relu=relu,
        has_side=side is not None,
    )
    return y, mean, variance


def fork(x):
    """Two uses of X (a residual block's input: its convolutions and its shortcut).

    Differentiable; the two branches' gradients are summed by tpubench's
    add kernel instead of TensorFlow's `AddN`, which converts bf16 element
    by element on a CPU.
    """
    ops = load()

    @tf.custom_gradient
    def fork2(x):
        def grad(d1, d2):
            return ops.tpubench_add(a=d1, b=d2)

        return (tf.identity(x), tf.identity(x)), grad

    return fork2(x)


def bias_relu(z, bias):
    """relu(z + bias), BIAS added over the last axis; differentiable in Z and BIAS.

    The forward pass is TensorFlow's `BiasAdd` and `Relu`, which its graph
    optimizer fuses into the convolution or product before them; the
    backward pass is tpubench's one-pass kernel where TensorFlow runs
    `ReluGrad` then `BiasAddGrad`.
    """
    ops = load()

    @tf.custom_gradient
    def relu_of_sum(z, bias):
        y = tf.nn.relu(tf.nn.bias_add(z, bias))

        def grad(dy):
            return tuple(ops.tpubench_bias_relu_grad(dy=dy, y=y))

        return y, grad

    return relu_of_sum(z, bias)


def apply_adadelta(var, accum, accum_update, grad, lr, rho, epsilon, copy=None):
    """Adadelta's update of fp32 resource variables VAR, ACCUM, ACCUM_UPDATE, in one pass.

    TensorFlow's `ResourceApplyAdadelta` arithmetic (tpubench/model/optim.py)
    with each element read and written once: on a CPU, about 1.4x as fast.
    GRAD: fp32 or bf16.  COPY: a bf16 variable of VAR's shape that also
    receives the new weights, rounded as `tf.cast` rounds (weight_copy.py).
    """
    return load().tpubench_apply_adadelta(
        var=var.handle,
        accum=accum.handle,
        accum_update=accum_update.handle,
        grad=grad,
        lr=lr,
        rho=rho,
        epsilon=epsilon,
        copy=_copies(copy),
    )


def apply_rmsprop(var, ms, grad, lr, rho, epsilon, copy=None):
    """RMSprop's update without momentum of fp32 resource variables VAR and MS, in one pass.

    Keras' arithmetic (ms = rho ms + (1 - rho) grad^2, var -= lr grad /
    sqrt(ms + eps)); TensorFlow's `ResourceApplyRMSProp` also reads and
    writes a momentum buffer, which without momentum holds nothing.  GRAD
    and COPY as in `apply_adadelta`.
    """
    return load().tpubench_apply_rmsprop(
        var=var.handle, ms=ms.handle, grad=grad, lr=lr, rho=rho, epsilon=epsilon, copy=_copies(copy)
    )


def _copies(copy) -> list:
    return [] if copy is None else [copy.handle]
