"""Real data from local disk against synthetic data, side by side in one run.

For resnet50 and cifar10_cnn, prepares real-photo records once (crops of
scikit-learn's sample photographs: raw uint8 at the model's size, and JPEG
for resnet50), then alternates `tpubench train` on synthetic data and on
each real layout, round after round, and prints each round's ratio
real/synthetic and the median with its range.  Target: >= 0.95 with raw
records.  For the JPEG layout it also prints where the time goes: the
pipeline's own ceiling (`tpubench data bench`, no model) for raw and JPEG,
and the host CPU use during training.

    .venv/bin/python bench/input.py --rounds=3

Figures are only meaningful on a quiet machine; the script prints the other
processes' CPU use before each round.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import psutil

TARGET = 0.95

WORKLOADS = {
    # model: (extra train flags, raw image size, also JPEG?)
    "resnet50": (["--batch_size=32", "--train_steps=14", "--steps_per_loop=2"], 224, True),
    "cifar10_cnn": (["--batch_size=128", "--train_steps=300", "--steps_per_loop=25"], 32, False),
}


def tpubench(*args, timeout=3600) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "tpubench", *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        sys.exit(f"bench/input.py: `{' '.join(cmd[2:])}` failed: {proc.stderr.strip()[-400:]}")
    return proc


def prepare(workdir: str, name: str, fmt: str, size: int, examples: int) -> str:
    out = os.path.join(workdir, name)
    if not os.path.exists(os.path.join(out, "manifest.json")):
        tpubench(
            "data", "prepare", "--dataset=photos", f"--output={out}", f"--record_format={fmt}",
            f"--image_size={size}", f"--examples={examples}",
        )  # fmt: skip
    return out


def train_rate(model: str, flags: list[str], data: list[str], results: str) -> dict:
    def records():
        return (
            {f for f in os.listdir(results) if f.endswith(".json")}
            if os.path.isdir(results)
            else set()
        )

    before = records()
    tpubench("train", f"--model={model}", *flags, *data, f"--results_dir={results}")
    (new,) = sorted(records() - before)
    with open(os.path.join(results, new)) as f:
        record = json.load(f)
    r = record["results"]
    return {
        "rate": r["examples_per_sec"],
        "cpu": (r.get("host_cpu") or {}).get("system_percent_mean"),
    }


def pipeline_ceiling(model: str, data_dir: str, batch: int) -> float:
    proc = tpubench(
        "data", "bench", f"--model={model}", f"--data_dir={data_dir}", f"--batch_size={batch}",
        "--batches=20", "--warmup_batches=3", "--format=json",
    )  # fmt: skip
    return json.loads(proc.stdout)["examples_per_sec"]


def others_busy(seconds: float = 1.0) -> float:
    """CPU percent used by processes other than this one and its children."""
    me = psutil.Process()
    mine = {me.pid} | {c.pid for c in me.children(recursive=True)}
    procs = [p for p in psutil.process_iter() if p.pid not in mine]
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.cpu_percent(None)
    time.sleep(seconds)
    total = 0.0
    for p in procs:
        with contextlib.suppress(psutil.Error):
            total += p.cpu_percent(None)
    return total / (psutil.cpu_count() or 1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--models", default=",".join(WORKLOADS))
    p.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "tpubench-bench-input"))
    args = p.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    results = os.path.join(args.workdir, "runs")
    summary = []
    for model in args.models.split(","):
        flags, size, with_jpeg = WORKLOADS[model]
        layouts = {"raw": prepare(args.workdir, f"photos-raw{size}", "raw", size, 2048)}
        if with_jpeg:
            layouts["jpeg"] = prepare(args.workdir, "photos-jpeg", "jpeg", size, 2048)
        rates = {k: [] for k in ["synthetic", *layouts]}
        cpus = {k: [] for k in rates}
        for rnd in range(args.rounds):
            order = list(rates)
            order = order[rnd % len(order) :] + order[: rnd % len(order)]  # rotate
            print(f"[{model}] round {rnd + 1}: other processes use {others_busy():.0f}% CPU")
            for variant in order:
                data = (
                    ["--use_synthetic_data"]
                    if variant == "synthetic"
                    else [f"--data_dir={layouts[variant]}"]
                )
                got = train_rate(model, flags, data, results)
                rates[variant].append(got["rate"])
                cpus[variant].append(got["cpu"])
                print(f"  {variant:<9} {got['rate']:9.2f} ex/s   host CPU {got['cpu']}%")
        for variant in layouts:
            ratios = [r / s for r, s in zip(rates[variant], rates["synthetic"], strict=True)]
            med = statistics.median(ratios)
            summary.append((model, variant, med, min(ratios), max(ratios)))
        if with_jpeg:
            batch = int(flags[0].split("=")[1])
            ceilings = {k: pipeline_ceiling(model, d, batch) for k, d in layouts.items()}
            print(
                f"[{model}] pipeline alone (no model): "
                + ", ".join(f"{k} {v:,.1f} ex/s" for k, v in ceilings.items())
                + f"; synthetic training consumes {statistics.median(rates['synthetic']):.2f} ex/s"
            )
    print("\nmodel        records  real/synthetic median (min-max)  target")
    for model, variant, med, lo, hi in summary:
        target = f">= {TARGET}: {'PASS' if med >= TARGET else 'MISS'}" if variant == "raw" else "-"
        print(f"{model:<12} {variant:<8} {med:6.3f} ({lo:.3f}-{hi:.3f})               {target}")


if __name__ == "__main__":
    main()
