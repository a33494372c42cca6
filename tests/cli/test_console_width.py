"""Issue 34 F: every command's console output fits 100 columns (core/columns.py's one rule).

Each command runs as a user runs it into a pipe (no COLUMNS, no terminal):
its tables, footers and advice lines are at most 100 characters wide.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import types

import pytest
from conftest import NO_TF_CLI

FIXTURES = pathlib.Path(__file__).parents[1] / "report" / "fixtures"


def _widest(text: str) -> int:
    return max((len(x) for x in text.splitlines()), default=0)


def _cli(*args, cwd=None):
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    proc = subprocess.run(
        [sys.executable, "-c", NO_TF_CLI, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["prices"],
        ["prices", "v100"],
        ["prices", "--machine=gcp:n1-standard-8+4xgcp:v100"],
        ["runs", "fixtures"],
        ["advise", "fixtures/threads", "--model=mnist_mlp", "--deadline=1h"],
        ["advise", "fixtures/gpus", "--model=resnet50", "--epochs=50", "--deadline=8h"],
        ["advise", "fixtures/gpus", "--model=resnet50", "--epochs=50", "--budget=100"],
        ["report", "fixtures/gpus", "fixtures/threads"],
        ["models"],
        ["study", "list"],
    ],
    ids=lambda a: " ".join(a)[:40],
)
def test_a_command_printed_into_a_pipe_fits_100_columns(args, tmp_path):
    shutil.copytree(FIXTURES, tmp_path / "fixtures")  # paths as a user's: relative
    out = _cli(*args, cwd=tmp_path)
    assert out.strip() and _widest(out) <= 100, out


def test_prices_folds_the_source_and_keeps_every_word():
    out = _cli("prices", "v100")
    assert "SkyPilot catalog v8 gcp/vms.csv at commit 006059e0f18a" in " ".join(out.split())
    assert "(pin one with KEY@YEAR)" in " ".join(out.split())


def test_runs_keeps_each_record_path_whole(tmp_path):
    shutil.copytree(FIXTURES / "threads", tmp_path / "runs")
    out = _cli("runs", "runs", cwd=tmp_path)
    assert "runs/cnn-t1-0.json" in out.split()
    assert out.splitlines()[1].startswith("2026-11-20 10:00 ok")


def _infer_record(batch: int, p99: float) -> dict:
    return {
        "kind": "infer",
        "model": {"name": "resnet50"},
        "data": {"name": "synthetic"},
        "placement": {"accelerator": "cpu", "strategy": "one_device", "num_replicas": 1},
        "config": {"precision": "fp32"},
        "weights": {"source": "checkpoint", "path": "runs/20261126-0929-resnet50/ckpt-300"},
        "global_batch_size": batch,
        "startup": {"time_to_first_prediction": 12.5, "model_ready_seconds": 3.2, "batch_size": 1},
        "results": {
            "examples_per_sec": 1234567.8,
            "examples_per_sec_per_replica": 1234567.8,
            "latency_p50": 0.8,
            "latency_p90": 1.2,
            "latency_p99": p99,
            "first_batch_seconds": 1.5,
            "timed_batches": 1000,
            "timed_seconds": 123.45,
        },
        "mfu": {
            "mfu": 0.1234,
            "forward_flops_per_example": 4.1e9,
            "parameters": 25_557_032,
            "peak_flops": 2.9e11,
            "peak_source": "measured: fp32 matmul 2048^3, best of 5 trials; "
            "cached quiet probe of 2026-11-26; 2 threads",
            "mfu_note": "is against the CPU's measured peak, which a busy host lowers; " * 3,
        },
        "cost": {"note": "priced as cloud VMs with this host's vCPU count", "machines": []},
        "record_path": "runs/x.json",
    }


def test_the_infer_table_and_its_footers_fit_and_the_latencies_stay_on_one_line(monkeypatch):
    from tpubench.cli import infer_text

    monkeypatch.delenv("COLUMNS", raising=False)
    text = infer_text.infer_summary([_infer_record(1, 1.771), _infer_record(1024, 12.5)])
    assert _widest(text) <= 100, text
    assert any("800 / 1,200 / 1,771 │" in x for x in text.splitlines()), text
    assert any("800 / 1,200 / 12,500 │" in x for x in text.splitlines()), text
    assert "runs/20261126-0929-resnet50/ckpt-300" in text.split()  # the path stays whole


def test_the_tune_table_fits_100_columns(monkeypatch):
    from tpubench.cli import tune_text

    monkeypatch.delenv("COLUMNS", raising=False)
    row = types.SimpleNamespace(
        name="precision=bf16, xla=true, data_format=channels_last, steps_per_loop=100",
        setting="s",
        steps=400,
        rate=123456.7,
        low=120000,
        high=130000,
        n=3,
        usd_per_epoch=0.00012,
        speedup=2.41,
        compile_seconds=12.3,
        status="ok",
        note="numerics within 15% of fp32",
        busy=1,
    )
    text = tune_text.table([row, row], "throughput", winner="s")
    assert _widest(text) <= 100, text
    assert "123,456.7" in text and "120,000-130,000 (n=3)" in text  # the figure, its spread
    assert "left out to fit 100 columns: compile s" in text  # and where they are
    # A status's reason goes under the table, not into a column of single words.
    assert "ok [1]" in text and "[1] precision=bf16" in " ".join(text.split())


@pytest.mark.parametrize("width", ["80", "60"])
def test_a_narrow_tune_table_keeps_each_rows_setting(monkeypatch, width):
    """At 80 columns (a pipe, a narrow terminal) the lesser figures go, never the setting."""
    from tpubench.cli import tune_text

    monkeypatch.setenv("COLUMNS", width)
    rows = [
        types.SimpleNamespace(
            name=name, setting=name, steps=60, rate=rate, low=rate, high=rate, n=1,
            usd_per_epoch=0.00017, speedup=1.0, compile_seconds=0.7, status="ok", note="",
            busy=0,
        )
        for name, rate in (("ZenDNN", 7600.6), ("defaults", 6985.9))
    ]  # fmt: skip
    text = tune_text.table(rows, "throughput", winner="ZenDNN")
    body = [line for line in text.splitlines() if line.startswith(("│ 1 ", "│ 2 "))]
    assert len(body) == 2 and "ZenDNN" in body[0] and "defaults" in body[1], text
    assert "7,600.6" in body[0] and "leader" not in text and "winner, ok" in body[0]
    dropped = next(line for line in text.splitlines() if "left out to fit" in line)
    assert "setting" not in dropped and "$/epoch" in dropped


def test_fold_keeps_words_and_indents_continuations():
    from tpubench.core import columns

    line = "  - " + " ".join(f"word{i}" for i in range(40))
    folded = columns.fold(line, 60).splitlines()
    assert len(folded) > 1 and all(len(x) <= 60 for x in folded)
    assert " ".join(" ".join(folded).split()) == " ".join(line.split())
    # under the bullet's text
    assert all(x.startswith(" " * 4) and x[4] != " " for x in folded[1:]), folded
