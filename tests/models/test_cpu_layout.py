"""A CPU whose TensorFlow runs NHWC only: channels-first is refused in one line, auto trains.

TensorFlow's own CPU kernels take NHWC only; NCHW runs on the CPU through
oneDNN, which TensorFlow turns on by default only on x86 CPUs with AVX-512
VNNI/BF16 or AMX.  `TF_ENABLE_ONEDNN_OPTS=0` turns it off on any x86 CPU,
which makes this machine the AMD EPYC (no AVX-512) that users have.
"""

from __future__ import annotations

import json
import platform

import pytest
from conftest import one_line_error, run_cli

from tpubench.tune import space

pytestmark = pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64"),
    reason="TF_ENABLE_ONEDNN_OPTS=0 leaves TensorFlow's NHWC-only kernels on x86 only",
)
NHWC_ONLY = {"TF_ENABLE_ONEDNN_OPTS": "0"}


def test_channels_first_is_refused_before_the_build_and_auto_trains(tmp_path, tpubench_cache):
    common = ["--model=mnist_cnn", "--tiny", "--use_synthetic_data", "--train_steps=2"]
    proc, record = run_cli(
        "train",
        *common,
        "--data_format=channels_first",
        results_dir=tmp_path / "runs",
        env=NHWC_ONLY,
    )
    line = one_line_error(proc)
    assert proc.returncode == 2, proc.stderr
    assert line.startswith("tpubench train: error: --data_format=channels_first: this CPU's")
    assert "TensorFlow runs image ops channels-last only" in line
    assert "oneDNN kernels are off" in line and "NHWC" in line
    assert "accepted: --data_format=auto or channels_last" in line
    assert "TF_ENABLE_ONEDNN_OPTS=1" in line
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert record["status"] == "failed" and "channels-last only" in record["error"]
    # The answer is cached per CPU, TensorFlow and oneDNN setting: the next run does not probe.
    cache = json.loads((tpubench_cache / "cpu_layouts.json").read_text())
    assert any(e["ok"] is False and e["onednn"] is False for e in cache.values())

    proc, record = run_cli(
        "train", *common, "--data_format=auto", results_dir=tmp_path / "runs", env=NHWC_ONLY
    )
    assert proc.returncode == 0, proc.stderr
    assert record["status"] == "ok"
    assert record["model"]["data_format"] == "channels_last"


def test_tune_never_searches_channels_first_on_such_a_cpu():
    host = space.Host("cpu", 2, ("avx2",), no_nchw="Default MaxPoolingOp only supports NHWC")
    sp = space.build(host, space.Setting(), space.AXES, frozenset(), (), True, 100)
    assert all(a.name != "data_format" for a in sp.axes)
    said = "\n".join(f"{what}: {why}" for what, why in sp.skipped)
    assert "data_format: this CPU runs NHWC only (Default MaxPoolingOp" in said
    # Where the CPU can, the layout is still tried (once: oneDNN prefers NHWC).
    able = space.build(space.Host("cpu", 2), space.Setting(), space.AXES, frozenset(), (), True, 9)
    assert next(a for a in able.axes if a.name == "data_format").once == ("channels_first",)
