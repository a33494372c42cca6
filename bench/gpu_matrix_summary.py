"""Benchmark aid (not a test): summary.md of one bench/gpu_matrix.sh run, from what it wrote.

    python bench/gpu_matrix_summary.py WORK_DIR [STEP_LEFT_OUT ...]

Reads WORK_DIR/steps.tsv (each step's status, seconds, command), the
bench/gpu.py outputs in json/ (tpubench and tf_cnn_benchmarks images/sec per
cell), the run records in runs/ (direct `tpubench train` steps), the profile
summaries in logs/*-top.log and the study reports under studies/, and prints
one Markdown page.  Figures are copied from those files, never computed
anew, except the tpubench / tf_cnn_benchmarks ratio of medians.
"""

from __future__ import annotations

import csv
import glob
import json
import os
import statistics
import sys


def _median(xs):
    return statistics.median(xs) if xs else None


def _num(x, fmt="{:,.0f}"):
    return fmt.format(x) if isinstance(x, int | float) else "-"


def steps_table(work: str) -> list[str]:
    path = os.path.join(work, "steps.tsv")
    if not os.path.exists(path):
        return ["no steps.tsv"]
    with open(path) as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    out = ["| step | status | seconds | limit |", "| --- | --- | ---: | ---: |"]
    out += [f"| {r['step']} | {r['status']} | {r['seconds']} | {r['limit']} |" for r in rows]
    return out


def bench_table(work: str) -> list[str]:
    out = [
        "| step | cell | tpubench | tf_cnn_benchmarks | ratio |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    n = 0
    for path in sorted(glob.glob(os.path.join(work, "json", "*.json"))):
        name = os.path.splitext(os.path.basename(path))[0]
        with open(path) as f:
            doc = json.load(f)
        model = doc.get("args", {}).get("model", "?")
        batch = doc.get("args", {}).get("batch_size", "?")
        for cell in doc.get("cells", []):
            ours, theirs = _median(cell.get("tpubench")), _median(cell.get("tf_cnn"))
            ratio = f"{ours / theirs:.2f}x" if ours and theirs else "-"
            note = " (its fp16)" if theirs and cell["cell"].startswith("bf16") else ""
            out.append(
                f"| {name} | {model} {cell['cell']}, batch {batch} | {_num(ours)} | "
                f"{_num(theirs)}{note} | {ratio} |"
            )
            n += 1
    return out if n else ["no bench/gpu.py results"]


def runs_table(work: str) -> list[str]:
    out = [
        "| step | model | precision | XLA | examples/sec | status | note |",
        "| --- | --- | --- | --- | ---: | --- | --- |",
    ]
    n = 0
    for path in sorted(glob.glob(os.path.join(work, "runs", "*", "*.json"))):
        step = os.path.basename(os.path.dirname(path))
        with open(path) as f:
            rec = json.load(f)
        cfg, res = rec.get("config") or {}, rec.get("results") or {}
        notes = []
        if rec.get("xla_default"):
            notes.append("XLA by default (no --xla flag)")
        if rec.get("xla_scope"):
            notes.append(f"xla_scope {rec['xla_scope']}")
        rnn = (rec.get("recurrent") or {}).get("implementation")
        if rnn:
            notes.append(f"recurrent: {rnn}")
        if rec.get("error"):
            notes.append(str(rec["error"])[:120])
        out.append(
            f"| {step} | {cfg.get('model', '?')} | {cfg.get('precision', '?')} | "
            f"{cfg.get('xla')} | {_num(res.get('examples_per_sec'), '{:,.1f}')} | "
            f"{rec.get('status')} | {'; '.join(notes)} |"
        )
        n += 1
    return out if n else ["no run records"]


def _bench_rates(work: str, step: str, contender: str) -> float | None:
    path = os.path.join(work, "json", f"{step}.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        cells = json.load(f).get("cells", [])
    return _median(cells[0].get(contender)) if cells else None


def _record_rate(work: str, step: str) -> float | None:
    for path in glob.glob(os.path.join(work, "runs", step, "*.json")):
        with open(path) as f:
            return ((json.load(f).get("results") or {}).get("examples_per_sec")) or None
    return None


def bf16_against_fp16(work: str) -> list[str]:
    """Issue 31's item 2: ResNet-50 bf16, each way it ran, over fp16 without XLA."""
    ours, theirs = (
        _bench_rates(work, "r50-fp16", "tpubench"),
        _bench_rates(work, "r50-fp16", "tf_cnn"),
    )
    rows = [
        ("bf16 --noxla", _bench_rates(work, "r50-bf16-noxla", "tpubench")),
        ("bf16, no XLA flag (GPU: XLA)", _record_rate(work, "r50-bf16-default")),
        ("bf16 --noxla, XLA auto-clustering", _record_rate(work, "r50-bf16-autojit")),
    ]
    out = [
        "| ResNet-50 | images/sec | / tpubench fp16 | / tf_cnn_benchmarks fp16 |",
        "| --- | ---: | ---: | ---: |",
    ]
    for label, rate in rows:
        a = f"{rate / ours:.2f}x" if rate and ours else "-"
        b = f"{rate / theirs:.2f}x" if rate and theirs else "-"
        out.append(f"| {label} | {_num(rate)} | {a} | {b} |")
    return out


def profiles(work: str) -> list[str]:
    out = []
    for path in sorted(glob.glob(os.path.join(work, "logs", "*-top.log"))):
        with open(path) as f:
            lines = f.read().splitlines()
        # From the summary's first line on: TensorFlow's start-up lines are left out.
        start = next((i for i, x in enumerate(lines) if x.startswith("profile: ")), len(lines))
        shown = lines[start : start + 40] or lines[-5:]
        out += [f"### {os.path.basename(path)[:-4]}", "", "```", *shown, "```", ""]
    return out or ["no profile summaries"]


def studies(work: str) -> list[str]:
    found = sorted(glob.glob(os.path.join(work, "studies", "*", "**", "*.md"), recursive=True))
    return [f"- {os.path.relpath(p, work)}" for p in found] or ["no study reports"]


def main(argv: list[str]) -> int:
    work, left_out = argv[0], argv[1:]
    lines = ["# bench/gpu_matrix.sh", "", "## Steps", "", *steps_table(work)]
    if left_out:
        lines += [
            "",
            f"Not run (budget): {', '.join(left_out)}. Next time: "
            f"`bash bench/gpu_matrix.sh --only={','.join(left_out)}`",
        ]
    lines += ["", "## tpubench vs tf_cnn_benchmarks (images/sec, median)", "", *bench_table(work)]
    lines += ["", "## tpubench train runs", "", *runs_table(work)]
    lines += ["", "## bf16 against fp16 without XLA", "", *bf16_against_fp16(work)]
    lines += ["", "## Profiles (top kernels by time)", "", *profiles(work)]
    lines += ["## Study reports", "", *studies(work)]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
