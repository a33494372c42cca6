"""Which CPU kernels TensorFlow runs: its own (oneDNN) or AMD's ZenDNN plug-in.

TensorFlow's x86 wheels carry oneDNN kernels, on by default on CPUs with
AVX-512 VNNI, AVX-512 BF16 or AMX and switched by `TF_ENABLE_ONEDNN_OPTS`.
AMD publishes a TensorFlow plug-in for EPYC CPUs, `zentf` (ZenDNN, on PyPI
for each TensorFlow release), loaded from `site-packages/tensorflow-plugins`
by every TensorFlow process of the environment it is installed in, and
switched by `TF_ENABLE_ZENDNN_OPTS`.  Both variables are read when
TensorFlow loads, so `--cpu_kernels` is applied before that (`apply`).

  auto    leave both variables as the environment has them (TensorFlow's default)
  onednn  TensorFlow's oneDNN kernels on, ZenDNN's off
  zendnn  ZenDNN's on and oneDNN's off, as AMD's documentation sets them;
          refused in one line where `zentf` is not installed
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys

from tpubench.core import errors
from tpubench.hardware.cpu_layout import ONEDNN_ENV

CHOICES = ("auto", "onednn", "zendnn")
ZENDNN_ENV = "TF_ENABLE_ZENDNN_OPTS"
_ENV = {"onednn": {ONEDNN_ENV: "1", ZENDNN_ENV: "0"}, "zendnn": {ONEDNN_ENV: "0", ZENDNN_ENV: "1"}}
INSTALL = (
    "`make zendnn` (a second environment, .venv-zendnn: the plug-in loads into every "
    "TensorFlow process of the environment it is in)"
)


def zentf_version() -> str | None:
    """The installed zentf's version, or None where this environment has none."""
    if importlib.util.find_spec("zentf") is None:
        return None
    try:
        return importlib.metadata.version("zentf")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def matching_zentf() -> str:
    """The zentf release for this environment's TensorFlow, as pip spells it: 2.21.* for 2.21.x.

    AMD publishes one zentf per TensorFlow release; `make zendnn` installs this one.
    """
    for dist in ("tensorflow-cpu", "tensorflow", "tensorflow-tpu"):
        try:
            major, minor = importlib.metadata.version(dist).split(".")[:2]
        except importlib.metadata.PackageNotFoundError:
            continue
        return f"{major}.{minor}.*"
    raise errors.UsageError("no TensorFlow installed here: install tpubench's cpu extra first")


def check(choice: str) -> None:
    """Refuses --cpu_kernels=CHOICE in one line where it cannot take effect (before TensorFlow)."""
    if choice not in CHOICES:
        raise errors.unknown("--cpu_kernels value", choice, CHOICES)
    if choice == "zendnn" and zentf_version() is None:
        raise errors.UsageError(
            "--cpu_kernels=zendnn: AMD's ZenDNN plug-in (zentf) is not installed in this "
            f"environment ({sys.prefix}); install it with {INSTALL}, or use "
            "--cpu_kernels=onednn"
        )


def apply(choice: str) -> None:
    """Sets the variables CHOICE needs; before TensorFlow loads, where they are read."""
    check(choice)
    if choice in _ENV and "tensorflow" in sys.modules:
        raise errors.UsageError(
            f"--cpu_kernels={choice}: TensorFlow is already loaded in this process; "
            "the choice must be made before it starts"
        )
    os.environ.update(_ENV.get(choice, {}))


def recorded() -> str:
    """What the record's software section says: which kernels, and the plug-in's version."""
    version = zentf_version()
    zendnn = os.environ.get(ZENDNN_ENV)
    if version is None:
        return "oneDNN/Eigen (TensorFlow's own; no ZenDNN plug-in)"
    state = "on" if zendnn == "1" else "off"
    return f"ZenDNN {state} ({ZENDNN_ENV}={zendnn or '<unset>'}; zentf {version} loaded)"
