"""Figures that stay honest on a busy machine (issue 25, E).

A peak probe taken while other processes hold the CPU never replaces or
lowers a quiet cached peak, and is not re-taken at every run; the MFU names
the peak it used.  --compare_synthetic calls its verdict unreliable when
the two rates are noisy, and says how to get a firm one.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import pathlib
import time
import types

import pytest
from conftest import run_cli

from tpubench.cli import report_text
from tpubench.core.precision import Precision
from tpubench.hardware import mfu, peaks, probe
from tpubench.run.train import diagnosis
from tpubench.storage import cache

CPU = "Test CPU"
FIXTURE = pathlib.Path(__file__).parents[1] / "report" / "fixtures" / "gpus" / "resnet-g1-0.json"


def _printed(results: dict | None = None, mfu_section: dict | None = None) -> str:
    """The train summary of a real record with RESULTS and MFU_SECTION merged in."""
    record = json.loads(FIXTURE.read_text())
    record["results"].update(results or {})
    record["mfu"] = (record.get("mfu") or {}) | (mfu_section or {})
    record["cost"] = {}  # the cost table is not under test
    return report_text.train_summary(record)


def _seed(threads_flops: dict[int, float], n: int = 64, busy: float = 2.0) -> dict:
    """A cache holding quiet probes of CPU at each thread count."""
    import tensorflow as tf

    entries = {}
    for threads, flops in threads_flops.items():
        entries[peaks._key(CPU, threads, "fp32", tf.__version__, n)] = {
            "flops": flops, "method": f"fp32 matmul {n}^3, best of 2 trials", "trials": 2,
            "spread": 1.01, "cpu_model": CPU, "threads": threads, "precision": "fp32",
            "busy_percent": busy, "measured": "2026-11-20",
        }  # fmt: skip
    cache.store_json(peaks.CACHE_FILE, entries)
    return entries


@pytest.fixture
def own_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("TPUBENCH_CACHE", str(tmp_path))
    return tmp_path


def _cached_flops(threads: int) -> float:
    (entry,) = [e for e in cache.load_json(peaks.CACHE_FILE).values() if e["threads"] == threads]
    return entry["flops"]


def test_a_busy_reprobe_never_replaces_a_quiet_cached_peak(own_cache, monkeypatch):
    _seed({2: 5e12})
    monkeypatch.setattr(peaks, "busy_percent", lambda *a, **k: 80.0)
    got = peaks.cpu_peak(CPU, 2, Precision.FP32, reprobe=True, n=64, trials=2)
    assert got["flops"] == 5e12, got  # the quiet peak, not the busy probe
    assert got["cached"] is True and "busy" in got["note"] and "80%" in got["note"]
    assert _cached_flops(2) == 5e12


def test_a_lower_reprobe_never_lowers_a_quiet_cached_peak(own_cache, monkeypatch):
    _seed({2: 5e12})  # far above what a 64^3 matmul reaches
    monkeypatch.setattr(peaks, "busy_percent", lambda *a, **k: 0.0)
    got = peaks.cpu_peak(CPU, 2, Precision.FP32, reprobe=True, n=64, trials=2)
    assert _cached_flops(2) == 5e12
    assert got["flops"] == 5e12 and "kept the cached" in got["note"], got


def test_an_inconsistent_cache_is_not_reprobed_on_a_busy_machine(own_cache, monkeypatch):
    _seed({1: 4e10, 2: 2e10})  # falls as threads rise: one of them is suspect
    monkeypatch.setattr(peaks, "busy_percent", lambda *a, **k: 70.0)
    got = peaks.cpu_peak(CPU, 2, Precision.FP32, n=64, trials=2)
    assert got["flops"] == 2e10 and got["cached"] is True, got
    assert "tpubench peak --reprobe" in got["note"]
    assert _cached_flops(1) == 4e10 and _cached_flops(2) == 2e10


def test_a_quiet_higher_probe_does_replace_the_cache(own_cache, monkeypatch):
    _seed({2: 1.0})  # absurdly low: any real probe beats it
    monkeypatch.setattr(peaks, "busy_percent", lambda *a, **k: 0.0)
    got = peaks.cpu_peak(CPU, 2, Precision.FP32, reprobe=True, n=64, trials=2)
    assert got["cached"] is False and got["flops"] > 1.0
    assert _cached_flops(2) == got["flops"]


def _hardware_peak(monkeypatch, threads=2):
    monkeypatch.setattr(probe, "cpu", lambda: {"model": CPU, "isa": []})
    real = peaks.cpu_peak
    monkeypatch.setattr(peaks, "cpu_peak", lambda *a, **k: real(*a, **k, n=64, trials=2))
    return mfu.hardware_peak(types.SimpleNamespace(accelerator="cpu"), Precision.FP32, threads)


def test_mfu_names_a_cached_quiet_peak(own_cache, monkeypatch):
    _seed({2: 5e10})
    monkeypatch.setattr(peaks, "busy_percent", lambda *a, **k: 0.0)
    out = _hardware_peak(monkeypatch)
    assert out["peak_flops"] == 5e10
    assert out["peak_kind"] == "cached quiet probe"
    assert "cached quiet probe of 2026-11-20" in out["peak_source"], out["peak_source"]


def test_mfu_names_a_busy_fresh_peak_and_says_the_mfu_is_overstated(own_cache, monkeypatch):
    monkeypatch.setattr(peaks, "busy_percent", lambda *a, **k: 64.0)
    out = _hardware_peak(monkeypatch)
    assert out["peak_kind"] == "busy probe"
    assert "machine busy: 64% CPU used by others" in out["peak_source"]
    judged = mfu.judged(1e3, 1e3, out)
    assert "overstated" in judged["mfu_peak_warning"]
    text = _printed(mfu_section=judged | {"train_flops_per_example": 1e3})
    assert "overstated" in text and "busy" in text


def _burn(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def test_a_real_busy_machine_keeps_the_quiet_peak_through_the_cli(tmp_path):
    """Real burner processes hold every core while `tpubench peak --reprobe` runs."""
    import tensorflow as tf

    threads = len(os.sched_getaffinity(0))
    model = probe.cpu()["model"]
    key = peaks._key(model, threads, "fp32", tf.__version__, 2048)
    seeded = {"flops": 9.9e12, "method": "fp32 matmul 2048^3, best of 5 trials", "trials": 5,
              "spread": 1.0, "cpu_model": model, "threads": threads, "precision": "fp32",
              "busy_percent": 1.0, "measured": "2026-11-20"}  # fmt: skip
    (tmp_path / peaks.CACHE_FILE).write_text(json.dumps({key: seeded}))
    burners = [multiprocessing.Process(target=_burn, args=(120,)) for _ in range(threads * 2)]
    for b in burners:
        b.start()
    try:
        time.sleep(1.0)
        proc, _ = run_cli(
            "peak", "--reprobe", "--format=json", env={"TPUBENCH_CACHE": str(tmp_path)}
        )
    finally:
        for b in burners:
            b.terminate()
    assert proc.returncode == 0, proc.stderr
    fp32 = next(r for r in json.loads(proc.stdout)["cpu"]["peaks"] if r["precision"] == "fp32")
    assert fp32["flops"] == 9.9e12 and "busy" in fp32["note"], fp32
    stored = json.loads((tmp_path / peaks.CACHE_FILE).read_text())
    assert stored[key]["flops"] == 9.9e12


# ------------------------------------------------------------ --compare_synthetic


def _records(real_rate, synth_rate, real_p90=1.05, others=5.0):
    def results(rate, p90):
        return {
            "examples_per_sec": rate, "step_time_p50": 1.0, "step_time_p90": p90,
            "host_cpu": {"cores": 2, "system_percent_mean": 50.0 + others,
                         "process_percent_mean": 50.0},
        }  # fmt: skip

    return {"results": results(real_rate, real_p90)}, {"results": results(synth_rate, 1.05)}


def test_a_real_run_faster_than_its_synthetic_twin_is_an_unreliable_verdict():
    real, synth = _records(1420.0, 1000.0)  # the 1.42x "not input-bound"
    d = diagnosis.attach(real, synth)
    assert d["verdict"] == "unreliable"
    assert any("as fast as its synthetic twin" in why for why in d["unreliable_because"]), d
    assert "--train_steps" in d["firm_verdict"] and "quiet" in d["firm_verdict"]


def test_a_wide_spread_or_a_busy_host_makes_the_verdict_unreliable():
    d = diagnosis.attach(*_records(900.0, 1000.0, real_p90=1.6))
    assert d["verdict"] == "unreliable" and any("spread" in w for w in d["unreliable_because"])
    d = diagnosis.attach(*_records(990.0, 1000.0, others=40.0))
    assert d["verdict"] == "unreliable"
    assert any("other processes" in w for w in d["unreliable_because"])


def test_a_steady_quiet_pair_keeps_its_verdict():
    assert diagnosis.attach(*_records(990.0, 1000.0))["verdict"] == "not input-bound"
    assert diagnosis.attach(*_records(500.0, 1000.0))["verdict"] == "input-bound"


def test_the_console_says_unreliable_and_how_to_get_a_firm_verdict():
    real, synth = _records(1420.0, 1000.0)
    diagnosis.attach(real, synth)
    text = _printed(real["results"])
    assert "unreliable" in text and "not input-bound" not in text
    assert "--train_steps" in text
