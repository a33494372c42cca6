"""What only a GPU can show; every test skips with its reason where no GPU is visible.

Run on a GPU machine with `pytest -q tests/hardware/test_gpu.py` (docs/gpu.md).  The
rest of the suite hides the GPU (tests/conftest.py), so these tests hand the
original CUDA_VISIBLE_DEVICES back to the CLIs they start.
"""

from __future__ import annotations

import functools
import math
import os
import shutil
import subprocess
import sys

import pytest
from conftest import GPU_ENV, run_cli


@functools.cache
def _gpus() -> int:
    """GPUs TensorFlow sees with the original CUDA_VISIBLE_DEVICES (0 without nvidia-smi)."""
    if shutil.which("nvidia-smi") is None:
        return 0
    env = {k: v for k, v in (dict(os.environ) | GPU_ENV).items() if v is not None}
    code = "import tensorflow as tf; print(len(tf.config.list_physical_devices('GPU')))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    lines = out.stdout.strip().splitlines()
    return int(lines[-1]) if out.returncode == 0 and lines else 0


needs_gpu = pytest.mark.skipif("not _gpus()", reason="no GPU visible to TensorFlow here")


def _train(tmp_path, *args):
    proc, record = run_cli(
        "train",
        "--accelerator=gpu",
        "--use_synthetic_data",
        f"--model_dir={tmp_path / 'model'}",
        *args,
        results_dir=tmp_path / "runs",
        env=GPU_ENV,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert record["status"] == "ok"
    assert record["placement"]["accelerator"] == "gpu"
    return proc, record


@needs_gpu
@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_mixed_precision_trains_on_the_gpu_and_is_priced_as_a_gpu_machine(tmp_path, precision):
    proc, rec = _train(
        tmp_path,
        "--model=resnet50",
        "--tiny",
        f"--precision={precision}",
        "--batch_size=64",
        "--train_steps=6",
        "--steps_per_loop=2",
    )
    res = rec["results"]
    assert math.isfinite(res["final_loss"]) and res["examples_per_sec"] > 0
    assert rec["config"]["precision"] == precision
    assert rec["software"]["cudnn_batchnorm_persistent"] == "1"
    # Priced as a machine that carries the GPU (or said why not), never as a CPU VM.
    note = rec["cost"].get("note") or ""
    machines = [m["machine"] for m in rec["cost"]["machines"]]
    assert not any("n1-standard" in m or "n1-highcpu" in m for m in machines), machines
    assert machines or "not priced" in note, rec["cost"]
    assert 0 < rec["mfu"]["mfu"] < 1 or rec["mfu"].get("mfu_note")


@needs_gpu
def test_the_cudnn_lstm_is_taken_and_the_record_says_so(tmp_path):
    _, rec = _train(tmp_path, "--model=lstm_textgen", "--tiny", "--train_steps=4")
    assert rec["recurrent"]["implementation"] == "cudnn", rec["recurrent"]


@needs_gpu
def test_cudnn_false_keeps_the_lstm_on_keras_loop_on_a_gpu(tmp_path):
    """cpu_vs_gpu's seed `1 GPU` cell: 2017's Keras LSTM had no cuDNN kernel."""
    _, rec = _train(
        tmp_path, "--model=lstm_textgen", "--tiny", "--train_steps=4", "--params=cudnn=false"
    )
    rnn = rec["recurrent"]
    assert (rnn["implementation"], rnn["cudnn"]) == ("keras-generic-loop", "off"), rnn
    assert rnn["reason"].startswith("cuDNN turned off")


@needs_gpu
def test_one_gpu_mirrored_run_with_nccl_all_reduce(tmp_path):
    _, rec = _train(
        tmp_path,
        "--model=mnist_mlp",
        "--strategy=mirrored",
        "--all_reduce=nccl",
        "--num_gpus=1",
        "--train_steps=20",
        "--steps_per_loop=10",
    )
    assert rec["placement"]["strategy"] == "mirrored"
    assert rec["placement"]["all_reduce"] == "nccl"
    assert rec["placement"]["num_replicas"] == 1


@needs_gpu
def test_bf16_compiles_its_step_with_xla_on_a_gpu_unless_noxla(tmp_path):
    common = ("--model=resnet50", "--tiny", "--precision=bf16", "--batch_size=64")
    steps = ("--train_steps=4", "--steps_per_loop=2")
    _, rec = _train(tmp_path / "unset", *common, *steps)
    assert rec["config"]["xla"] is True and rec["xla_scope"] == "step"
    assert "--noxla" in rec["xla_default"]
    _, rec = _train(tmp_path / "off", *common, *steps, "--noxla")
    assert rec["config"]["xla"] is False
    assert "xla_scope" not in rec and "xla_default" not in rec
