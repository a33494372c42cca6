"""--cpu_kernels: oneDNN or AMD's ZenDNN plug-in, chosen before TensorFlow loads, and recorded."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time

import pytest

from tpubench.hardware import amx, cpu_kernels, cpu_layout

ROOT = pathlib.Path(__file__).resolve().parents[2]
ZENDNN_PYTHON = ROOT / ".venv-zendnn" / "bin" / "python"


@pytest.mark.parametrize(
    ("cpu", "path"),
    [
        ({"isa": ["amx_tile", "amx_bf16", "avx512_bf16"], "amx": "usable"}, "amx"),
        ({"isa": ["avx512_bf16", "avx512f"], "amx": "absent"}, "avx512_bf16"),  # EPYC Zen 4/5
        # Listed but refused by the kernel: bf16 runs on the AVX-512 BF16 instructions.
        (
            {"isa": ["amx_tile", "avx512_bf16"], "amx": "listed but not permitted (x)"},
            "avx512_bf16",
        ),
        ({"isa": ["avx2", "fma"], "amx": "absent"}, "none"),
        ({}, "none"),  # an old record: no isa, no amx
    ],
)
def test_the_bf16_path_names_the_fastest_bf16_arithmetic_the_process_has(cpu, path):
    assert amx.bf16_path(cpu) == path


def test_the_choice_sets_both_variables_before_tensorflow_loads(monkeypatch):
    monkeypatch.delenv(cpu_kernels.ZENDNN_ENV, raising=False)
    monkeypatch.delenv(cpu_layout.ONEDNN_ENV, raising=False)
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
    cpu_kernels.apply("auto")
    assert cpu_layout.ONEDNN_ENV not in os.environ and cpu_kernels.ZENDNN_ENV not in os.environ
    cpu_kernels.apply("onednn")
    assert os.environ[cpu_layout.ONEDNN_ENV] == "1" and os.environ[cpu_kernels.ZENDNN_ENV] == "0"


def test_zendnn_where_zentf_is_missing_is_one_line_before_anything_is_written(tmp_path):
    if cpu_kernels.zentf_version() is not None:
        pytest.skip("this environment has zentf")
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "tpubench", "train", "--cpu_kernels=zendnn",
         f"--results_dir={tmp_path}/runs"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "--cpu_kernels=zendnn: AMD's ZenDNN plug-in (zentf) is not installed" in lines[0]
    assert "`make zendnn`" in lines[0] and "--cpu_kernels=onednn" in lines[0]
    assert not (tmp_path / "runs").exists()  # no record, no folder: a usage error
    assert time.monotonic() - start < 30  # TensorFlow never loaded


def test_an_unknown_choice_names_the_accepted_ones(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "tpubench", "infer", "--cpu_kernels=zen"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "auto, onednn, zendnn" in proc.stderr or "auto|onednn|zendnn" in proc.stderr


def test_the_record_names_the_kernels_it_ran(tmp_path):
    """oneDNN here; with `make zendnn`'s environment, a ZenDNN run beside it says ZenDNN on."""
    runs = [([sys.executable], "onednn", "oneDNN/Eigen (TensorFlow's own; no ZenDNN plug-in)")]
    if ZENDNN_PYTHON.exists():
        runs.append(([str(ZENDNN_PYTHON)], "zendnn", "ZenDNN on (TF_ENABLE_ZENDNN_OPTS=1; zentf"))
    for python, choice, said in runs:
        out = tmp_path / choice
        proc = subprocess.run(
            [*python, "-P", "-m", "tpubench", "train", f"--cpu_kernels={choice}", "--tiny",
             "--train_steps=2", f"--results_dir={out}"],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
        (record,) = out.glob("*.json")
        rec = json.loads(record.read_text())
        assert rec["config"]["hardware"]["cpu_kernels"] == choice
        assert rec["software"]["cpu_kernels"].startswith(said)
        assert rec["hardware"]["cpu"]["bf16_path"] in amx.BF16_PATHS


@pytest.mark.skipif(not ZENDNN_PYTHON.exists(), reason="no .venv-zendnn here (make zendnn)")
def test_tune_in_the_zendnn_environment_runs_a_zendnn_trial_beside_the_defaults(tmp_path):
    """`make zendnn`'s environment: tune's kernels axis runs real ZenDNN trials, as recorded."""
    proc = subprocess.run(
        [str(ZENDNN_PYTHON), "-P", "-m", "tpubench", "tune", "--model=mnist_mlp",
         "--search=cpu_kernels", "--trial_steps=20", "--repeats=1", "--max_repeats=1",
         "--budget=30m", f"--results_dir={tmp_path}/r"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "ZenDNN plug-in zentf" in proc.stdout, proc.stdout
    rows = [line for line in proc.stdout.splitlines() if line.startswith("│")]
    assert any("ZenDNN" in row for row in rows) and any("defaults" in row for row in rows), rows
    assert "ZenDNN at 20 steps" not in proc.stdout  # the budget held its trial
    kernels = {
        json.loads(p.read_text())["software"]["cpu_kernels"].split(" (")[0]
        for p in (tmp_path / "r").glob("tune-*/*.json")
        if "software" in json.loads(p.read_text())
    }
    assert {"ZenDNN on", "ZenDNN off"} <= kernels, kernels
