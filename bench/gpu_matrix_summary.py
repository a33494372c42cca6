"""Benchmark aid (not a test): summary.md of one bench/gpu_matrix.sh run, from what it wrote.

    python bench/gpu_matrix_summary.py WORK_DIR [STEP_LEFT_OUT ...]

Reads WORK_DIR/steps.tsv (each step's status, seconds, note, command),
matrix.json (the options of the run), the bench/gpu.py outputs in json/
(tpubench and tf_cnn_benchmarks images/sec per cell), the run records in
runs/ (direct `tpubench train` steps), the profile summaries in
logs/*-top.log, and for each study step its passes.json (runs per cell, and
the runs a verdict needs) and its report's findings under studies/, and
prints one Markdown page.  Figures are copied from those files, never
computed anew, except the tpubench / tf_cnn_benchmarks ratio of medians.
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


def _step_names(work: str) -> list[str]:
    try:
        with open(os.path.join(work, "steps.tsv")) as f:
            return [r["step"] for r in csv.DictReader(f, delimiter="\t")]
    except OSError:
        return []


def steps_table(work: str) -> list[str]:
    path = os.path.join(work, "steps.tsv")
    if not os.path.exists(path):
        return ["no steps.tsv"]
    with open(path) as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    out = ["| step | status | seconds | limit | note |", "| --- | --- | ---: | ---: | --- |"]
    out += [
        f"| {r['step']} | {r['status']} | {r['seconds']} | {r['limit']} | {r.get('note') or ''} |"
        for r in rows
    ]
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
        where = rec.get("placement") or {}
        if where.get("strategy") in ("central_storage", "parameter_server"):
            notes.append(
                f"{where['strategy']}: variables on {where.get('variable_device')}, "
                f"replicas {', '.join(where.get('devices') or [])}"
            )
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


def _findings(report: str) -> list[str]:
    """The lines of a study report's `## Findings` section."""
    with open(report) as f:
        text = f.read()
    section = text.split("\n## Findings\n", 1)[1:] or [""]
    body = section[0].split("\n## ", 1)[0]
    return [x for x in body.splitlines() if x.startswith("- ")]


def studies(work: str) -> list[str]:
    """Each study step: its cells' runs against the runs a verdict needs, and its findings."""
    out = []
    order = {name: i for i, name in enumerate(_step_names(work))}  # in the order they ran
    found = glob.glob(os.path.join(work, "studies", "*", "passes.json"))
    for path in sorted(
        found, key=lambda p: (order.get(os.path.basename(os.path.dirname(p)), 1e9), p)
    ):
        where = os.path.dirname(path)
        with open(path) as f:
            doc = json.load(f)
        cells = doc.get("cells") or {}
        runs = [c.get("runs", 0) for c in cells.values()]
        failed = [c["cell"] for c in cells.values() if c.get("failed")]
        needed, repeats = doc.get("needed", 1), doc.get("repeats")
        out += [
            f"### {os.path.basename(where)} ({doc.get('study')}, --scale={doc.get('scale')})",
            "",
        ]
        if not cells:
            out += ["No cell of it runs on this host.", ""]
        else:
            fewest = min(runs)
            out.append(
                f"{len(cells)} cell(s) run here; runs per cell: {fewest}"
                + (f"-{max(runs)}" if max(runs) != fewest else "")
                + f", of the {needed} a verdict needs"
                + (f" (the study's repeats: {repeats}; this step aimed at {doc.get('aimed')})")
                + "."
            )
            if doc.get("scale") == "smoke":
                out.append("At --scale=smoke no finding is judged.")
            elif fewest < needed:
                out.append(
                    f"**Fewer runs than a verdict needs** ({fewest} of {needed}): the budget or "
                    "the step's --repeats allowed no more, so no finding is judged from these "
                    "cells: one whose cells all ran reads "
                    f'"not judged (needs {needed} runs per cell; has {fewest})".'
                )
            if doc.get("stopped"):
                out.append(f"Passes ended early: {doc['stopped']}.")
            if failed:
                out.append(f"Failed: {'; '.join(failed)} (logs under its logs/).")
            out.append("")
        reports = sorted(glob.glob(os.path.join(where, "report", "*.md")))
        for report in reports:
            found = _findings(report)
            out += [f"Report: {os.path.relpath(report, work)}", ""]
            out += (["Findings:", "", *found] if found else ["No finding reads these cells."]) + [
                ""
            ]
        if not reports:
            out += ["No report written (see the step's log).", ""]
    return out or ["no study steps"]


def next_calls(work: str, left_out: list[str]) -> list[str]:
    """What runs the steps this call did not: the ones the budget cut, then --more."""
    try:
        with open(os.path.join(work, "matrix.json")) as f:
            run = json.load(f)
    except (OSError, ValueError):
        run = {}
    out = []
    if left_out:
        out += [
            "",
            f"Not run (budget): {', '.join(left_out)}. Next time: "
            f"`bash bench/gpu_matrix.sh --only={','.join(left_out)}`",
        ]
    if run and not run.get("more") and not run.get("only"):
        out += [
            "",
            "Behind this list: `bash bench/gpu_matrix.sh --more` (`--list --more` prints those "
            "steps and their limits).",
        ]
    return out


def main(argv: list[str]) -> int:
    work, left_out = argv[0], argv[1:]
    lines = ["# bench/gpu_matrix.sh", "", "## Steps", "", *steps_table(work)]
    lines += next_calls(work, left_out)
    lines += ["", "## Studies: runs per cell and findings", "", *studies(work)]
    lines += ["", "## tpubench vs tf_cnn_benchmarks (images/sec, median)", "", *bench_table(work)]
    lines += ["", "## tpubench train runs", "", *runs_table(work)]
    lines += ["", "## bf16 against fp16 without XLA", "", *bf16_against_fp16(work)]
    lines += ["", "## Profiles (top kernels by time)", "", *profiles(work)]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
