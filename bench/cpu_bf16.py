"""bf16 against fp32 on this CPU, side by side in one run: the ratio and each one's share of peak.

Each round runs `tpubench train` (or `tpubench infer`) once per contender, in
a fresh process, the contenders' order turning each round: fp32, then bf16
(and any `--variant` you add: a bf16 run with extra flags or environment,
e.g. an attempt from docs/cpu.md).  It prints every run's examples/s and MFU
(the record's, against the measured peak of that precision: `tpubench
peak`), each contender's median with its range, and each contender's ratio
to fp32 paired by round (median and range): the figure the goal is judged by.

    .venv/bin/python bench/cpu_bf16.py                       # ResNet-50 training, 3 rounds
    .venv/bin/python bench/cpu_bf16.py --mode=infer          # inference, 20 batches a run
    .venv/bin/python bench/cpu_bf16.py --model=alexnet --rounds=5
    .venv/bin/python bench/cpu_bf16.py --variant='bf16-b64:--precision=bf16 --batch_size=64:'
    .venv/bin/python bench/cpu_bf16.py --no_bf16 \
        --variant='fp32-tf:--precision=fp32 --batch_norm_kernel=tensorflow:'
    .venv/bin/python bench/cpu_bf16.py --no_bf16 --mode=infer \
        --variant='zendnn:--precision=fp32 --cpu_kernels=zendnn::.venv-zendnn/bin/python'

A variant's fourth field names the Python that runs it (another environment:
AMD's ZenDNN plug-in lives in its own, `make zendnn`; bench/cpu_zendnn.py
sets that comparison up).

Figures are only meaningful on a quiet machine: the script prints the other
processes' CPU use during each run (the run's own left out) and says
AMX's state as the record gives it (usable, listed but not permitted, absent).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import psutil


def _args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="resnet50")
    p.add_argument("--mode", choices=("train", "infer"), default="train")
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--steps", type=int, default=12, help="train steps (train) per run")
    p.add_argument("--steps_per_loop", type=int, default=4)
    p.add_argument("--num_batches", type=int, default=20, help="timed batches per run (infer)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument(
        "--variant",
        action="append",
        default=[],
        help="LABEL:FLAGS:ENV[:PYTHON], e.g. 'big-batch:--precision=bf16 --batch_size=64:' "
        "(flags space-separated; ENV as NAME=VALUE,NAME=VALUE; PYTHON: the interpreter "
        "of another environment, default this one)",
    )
    p.add_argument(
        "--baseline",
        default="fp32:--precision=fp32",
        help="LABEL:FLAGS of the contender every ratio is to (default fp32:--precision=fp32)",
    )
    p.add_argument(
        "--no_bf16",
        action="store_true",
        help="leave the bf16 contender out: fp32 against fp32 variants only (on a CPU "
        "without native bf16, where bf16 runs are too slow to be worth timing)",
    )
    p.add_argument("--output", default=None, help="write every run's figures here (JSON)")
    return p.parse_args(argv)


def contenders(args) -> dict[str, tuple[list[str], dict, str]]:
    """{label: (extra tpubench flags, extra environment, Python)}: fp32, bf16, the variants."""
    here = sys.executable
    base, _, base_flags = args.baseline.partition(":")
    out = {base: (base_flags.split(), {}, here), "bf16": (["--precision=bf16"], {}, here)}
    for text in args.variant:
        label, _, rest = text.partition(":")
        flags, _, rest = rest.partition(":")
        env, _, python = rest.partition(":")
        pairs = [x.split("=", 1) for x in env.split(",") if "=" in x]
        if python and not os.access(python, os.X_OK):
            sys.exit(f"bench/cpu_bf16.py: variant {label}: no Python at {python!r}")
        out[label] = (flags.split(), dict(pairs), python or here)
    if args.no_bf16:
        del out["bf16"]
    return out


def _command(args, flags: list[str], results: str, python: str) -> list[str]:
    cmd = [python, "-P", "-m", "tpubench", args.mode, f"--model={args.model}"]
    cmd += ["--use_synthetic_data", "--accelerator=cpu", f"--batch_size={args.batch_size}"]
    cmd += [f"--results_dir={results}"]
    if args.mode == "train":
        cmd += [f"--train_steps={args.steps}", f"--steps_per_loop={args.steps_per_loop}"]
    else:
        cmd += [f"--num_batches={args.num_batches}"]
    return cmd + flags


def _busy_seconds() -> float:
    t = psutil.cpu_times()
    return t.user + t.system + t.nice


def run_once(
    args, label: str, flags: list[str], env: dict, results: str, python: str = sys.executable
) -> dict:
    before = set(os.listdir(results))
    cmd = _command(args, flags, results, python)
    start, busy0, own0 = time.monotonic(), _busy_seconds(), _children_seconds()
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=3600, env={**os.environ, **env}
    )
    wall, busy = time.monotonic() - start, _busy_seconds() - busy0
    others = max(0.0, busy - (_children_seconds() - own0))  # CPU the run itself did not use
    if proc.returncode != 0:
        sys.exit(f"bench/cpu_bf16.py: {label}: `{' '.join(cmd)}` failed: {proc.stderr[-600:]}")
    new = [n for n in sorted(set(os.listdir(results)) - before) if n.endswith(".json")]
    with open(os.path.join(results, new[-1])) as f:
        record = json.load(f)
    res = record.get("results", {})
    rate = res.get("examples_per_sec") or res.get("predictions_per_sec")
    mfu = (record.get("mfu") or {}).get("mfu")  # None: the record gives none, and says why
    cpu = (record.get("hardware") or {}).get("cpu") or {}
    return {
        "label": label,
        "rate": rate,
        "mfu": mfu,
        "mfu_note": (record.get("mfu") or {}).get("mfu_note"),
        "peak_precision": (record.get("mfu") or {}).get("peak_precision"),
        "amx": cpu.get("amx"),
        "kernels": (record.get("software") or {}).get("cpu_kernels"),
        "others_busy_share": others / max(wall * (psutil.cpu_count() or 1), 1e-9),
        "record": os.path.join(results, new[-1]),
    }


def _children_seconds() -> float:
    """CPU seconds this script's finished children used (the runs themselves)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):,.2f} ({min(xs):,.2f}-{max(xs):,.2f})"


