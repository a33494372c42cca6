"""Benchmark (not a test): tpubench against tf_cnn_benchmarks and Keras fit on one GPU.

Every cell is a (precision, XLA) pair: fp32, fp16 and bf16, each without
and with XLA.  In each cell three contenders train the same ResNet-50 v1.5
at the same global batch on synthetic ImageNet-shaped data, each in a fresh
process, the order rotating every round:

* tpubench   `tpubench train --accelerator=gpu --use_synthetic_data
             --precision=P --data_format=F [--xla]` (F: `--data_format`,
             auto by default: NCHW for fp32 on a GPU); the record's
             `results.examples_per_sec`;
* tf_cnn     tf_cnn_benchmarks `--model=resnet50_v1.5 --num_gpus=1
             --variable_update=parameter_server --local_parameter_device=gpu
             --optimizer=momentum` (tpubench's ResNet-50 optimizer) in its own
             defaults otherwise (NCHW on a GPU), `--use_fp16` for
             fp16, `--xla_compile` for XLA; its `total images/sec`.  It has
             no bf16 mode: a bf16 cell is compared with its fp16 figure and
             says so;
* keras_fit  Keras 3 `model.fit` on tpubench's registered model under the
             same mixed-precision policy, `jit_compile` on or off as the
             cell says, `steps_per_execution` = tpubench's steps_per_loop
             (bench/_keras_fit.py).

Printed: per-run figures, then one row per cell with the median of each
contender, the spread (min-max) over rounds, and tpubench's ratio to each.
Target (issue 13): tpubench >= 1.0x tf_cnn_benchmarks in every cell.

    python bench/gpu.py --tf_cnn_dir=DIR [--tf_cnn_python=PYTHON] \
        [--rounds=3] [--cells=fp32,fp16,bf16,fp16:xla] [--params=padding=same] \
        [--output=gpu.json]

`--cells` takes PRECISION or PRECISION:xla items (default: all six).
tf_cnn_benchmarks is never part of this repository (bench/README.md says
how to get it); without --tf_cnn_dir it is skipped.  On a machine without
a GPU, `--accelerator=cpu` runs the same cells on the CPU (slowly; use a
small --batch_size and --model).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import overhead

CONTENDERS = ("tpubench", "tf_cnn", "keras_fit")
PRECISIONS = ("fp32", "fp16", "bf16")


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--model", default="resnet50", help="tpubench registry name")
    p.add_argument("--tiny", action="store_true", help="tpubench's tiny variant (CPU rehearsals)")
    p.add_argument("--tf_cnn_model", default="resnet50_v1.5", help="tf_cnn_benchmarks --model")
    p.add_argument("--batch_size", type=int, default=256)
    p.add_argument("--steps", type=int, default=60, help="steps per run in all")
    p.add_argument("--steps_per_loop", type=int, default=20, help="tpubench's; fit's per execution")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--cells", default="fp32,fp16,bf16,fp32:xla,fp16:xla,bf16:xla")
    p.add_argument("--contenders", default=",".join(CONTENDERS))
    p.add_argument("--accelerator", default="gpu", choices=("gpu", "cpu"))
    p.add_argument("--tf_cnn_dir", default=None)
    p.add_argument("--tf_cnn_python", default=sys.executable)
    p.add_argument("--tf_cnn_data_format", default="NCHW", choices=("NCHW", "NHWC"))
    p.add_argument(
        "--data_format",
        default="auto",
        choices=("auto", "channels_first", "channels_last"),
        help="tpubench's --data_format (auto: channels_first for fp32 on a GPU)",
    )
    p.add_argument(
        "--params",
        default=None,
        help="tpubench's --params, e.g. padding=same (the ResNets' Keras padding, for comparison)",
    )
    p.add_argument(
        "--tf_cnn_optimizer",
        default="momentum",
        help="tf_cnn --optimizer (tpubench's resnet50 trains with momentum 0.9; tf_cnn's "
        "default is plain sgd)",
    )
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    p.add_argument("--output", default=None, help="write the JSON summary here")
    p.add_argument("--logs_dir", default=None)
    args = p.parse_args(argv)
    args.contenders = [c for c in args.contenders.split(",") if c]
    for c in args.contenders:
        if c not in CONTENDERS:
            p.error(f"--contenders: unknown {c!r}; accepted: {', '.join(CONTENDERS)}")
    cells = []
    for item in (x for x in args.cells.split(",") if x):
        precision, _, xla = item.partition(":")
        if precision not in PRECISIONS or xla not in ("", "xla"):
            p.error(
                f"--cells: {item!r}; accepted: PRECISION or PRECISION:xla, PRECISION in "
                f"{', '.join(PRECISIONS)}"
            )
        cells.append((precision, xla == "xla"))
    args.cells = cells
    if args.steps <= args.steps_per_loop or args.steps % args.steps_per_loop:
        # Keras fit runs whole executions of steps_per_loop steps and stamps each one.
        p.error(
            f"--steps={args.steps} must be a multiple of --steps_per_loop={args.steps_per_loop} "
            "above it"
        )
    return args


def cell_name(cell) -> str:
    precision, xla = cell
    return precision + (" + XLA" if xla else "")


def run_tpubench(cell, args, env, log_path) -> dict:
    precision, xla = cell
    w = overhead.Workload(
        name=args.model,
        model=args.model,
        batch=args.batch_size,
        steps=args.steps,
        steps_per_loop=args.steps_per_loop,
        targets={},
    )
    ns = argparse.Namespace(
        seed=args.seed,
        timeout=args.timeout,
        num_intra_threads=0,
        num_inter_threads=0,
        tpubench_extra=[
            f"--accelerator={args.accelerator}",
            f"--precision={precision}",
            f"--data_format={args.data_format}",
            *([f"--params={args.params}"] if args.params else []),
            # Explicit both ways: unset, bf16 on a GPU would compile with XLA.
            "--xla" if xla else "--noxla",
            *(["--tiny"] if args.tiny else []),
        ],
    )
    return overhead.run_tpubench(w, ns, env, log_path)


def run_keras_fit(cell, args, env, log_path) -> dict:
    precision, xla = cell
    cmd = [
        sys.executable,
        os.path.join(overhead.BENCH_DIR, "_keras_fit.py"),
        f"--model={args.model}",
        f"--batch_size={args.batch_size}",
        f"--steps={args.steps}",
        f"--warmup_steps={args.steps_per_loop}",
        f"--steps_per_execution={args.steps_per_loop}",
        f"--seed={args.seed}",
        f"--precision={precision}",
        f"--jit_compile={'true' if xla else 'false'}",
    ]
    if args.accelerator == "cpu":
        env = dict(env, CUDA_VISIBLE_DEVICES="")
    proc = overhead.run_process(cmd, env, log_path, args.timeout)
    result = overhead._parse_marked(log_path)
    return proc | (result or {"error": "no result line"})


def run_tf_cnn(cell, args, env, log_path) -> dict:
    precision, xla = cell
    ns = argparse.Namespace(tf_cnn_dir=args.tf_cnn_dir)
    script = overhead.tf_cnn_script(ns)
    if script is None:
        return {"error": f"no tf_cnn_benchmarks.py under --tf_cnn_dir={args.tf_cnn_dir}"}
    timed = args.steps - args.steps_per_loop
    device = ["--num_gpus=1", "--local_parameter_device=gpu"]
    if args.accelerator == "cpu":
        device = ["--device=cpu", "--local_parameter_device=cpu"]
    cmd = [
        args.tf_cnn_python,
        script,
        *device,
        f"--model={args.tf_cnn_model}",
        f"--batch_size={args.batch_size}",
        f"--num_batches={timed}",
        f"--num_warmup_batches={args.steps_per_loop}",
        "--variable_update=parameter_server",
        f"--optimizer={args.tf_cnn_optimizer}",
        f"--data_format={args.tf_cnn_data_format if args.accelerator == 'gpu' else 'NHWC'}",
        *(["--use_fp16"] if precision in ("fp16", "bf16") else []),
        *(["--xla_compile"] if xla else []),
    ]
    proc = overhead.run_process(cmd, dict(env, TF_USE_LEGACY_KERAS="1"), log_path, args.timeout)
    return proc | overhead.tf_cnn_result(log_path, timed)


RUNNERS = {"tpubench": run_tpubench, "tf_cnn": run_tf_cnn, "keras_fit": run_keras_fit}


def tf_cnn_cell(cell):
    """The tf_cnn_benchmarks cell a tpubench cell is compared with (bf16 -> fp16)."""
    precision, xla = cell
    return ("fp16" if precision == "bf16" else precision, xla)


def main(argv=None) -> int:
    args = parse_args(argv)
    logs_dir = args.logs_dir or tempfile.mkdtemp(prefix="tpubench-gpu-bench-")
    os.makedirs(logs_dir, exist_ok=True)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1")
    contenders = list(args.contenders)
    if "tf_cnn" in contenders and not args.tf_cnn_dir:
        print("tf_cnn_benchmarks skipped: pass --tf_cnn_dir (bench/README.md)")
        contenders.remove("tf_cnn")
    print(
        f"{args.model}, global batch {args.batch_size}, {args.steps} steps a run "
        f"({args.steps_per_loop} warm-up), {args.rounds} round(s), {args.accelerator}; "
        f"logs in {logs_dir}",
        flush=True,
    )
    runs: dict = {}  # (contender, cell) -> [results]
    done_tf_cnn = set()
    for r in range(args.rounds):
        for i, cell in enumerate(args.cells):
            order = (
                contenders[(r + i) % len(contenders) :] + contenders[: (r + i) % len(contenders)]
            )
            for c in order:
                target = tf_cnn_cell(cell) if c == "tf_cnn" else cell
                if c == "tf_cnn" and (target, r) in done_tf_cnn:
                    continue  # bf16 shares fp16's tf_cnn run
                log_path = os.path.join(
                    logs_dir, f"r{r + 1}-{c}-{cell_name(target).replace(' + ', '-')}.log"
                )
                t0 = time.perf_counter()
                res = RUNNERS[c](target, args, env, log_path)
                rate = res.get("examples_per_sec")
                runs.setdefault((c, target), []).append(res)
                if c == "tf_cnn":
                    done_tf_cnn.add((target, r))
                shown = f"{rate:10.1f} ex/s" if rate else f"FAILED ({res.get('error')})"
                print(
                    f"  round {r + 1}  {cell_name(target):<11} {c:<9} {shown}   "
                    f"({time.perf_counter() - t0:.0f} s; log {log_path})",
                    flush=True,
                )
    summary = table(args, contenders, runs)
    if args.output:
        with open(args.output, "w") as f:
            json.dump({"args": {k: str(v) for k, v in vars(args).items()}, "cells": summary}, f)
    return 0


def _rates(runs, key):
    return [x["examples_per_sec"] for x in runs.get(key, []) if x.get("examples_per_sec")]


def _fmt(rates):
    if not rates:
        return "-"
    med = statistics.median(rates)
    spread = f" ({min(rates):,.0f}-{max(rates):,.0f})" if len(rates) > 1 else ""
    return f"{med:,.0f}{spread}"


def table(args, contenders, runs) -> list[dict]:
    """Prints one row per cell: medians (spread) and tpubench's ratios; returns the rows."""
    head = ["cell", *contenders, *(f"tpubench/{c}" for c in contenders if c != "tpubench")]
    rows, out = [], []
    for cell in args.cells:
        ours = _rates(runs, ("tpubench", cell))
        row = [cell_name(cell)]
        entry = {"cell": cell_name(cell)}
        for c in contenders:
            key = (c, tf_cnn_cell(cell)) if c == "tf_cnn" else (c, cell)
            rates = _rates(runs, key)
            note = " [fp16]" if c == "tf_cnn" and cell[0] == "bf16" else ""
            row.append(_fmt(rates) + (note if rates else ""))
            entry[c] = rates
        for c in contenders:
            if c == "tpubench":
                continue
            key = (c, tf_cnn_cell(cell)) if c == "tf_cnn" else (c, cell)
            theirs = _rates(runs, key)
            if ours and theirs:
                ratio = statistics.median(ours) / statistics.median(theirs)
                row.append(f"{ratio:.2f}x")
                entry[f"ratio_{c}"] = ratio
            else:
                row.append("-")
        rows.append(row)
        out.append(entry)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=True)]
    print()
    print("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)))
    for row in rows:
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)))
    print("images/sec, median of rounds (min-max); [fp16]: tf_cnn_benchmarks has no bf16 mode")
    return out


if __name__ == "__main__":
    sys.exit(main())
