"""bench/step_graph.py: what a GPU runs unfused in bf16 and fused in fp16, read from the CPU graph.

The tiny ResNet-50 has 13 ReLUs (9 after a batch norm, 4 after a residual
addition) and 17 batch norms.  By grappler's remapper rules every one of
them fuses in fp16 (forward and backward) and none in bf16, in NHWC; in
NCHW nothing fuses (cuDNN's fused kernel is NHWC only).
"""

from __future__ import annotations

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import step_graph  # noqa: E402


@pytest.fixture(scope="module")
def counts():
    args = step_graph.parse_args(["--tiny", "--batch_size=4"])
    out = {p: step_graph.summarize(step_graph.traced_nodes(args, p)) for p in ("fp16", "bf16")}
    nchw = step_graph.parse_args(["--tiny", "--batch_size=4", "--data_format=channels_first"])
    out["fp16 nchw"] = step_graph.summarize(step_graph.traced_nodes(nchw, "fp16"))
    return out


def test_fp16_fuses_every_relu_and_residual_add_with_its_batch_norm(counts):
    fp16 = counts["fp16"]
    assert fp16["batch_norm"] == {
        "FusedBatchNormGradV3[float16]": 17,
        "FusedBatchNormV3[float16]": 17,
    }
    assert fp16["gpu_fusions"] == {"bn_relu": 9, "bn_add_relu": 4, "bn_grad_relu_grad": 13}
    assert fp16["gpu_unfused"] == {"Relu": 0, "ReluGrad": 0, "AddV2 (residual)": 0}


def test_bf16_runs_them_all_as_separate_kernels(counts):
    bf16 = counts["bf16"]
    assert bf16["elementwise"]["Relu[bfloat16]"] == 13
    assert bf16["gpu_fusions"] == {"bn_relu": 0, "bn_add_relu": 0, "bn_grad_relu_grad": 0}
    assert bf16["gpu_unfused"] == {"Relu": 13, "ReluGrad": 13, "AddV2 (residual)": 4}
    # Casts and batch norms are the same in number: not where bf16 and fp16 differ.
    for key in ("Cast", "FusedBatchNormV3"):
        n16 = sum(
            v
            for k, v in {**counts["fp16"]["elementwise"], **counts["fp16"]["batch_norm"]}.items()
            if k.startswith(key + "[float16")
        )
        nb = sum(
            v
            for k, v in {**bf16["elementwise"], **bf16["batch_norm"]}.items()
            if k.startswith(key + "[bfloat16")
        )
        assert n16 == nb > 0, key


def test_nchw_fuses_nothing(counts):
    assert counts["fp16 nchw"]["gpu_fusions"]["bn_relu"] == 0
