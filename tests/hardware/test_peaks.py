"""Peaks MFU is measured against: datasheet rows per precision, the CPU probe, and no MFU
above 100% printed as a figure."""

import re
import types

import pytest

from tpubench.core.precision import Precision
from tpubench.hardware import matmul_probe, mfu, peaks


@pytest.mark.parametrize(
    "key, precision, tflops, math",
    [
        ("h100-sxm", "fp32", 494.7, "TF32"),
        ("h100-sxm", "fp32_plain", 66.9, "FP32 CUDA"),
        ("h100-sxm", "bf16", 989.4, "BF16"),
        ("h100-sxm", "fp16", 989.4, "FP16"),
        ("h100-sxm", "fp8", 1978.9, "FP8"),
        ("a100", "fp32", 156.0, "TF32"),
        ("v100", "fp32", 15.7, "FP32"),
        ("tpu-v4", "bf16", 275.0, "BF16"),
    ],
)
def test_datasheet_rows_are_dense_and_name_their_math(key, precision, tflops, math):
    sheet = peaks.datasheet(key, precision)
    assert sheet.tflops == tflops and math in sheet.math and sheet.source
    assert "sparse" not in sheet.math.split("(")[0]


def test_every_datasheet_row_has_a_source():
    for key, rows in peaks.DATASHEET.items():
        for precision, sheet in rows.items():
            assert sheet.tflops > 0, (key, precision)
            assert "datasheet" in sheet.source or "TPU" in sheet.source, (key, precision)


@pytest.mark.parametrize(
    "isa, expected",
    [
        (["avx2", "fma"], ["fp32"]),
        (["avx512f", "avx512_bf16"], ["fp32", "bf16"]),
        (["amx_bf16", "amx_tile", "amx_fp16"], ["fp32", "bf16", "fp16"]),
    ],
)
def test_cpu_precisions_follow_the_isa(isa, expected):
    assert peaks.cpu_precisions(isa) == expected


def test_peaks_must_not_fall_as_threads_rise():
    assert peaks.consistent({1: 168e9, 2: 320e9, 4: 610e9})
    assert peaks.consistent({1: 168e9, 2: 165e9})  # within 5%: measurement noise
    # The poisoned cache of issue 12: a 2-thread peak of 119 below the 1-thread 168.
    assert not peaks.consistent({1: 168e9, 2: 119e9})


PEAK = {"peak_flops": 119e9, "peak_source": "measured: fp32 matmul 2048^3 (2 threads)"}


def test_an_mfu_above_100_percent_is_never_a_figure():
    out = mfu.judged(3.0e9, 50.0, PEAK)  # 150 GFLOP/s against 119: 126%
    assert out["mfu"] is None
    assert out["mfu_over_100"] == pytest.approx(150e9 / 119e9)
    note = out["mfu_note"]
    assert "126.1% would exceed 100%" in note and "peak" in note
    assert "tpubench peak --reprobe" in note and "--peak_flops" in note


def test_a_measured_peak_is_reprobed_once_when_mfu_passes_100_percent():
    calls = []

    def reprobe():
        calls.append(1)
        return {"peak_flops": 300e9, "peak_source": "measured: fp32 matmul 2048^3 (2 threads)"}

    out = mfu.judged(3.0e9, 50.0, PEAK, reprobe)
    assert calls == [1] and out["peak_reprobed"]
    assert out["mfu"] == pytest.approx(150e9 / 300e9)
    assert "mfu_note" not in out


def test_mfu_against_the_measured_gpu_peak_too():
    peak = {
        "peak_flops": 989.4e12,
        "peak_source": "datasheet: h100-sxm bf16",
        "peak_flops_measured": 795e12,
    }
    out = mfu.judged(2.0e10, 20_000.0, peak)
    assert out["mfu"] == pytest.approx(4e14 / 989.4e12)
    assert out["mfu_measured_peak"] == pytest.approx(4e14 / 795e12)


def test_peak_flops_override_wins():
    placement = types.SimpleNamespace(accelerator="cpu", num_replicas=1)
    out = mfu.hardware_peak(placement, Precision.FP32, 2, peak_flops_override=5e11)
    assert out == {"peak_flops": 5e11, "peak_source": "--peak_flops (given)"}


def test_gpu_probe_runs_where_a_gpu_is_visible():
    tf = pytest.importorskip("tensorflow")
    if not tf.config.list_physical_devices("GPU"):
        pytest.skip("no GPU visible: the GPU matmul probe runs on a GPU machine")
    for precision in Precision:
        measured = matmul_probe.gpu(precision, n=4096, iters=10)
        name = tf.config.experimental.get_device_details(
            tf.config.list_physical_devices("GPU")[0]
        ).get("device_name", "")
        sheet = peaks.datasheet(peaks.accelerator_key(name) or "", precision)
        assert measured["flops"] > 0
        if sheet:  # a matmul never beats the datasheet's dense peak
            assert measured["flops"] < sheet.tflops * 1e12 * 1.02


def test_peak_cli_bad_format_is_one_line(tmp_path):
    from conftest import one_line_error, run_cli

    proc, _ = run_cli("peak", "--format=xml", env={"TPUBENCH_CACHE": str(tmp_path)})
    assert proc.returncode == 2
    assert "xml" in one_line_error(proc) and "json" in proc.stderr


@pytest.mark.slow
def test_peak_cli_measures_and_caches_per_precision(tmp_path):
    import json

    from conftest import run_cli

    from tpubench.hardware import probe

    proc, _ = run_cli("peak", "--format=json", env={"TPUBENCH_CACHE": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["cache"] == str(tmp_path / "cpu_peaks_v2.json")
    expected = peaks.cpu_precisions(probe.cpu()["isa"])
    assert [r["precision"] for r in data["cpu"]["peaks"]] == expected
    assert all(r["flops"] > 1e8 and not r["cached"] for r in data["cpu"]["peaks"])


@pytest.mark.parametrize(("threads", "busy"), [(1, 61.0), (2, 0.0)])
def test_the_cpu_peak_source_reads_as_one_parenthesis(monkeypatch, tmp_path, threads, busy):
    """Printed inside '(...)' by the results table: no parentheses of its own, even when busy."""
    import types

    from tpubench.hardware import peaks, probe

    monkeypatch.setenv("TPUBENCH_CACHE", str(tmp_path))  # a probe of its own, not the cache
    monkeypatch.setattr(probe, "cpu", lambda: {"model": "Test CPU", "isa": []})
    monkeypatch.setattr(peaks, "busy_percent", lambda *a, **k: busy)
    real = peaks.cpu_peak
    monkeypatch.setattr(peaks, "cpu_peak", lambda *a, **k: real(*a, **k, n=64, trials=2))
    out = mfu.hardware_peak(types.SimpleNamespace(accelerator="cpu"), "bf16", threads)
    source = out["peak_source"]
    assert "(" not in source and ")" not in source, source
    assert re.match(
        r"measured: fp32 matmul (64\^3, faster than 8 x 32\^3|8 x 32\^3, faster than 64\^3), "
        r"best of 2 trials; ",
        source,
    ), source
    assert source.endswith(
        f"; {threads} thread{'s' if threads > 1 else ''}; no native bf16 on this CPU"
    )
    assert ("machine busy: 61% CPU used by others" in source) == bool(busy)
