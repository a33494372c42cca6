"""AMD's ZenDNN plug-in against TensorFlow's oneDNN kernels, side by side in one run.

The same model, precision and batch run in alternating rounds (bench/cpu_bf16.py
does the timing): `oneDNN` in this environment with `--cpu_kernels=onednn`, and
`ZenDNN` with `--cpu_kernels=zendnn` in the environment `make zendnn` builds
(.venv-zendnn: the plug-in loads into every TensorFlow process of the
environment it is installed in, so it has one of its own).  Each run's record
names the kernels it ran in its software section (`cpu_kernels`).

    .venv/bin/python bench/cpu_zendnn.py                      # ResNet-50 inference, fp32
    .venv/bin/python bench/cpu_zendnn.py --mode=train --rounds=3
    .venv/bin/python bench/cpu_zendnn.py --precision=bf16 --mode=infer

The line to read is `ZenDNN/oneDNN`: ZenDNN's rate over oneDNN's, paired by round.
Measure on a quiet machine: each run prints the other processes' share of the CPUs.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import cpu_bf16  # noqa: E402 - the timing loop, from beside this script


def _args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mode", choices=("train", "infer"), default="infer")
    p.add_argument("--model", default="resnet50")
    p.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--zendnn_python", default=str(ROOT / ".venv-zendnn" / "bin" / "python"))
    return p.parse_known_args(argv)


def main(argv=None) -> int:
    args, rest = _args(argv)
    if not os.access(args.zendnn_python, os.X_OK):
        sys.exit(
            f"bench/cpu_zendnn.py: no ZenDNN environment at {args.zendnn_python}: "
            "build it with `make zendnn`"
        )
    # oneDNN is cpu_bf16's baseline contender, relabelled; ZenDNN a variant.
    prec = f"--precision={args.precision}"
    return cpu_bf16.main(
        [
            f"--mode={args.mode}",
            f"--model={args.model}",
            f"--rounds={args.rounds}",
            "--no_bf16",
            f"--baseline=oneDNN:{prec} --cpu_kernels=onednn",
            f"--variant=ZenDNN:{prec} --cpu_kernels=zendnn::{args.zendnn_python}",
            *rest,
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
