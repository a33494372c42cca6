"""What the emulated disk (`--read_mb_per_s`) costs by itself, side by side in one run.

`tpubench data bench` (ResNet-50's JPEG input pipeline alone, no model) on
the same photos, round after round in this order: no emulated disk, an
emulated disk too fast to matter (`--read_mb_per_s=100000`, 100 GB/s), and
the rates the gpu_host_sizing study emulates (SSD cloud disk 240 MB/s,
standard cloud disk 60 MB/s).  Prints each run's examples/s and MB/s, each
contender's median with its range, and the medians' ratio to the
no-emulation one.  The 100 GB/s contender's ratio is the emulator's own cost
(a Python call per record, through `tf.numpy_function`): what a slower
emulated disk loses beyond it is the bandwidth it emulates.

    .venv/bin/python bench/emulated_disk.py --rounds=3

Pinned to `--cpus` (default 0,1: the study's 2-vCPU cell).  Figures are only
meaningful on a quiet machine; the script prints the other processes' CPU
use during each run (its own included).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import psutil

CONTENDERS = {  # label: extra data-bench flags
    "no emulated disk": [],
    "emulated 100 GB/s": ["--read_mb_per_s=100000"],
    "emulated 240 MB/s (SSD)": ["--read_mb_per_s=240"],
    "emulated 60 MB/s (standard)": ["--read_mb_per_s=60"],
}


def tpubench(cpus: str, *args, timeout=1800) -> subprocess.CompletedProcess:
    cmd = ["taskset", "-c", cpus, sys.executable, "-m", "tpubench", *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        sys.exit(f"bench/emulated_disk.py: `{' '.join(cmd)}` failed: {proc.stderr[-400:]}")
    return proc


def _busy_seconds() -> float:
    """CPU seconds the host has run (every core, every process) since boot."""
    t = psutil.cpu_times()
    return t.user + t.system + t.nice


def run_once(args, data_dir: str, flags: list[str], results: str) -> dict:
    before = set(os.listdir(results))
    tpubench(
        args.cpus, "data", "bench", "--model=resnet50", f"--data_dir={data_dir}",
        f"--batch_size={args.batch_size}", f"--warmup_batches={args.warmup_batches}",
        f"--batches={args.batches}", f"--results_dir={results}", *flags,
    )  # fmt: skip
    (new,) = set(os.listdir(results)) - before
    with open(os.path.join(results, new)) as f:
        record = json.load(f)
    res = record["results"]
    return {"examples_per_sec": res["examples_per_sec"], "mb_per_sec": res.get("mb_per_sec")}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--cpus", default="0,1", help="taskset CPU list for every run")
    p.add_argument("--data_dir", help="JPEG photos (default: prepared here, 2,048 of them)")
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--warmup_batches", type=int, default=10)
    p.add_argument("--batches", type=int, default=200)
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="emulated-disk-")
    data_dir = args.data_dir or os.path.join(work, "photos")
    if not args.data_dir:
        tpubench(
            args.cpus, "data", "prepare", "--dataset=photos", "--record_format=jpeg",
            "--examples=2048", f"--output={data_dir}",
        )  # fmt: skip
    rates: dict[str, list[float]] = {k: [] for k in CONTENDERS}
    for r in range(1, args.rounds + 1):
        for label, flags in CONTENDERS.items():
            results = os.path.join(work, "records")
            os.makedirs(results, exist_ok=True)
            start_cpu, start = _busy_seconds(), time.monotonic()
            got = run_once(args, data_dir, flags, results)
            wall = time.monotonic() - start
            host = (_busy_seconds() - start_cpu) / (wall * psutil.cpu_count())
            rates[label].append(got["examples_per_sec"])
            mb = got["mb_per_sec"]
            print(
                f"round {r}  {label:<28} {got['examples_per_sec']:8.1f} examples/s"
                + (f"  {mb:6.1f} MB/s" if mb else "")
                + f"  (host CPU in use: {100 * host:.0f}%, this run's included)",
                flush=True,
            )
    base = statistics.median(rates["no emulated disk"])
    print()
    print(f"{'contender':<28} {'median':>9}  {'range':>17}  {'ratio':>6}")
    for label, values in rates.items():
        med = statistics.median(values)
        print(f"{label:<28} {med:9.1f}  {min(values):8.1f}-{max(values):<8.1f}  {med / base:6.2f}")


if __name__ == "__main__":
    main()
