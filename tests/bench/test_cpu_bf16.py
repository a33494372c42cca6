"""bench/cpu_bf16.py: real alternating runs, each contender's median and its ratio to fp32."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_no_bf16_times_fp32_against_its_variants_only(tmp_path):
    out = tmp_path / "runs.json"
    cmd = [
        sys.executable,
        str(ROOT / "bench" / "cpu_bf16.py"),
        "--model=mnist_mlp",
        "--batch_size=16",
        "--steps=4",
        "--steps_per_loop=2",
        "--rounds=2",
        "--no_bf16",
        "--variant=fp32-again:--precision=fp32:",
        f"--output={out}",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    runs = json.loads(out.read_text())
    # Two rounds of two contenders, the order turned in the second round.
    assert [r["label"] for r in runs] == ["fp32", "fp32-again", "fp32-again", "fp32"]
    assert all(r["rate"] > 0 for r in runs)
    summary = done.stdout.split("mnist_mlp train, batch 16, 2 rounds:")[1].splitlines()
    assert summary[1].strip().startswith("fp32: ")
    line = summary[2].strip()
    assert line.startswith("fp32-again: ") and "fp32-again/fp32 " in line
    # The printed ratio is the median of the two rounds' paired ratios.
    by_round = {(r["label"], r["round"]): r["rate"] for r in runs}
    ratios = sorted(by_round[("fp32-again", k)] / by_round[("fp32", k)] for k in (1, 2))
    assert f"fp32-again/fp32 {sum(ratios) / 2:,.2f} ({ratios[0]:,.2f}-{ratios[1]:,.2f})x" in line
    assert "bf16" not in done.stdout