def main(argv=None) -> int:
    args = _args(argv)
    table = contenders(args)
    baseline = next(iter(table))
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="cpu_bf16-") as results:
        for r in range(args.rounds):
            order = list(table)
            order = order[r % len(order) :] + order[: r % len(order)]  # the order turns
            for label in order:
                flags, env, python = table[label]
                got = run_once(args, label, flags, env, results, python)
                got["round"] = r + 1
                runs.append(got)
                mfu = (
                    f"MFU {got['mfu'] * 100:.0f}% of the {got['peak_precision']} peak"
                    if got["mfu"] is not None
                    else f"no MFU ({got['mfu_note'] or 'the record gives none'})"
                )
                print(
                    f"round {r + 1} {label:>12}: {got['rate']:,.2f} examples/s, {mfu}; other "
                    f"processes {got['others_busy_share'] * 100:.0f}% of the CPUs (AMX: "
                    f"{got['amx']}; kernels: {got['kernels']})",
                    flush=True,
                )
    print(f"\n{args.model} {args.mode}, batch {args.batch_size}, {args.rounds} rounds:")
    for label in table:
        mine = [x for x in runs if x["label"] == label]
        rates = [x["rate"] for x in mine]
        mfus = [x["mfu"] * 100 for x in mine if x["mfu"] is not None]
        shown = f"MFU {_spread(mfus)}%" if mfus else "no MFU"
        if mfus and len(mfus) < len(mine):
            shown += f" ({len(mine) - len(mfus)} run(s) without one)"
        line = f"  {label:>12}: {_spread(rates)} examples/s; {shown}"
        if label != baseline:
            base = {x["round"]: x["rate"] for x in runs if x["label"] == baseline}
            ratios = [x["rate"] / base[x["round"]] for x in mine]
            line += f"; {label}/{baseline} {_spread(ratios)}x"
        print(line)
    if args.output:
        with open(args.output, "w") as f:
            json.dump(runs, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
