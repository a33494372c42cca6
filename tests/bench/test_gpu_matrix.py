"""bench/gpu_matrix.sh, the prepared GPU run, rehearsed on CPU so the first GPU call succeeds.

The GPU machine comes for minutes at a time; what must not fail there is
checked here: the default list starts with what only a GPU answers (the
seeds' one-GPU study cells: gpu_host_sizing's vCPU knee, the strategies
cells on one GPU with the parameter server's variables on the GPU and on
the CPU, cpu_vs_gpu's GPU cells), then the tf_cnn_benchmarks comparison,
and its limits add up to at most the budget; every step the issue asks for
is in the default list or behind --more; every tpubench, bench/gpu.py and
bench/study_cells.py command line it builds is accepted; bad arguments are
one line and exit 2; a step the budget cannot hold is recorded as skipped
(budget) with the command that runs it next time; a study step the budget
cuts still leaves its records, its report and what it ran; and a rehearsal
on CPU (tiny models) of the new study steps, the parameter-server run and
the ResNet-50 bf16 run and profile leaves exactly one tarball holding the
records, the reports and the summary.
"""

from __future__ import annotations

import csv
import io
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
import tarfile

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "gpu_matrix.sh"
BUDGET = 540  # the default --budget: the device gives one command 600 s

sys.path.insert(0, str(ROOT / "bench"))
import study_cells  # noqa: E402 - bench/study_cells.py: no TensorFlow

sys.path.remove(str(ROOT / "bench"))


def _run(*args, tmp_path, timeout=600):
    env = dict(os.environ, PYTHON=sys.executable, PYTHONPATH=str(ROOT), TMPDIR=str(tmp_path))
    env.pop("OUT", None)
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=timeout,
    )


def _listing(tmp_path, *args) -> tuple[list[tuple[str, int, list[str]]], int, str]:
    """--list output -> ([(step, limit seconds, argv)] in order, the total line's seconds, it)."""
    proc = _run("--list", *args, tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    m = re.match(r"total\s+(\d+)s\s+(.*)$", lines[-1])
    assert m, lines[-1]
    steps = []
    for line in lines[:-1]:
        s = re.match(r"(\S+)\s+(\d+)s\s+(.*)$", line)
        assert s, line
        steps.append((s.group(1), int(s.group(2)), shlex.split(s.group(3))))
    return steps, int(m.group(1)), m.group(2)


def _steps(tmp_path, *args) -> dict[str, tuple[int, list[str]]]:
    return {name: (limit, argv) for name, limit, argv in _listing(tmp_path, *args)[0]}


def _tarball(out_dir: pathlib.Path) -> tarfile.TarFile:
    files = list(out_dir.iterdir())
    assert len(files) == 1 and files[0].name.endswith(".tar.gz"), files
    return tarfile.open(files[0])


def _member(tar: tarfile.TarFile, suffix: str) -> str:
    names = [n for n in tar.getnames() if n.endswith(suffix)]
    assert names, (suffix, tar.getnames())
    return tar.extractfile(names[0]).read().decode()


def _rows(tar: tarfile.TarFile) -> dict[str, dict]:
    return {
        r["step"]: r for r in csv.DictReader(io.StringIO(_member(tar, "steps.tsv")), delimiter="\t")
    }


def _kind(argv: list[str]) -> str:
    """study, ps_train, train, bench or other: what a listed command runs."""
    if argv[1:3] == ["bench/study_cells.py", "run"]:
        return "study"
    if argv[1:4] == ["-m", "tpubench", "train"]:
        return "ps_train" if "--strategy=central_storage" in argv else "train"
    if argv[1:2] == ["bench/gpu.py"]:
        return "bench"
    return "other"


def test_the_default_list_is_the_one_gpu_study_cells_then_tf_cnn_within_the_budget(tmp_path):
    steps, total, said = _listing(tmp_path)
    names = [name for name, _, _ in steps]
    # (b) the arithmetic: the total line is the sum of the limits, within the budget
    assert total == sum(limit for _, limit, _ in steps) <= BUDGET, (total, steps)
    assert said == f"{len(steps)} steps; budget {BUDGET}s"
    # (a) the order: facts, the seeds' one-GPU cells, then the tf_cnn_benchmarks comparison
    assert names[:6] == [
        "facts",
        "study-gpu_host_sizing",
        "study-strategies",
        "strategies-ps_gpu",
        "strategies-ps_cpu",
        "study-cpu_vs_gpu",
    ], names
    kinds = [_kind(argv) for _, _, argv in steps[1:]]
    first_bench = kinds.index("bench")
    assert set(kinds[:first_bench]) == {"study", "ps_train"}, kinds
    assert kinds[first_bench:] == ["bench"] * (len(kinds) - first_bench), kinds
    for _, _, argv in steps[1 + first_bench :]:
        assert "--contenders=tpubench,tf_cnn" in argv
    by = dict((n, a) for n, _, a in steps)
    # The seeds' parameter server on ONE GPU, its variables on that GPU and on the CPU.
    for name, where in (("strategies-ps_gpu", "gpu"), ("strategies-ps_cpu", "cpu")):
        argv = by[name]
        for flag in (
            "--accelerator=gpu",
            "--num_gpus=1",
            "--strategy=central_storage",
            f"--parameter_device={where}",
            "--optimizer=sgd",
        ):
            assert flag in argv, (name, flag, argv)
    # Every study step runs at full scale, its passes within the step's own limit.
    for _name, limit, argv in steps:
        if _kind(argv) == "study":
            assert f"--seconds={limit}" in argv and "--max_devices=1" in argv, argv
    assert not list(tmp_path.iterdir())  # a listing leaves nothing behind


def test_the_knee_step_selects_the_1_to_16_vcpu_cells_of_one_gpu(tmp_path):
    argv = _steps(tmp_path)["study-gpu_host_sizing"][1]
    args = study_cells.parse(argv[2:])
    out = tmp_path / "knee.yaml"
    small = study_cells.write_cut(args["name"], str(out), args)
    (part,) = small["parts"]
    assert part["name"] == "train" and part["data"] == ["jpeg"]
    assert part["models"] == ["resnet50", "alexnet"]
    assert [s["vcpus"] for s in part["setups"]] == [1, 2, 4, 8, 16]
    assert {s["device"] for s in part["setups"]} == {"gpu"}
    full = part["scale"]["full"]
    assert full["train_steps"] == 40 and full["batch_size"] == 64
    # The finding it answers is kept; the study's repeats stay what a verdict needs.
    assert [f["check"]["kind"] for f in small["findings"]] == ["knee"]
    assert "repeats" not in small or small["repeats"] >= 2
    from tpubench.study import api
    from tpubench.study.run import cells

    study = api.load(str(out), api.Options(), run=True)
    assert len(cells.expand(study, "full")) == 10
    assert study.runs_per_cell("full") == 3


def test_the_cut_keeps_what_it_names_and_rewrites_setups_for_a_rehearsal(tmp_path):
    out = str(tmp_path / "s.yaml")
    args = study_cells.parse(
        ["cut", "strategies", out, "--device=gpu", "--max_devices=1", "--as_device=cpu"]
    )
    small = study_cells.write_cut(args["name"], out, args)
    assert [s["label"] for p in small["parts"] for s in p["setups"]] == ["1 GPU"]
    assert small["parts"][0]["setups"][0]["device"] == "cpu"
    assert "findings" not in small  # each reads two methods or more: none is left
    # `auto` setups (the GPU where there is one) are GPU setups.
    args = study_cells.parse(["cut", "gpu_host_sizing", out, "--device=gpu", "--part=infer"])
    small = study_cells.write_cut(args["name"], out, args)
    assert [s["vcpus"] for s in small["parts"][0]["setups"]] == [1, 2, 4, 8]
    assert study_cells.write_cut("tpu_vs_gpu", out, {"device": "tpu"})
    assert yaml.safe_load(pathlib.Path(out).read_text())["parts"][0]["setups"][0]["label"] == (
        "Cloud TPU"
    )
    assert study_cells.write_cut("tpu_vs_gpu", out, {"models": "vgg16"}) is None
    # --set: in each part whose command takes the flag; a flag no command takes is refused.
    sel = {"part": "train,infer", "scale": "full", "set": {"train_steps": 4, "num_batches": 2}}
    small = study_cells.write_cut("gpu_host_sizing", out, sel)
    full = {p["name"]: p["scale"]["full"] for p in small["parts"]}
    assert full["train"]["train_steps"] == 4 and "num_batches" not in full["train"]
    assert full["infer"]["num_batches"] == 2 and "train_steps" not in full["infer"]
    with pytest.raises(study_cells.errors.UsageError, match="train_step"):
        study_cells.write_cut("gpu_host_sizing", out, dict(sel, set={"train_step": 4}))
    for bad in (
        ["cut", "x"],
        ["run", "x"],
        ["cut", "x", "y", "--bogus=1"],
        ["cut", "x", "y", "--set=a=1"],
    ):
        with pytest.raises(study_cells.errors.UsageError):
            study_cells.parse(bad)


def test_every_step_of_the_issue_is_in_the_default_list_or_behind_more(tmp_path):
    default = _steps(tmp_path)
    more, total, said = _listing(tmp_path, "--more")
    assert total == sum(limit for _, limit, _ in more) and "over the budget" in said
    assert not set(default) & {name for name, _, _ in more}
    steps = {**default, **{name: (limit, argv) for name, limit, argv in more}}
    for name in (
        "facts",
        "r50-fp32",
        "r50-fp16",
        "r50-bf16-noxla",
        "r50-bf16-default",  # bf16 + XLA, by the new GPU default
        "r50-fp16-xla",
        "r50-fp32-xla",
        "r50-bf16-autojit",
        "profile-bf16",
        "profile-bf16-top",
        "test-gpu",
        "bilstm1024",
        "inception3-fp16-xla",
        "resnet152-fp16-xla",
        "alexnet-fp16-xla",
        "vgg16-fp16-xla",
        "study-gpu_host_sizing",
        "study-strategies",
        "strategies-ps_gpu",
        "strategies-ps_cpu",
        "study-cnn_scaling",
        "study-tpu_vs_gpu",
        "study-cpu_vs_gpu",
    ):
        assert name in steps, (name, sorted(steps))
    assert all(0 < limit <= BUDGET for limit, _ in steps.values())
    # --only picks steps from either list.
    only = _steps(tmp_path, "--only=facts,alexnet-fp16-xla")
    assert list(only) == ["facts", "alexnet-fp16-xla"]
    alexnet = steps["alexnet-fp16-xla"][1]
    assert "--batch_size=512" in alexnet and "--contenders=tpubench,tf_cnn" in alexnet
    assert "--accelerator=gpu" in steps["r50-bf16-default"][1]
    assert not any(a.startswith("--xla") or a == "--noxla" for a in steps["r50-bf16-default"][1])
    assert "--noxla" in steps["profile-bf16"][1]


def test_every_command_line_is_accepted_by_the_tool_it_calls(tmp_path):
    steps = {**_steps(tmp_path), **_steps(tmp_path, "--more")}
    known = json.loads(
        subprocess.run(
            [sys.executable, "-m", "tpubench.cli.flags", "train"],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        ).stdout
    )
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import gpu as gpu_bench  # bench/gpu.py: argparse only, no TensorFlow
    finally:
        sys.path.remove(str(ROOT / "bench"))
    trains = benches = studies = 0
    for name, (_, argv) in steps.items():
        if argv[0] == "env":  # env VAR=VALUE ... COMMAND
            argv = [a for a in argv[1:] if not re.match(r"[A-Z_]+=", a)]
        kind = _kind(argv)
        if kind in ("train", "ps_train"):
            flags = [a[2:].split("=")[0] for a in argv[4:]]
            unknown = [f for f in flags if f not in known and f.removeprefix("no") not in known]
            assert not unknown, (name, unknown)
            trains += 1
        elif kind == "bench":
            args = gpu_bench.parse_args(argv[2:])  # exits 2 on a flag it does not take
            assert args.contenders[0] == "tpubench", name
            benches += 1
        elif kind == "study":
            args = study_cells.parse(argv[2:])  # a UsageError on a key it does not take
            out = tmp_path / f"{name}.yaml"
            assert study_cells.write_cut(args["name"], str(out), args), name  # cells selected
            from tpubench.study import api

            api.load(str(out), api.Options(), run=True)  # `tpubench study run`'s checks
            studies += 1
    assert trains >= 5 and benches >= 9 and studies >= 6, (trains, benches, studies)


def test_a_bad_argument_is_one_line_and_exit_2(tmp_path):
    for bad in ("--accelerator=tpu", "--budget=ten", "--bogus"):
        proc = _run(bad, tmp_path=tmp_path)
        assert proc.returncode == 2
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and bad.split("=")[-1] in lines[0] and "accepted" in lines[0]
    assert not list(tmp_path.iterdir())


def test_a_step_the_budget_cuts_is_recorded_with_the_command_for_next_time(tmp_path):
    out = tmp_path / "out"
    proc = _run("--budget=0", "--only=facts,bilstm1024", f"--out={out}", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    tar = _tarball(out)
    rows = list(csv.DictReader(io.StringIO(_member(tar, "steps.tsv")), delimiter="\t"))
    assert [(r["step"], r["status"]) for r in rows] == [
        ("facts", "skipped (budget)"),
        ("bilstm1024", "skipped (budget)"),
    ]
    assert rows[0]["note"] == "budget: 0s left of the 20s it needs"
    summary = _member(tar, "summary.md")
    assert "`bash bench/gpu_matrix.sh --only=facts,bilstm1024`" in summary
    assert "--more`" not in summary  # an --only run has no list behind it
    assert summary in proc.stdout  # the summary also comes back on the console
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # work folders removed


def test_the_knee_rehearses_on_cpu_and_a_step_the_budget_cannot_hold_is_skipped(tmp_path):
    """gpu_host_sizing's knee, rehearsed on CPU (a 2-core host runs its 1 and 2 vCPU cells),
    under a budget that holds it, or part of it, but not the step after it."""
    out = tmp_path / "out"
    proc = _run(
        "--accelerator=cpu",
        "--tiny",
        "--budget=90",
        "--only=study-gpu_host_sizing,resnet152-fp16-xla",
        f"--out={out}",
        tmp_path=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    tar = _tarball(out)
    rows = _rows(tar)
    assert rows["study-gpu_host_sizing"]["status"] == "ok", rows
    assert rows["resnet152-fp16-xla"]["status"] == "skipped (budget)", rows
    passes = json.loads(_member(tar, "study-gpu_host_sizing/passes.json"))
    assert passes["study"] == "gpu_host_sizing" and passes["scale"] == "full"
    assert passes["needed"] == 3 and passes["aimed"] == 1  # the rehearsal: one run per cell
    ran = {c["cell"]: c["runs"] for c in passes["cells"].values()}
    assert set(ran) <= {
        f"train: {m} · jpeg · {n} vCPU" for m in ("resnet50", "alexnet") for n in (1, 2, 4, 8, 16)
    }
    assert ran.get("train: resnet50 · jpeg · 1 vCPU") == 1, passes  # one model's cells first
    records = [n for n in tar.getnames() if "/studies/study-gpu_host_sizing/" in n]
    assert any(re.search(r"/\d{8}-\d{6}-resnet50-\w+\.json$", n) for n in records), records
    report = _member(tar, "study-gpu_host_sizing/report/gpu_host_sizing-full.md")
    assert "one GPU needs about 4 vCPUs to train image models" in report
    assert "\n| resnet50 · jpeg · cpu |" in report  # the knee table, rehearsed on the CPU
    summary = _member(tar, "summary.md")
    assert "### study-gpu_host_sizing (gpu_host_sizing, --scale=full)" in summary
    assert "**Fewer runs than a verdict needs** (" in summary and "of 3)" in summary
    assert "- one GPU needs about 4 vCPUs" in summary  # the findings, copied
    assert "`bash bench/gpu_matrix.sh --only=resnet152-fp16-xla`" in summary
    assert not any("/data/" in n or "model_dirs" in n for n in tar.getnames())


def test_a_study_step_out_of_time_still_writes_what_it_ran_and_its_report(tmp_path):
    where = tmp_path / "strategies"
    args = ["run", "strategies", "--device=gpu", "--max_devices=1", "--as_device=cpu"]
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "study_cells.py"), *args]
        + [f"--results_dir={where}", f"--seconds={study_cells.RESERVE + 5}"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    passes = json.loads((where / "passes.json").read_text())
    assert passes["stopped"].startswith("budget: ") and passes["needed"] == 3
    assert [c["runs"] for c in passes["cells"].values()] == [0] * len(passes["cells"])
    assert (where / "report" / "strategies-full.md").exists()
    assert (tmp_path / "strategies.yaml").exists()  # the cut it ran, beside its results


def test_cpu_rehearsal_packs_the_records_reports_profile_and_summary_into_one_tarball(tmp_path):
    out = tmp_path / "out"
    proc = _run(
        "--accelerator=cpu",
        "--tiny",
        "--only=study-strategies,strategies-ps_gpu,r50-bf16-default,profile-bf16",
        f"--out={out}",
        tmp_path=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    tar = _tarball(out)
    rows = _rows(tar)
    assert {k: r["status"] for k, r in rows.items()} == {
        "study-strategies": "ok",
        "strategies-ps_gpu": "ok",
        "r50-bf16-default": "ok",
        "profile-bf16": "ok",
        "profile-bf16-top": "ok",
    }
    # --parameter_device=gpu is refused on a CPU: the rehearsal runs what a CPU takes, and says so.
    assert rows["strategies-ps_gpu"]["note"].startswith("CPU rehearsal: --parameter_device=cpu")
    assert "--parameter_device=cpu" in rows["strategies-ps_gpu"]["command"]
    ps = json.loads(
        _member(tar, next(n for n in tar.getnames() if "/runs/strategies-ps_gpu/" in n))
    )
    assert ps["status"] == "ok" and ps["placement"]["strategy"] == "central_storage"
    # The strategies study's one-GPU cell, run once and reported (the study's repeats: 3).
    passes = json.loads(_member(tar, "study-strategies/passes.json"))
    assert [c["cell"] for c in passes["cells"].values()] == ["train: resnet50 · synthetic · 1 GPU"]
    assert [c["runs"] for c in passes["cells"].values()] == [1] and passes["needed"] == 3
    assert "| resnet50 |" in _member(tar, "study-strategies/report/strategies-full.md")
    rec = json.loads(
        _member(
            tar, next(n for n in tar.getnames() if "/runs/r50-bf16" in n and n.endswith(".json"))
        )
    )
    assert rec["status"] == "ok" and rec["config"]["precision"] == "bf16"
    # On a CPU an unset --xla stays off (XLA slows CPUs down); on a GPU bf16 turns it on.
    assert rec["config"]["xla"] is False and "xla_default" not in rec
    top = _member(tar, "profile-bf16-top.log")
    assert "2 step(s) profiled" in top and "ms a step" in top
    assert re.search(r"batch norm / \S*(FusedBatchNorm|TpubenchBatchNorm)", top), top
    summary = _member(tar, "summary.md")
    assert re.search(
        r"\| r50-bf16-default \| resnet50 \| bf16 \| False \| [\d,.]+ \| ok \|", summary
    )
    assert re.search(
        r"\| strategies-ps_gpu \| resnet50 \| fp32 \| False \| [\d,.]+ \| ok \| "
        r"central_storage: variables on /device:CPU:0",
        summary,
    )
    assert "### study-strategies (strategies, --scale=full)" in summary
    assert "runs per cell: 1, of the 3 a verdict needs" in summary
    assert "### profile-bf16-top" in summary
    # Issue 31's item 2 in one table; the fp16 columns wait for the r50-fp16 step.
    assert re.search(r"\| bf16, no XLA flag \(GPU: XLA\) \| [\d,]+ \| - \| - \|", summary)
    assert any(n.endswith(".xplane.pb") and "/profiles/profile-bf16/" in n for n in tar.getnames())
    assert not any("checkpoint" in n for n in tar.getnames())  # model dirs stay out
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_the_summary_says_when_a_study_ran_fewer_times_than_a_verdict_needs(tmp_path):
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import gpu_matrix_summary as summary
    finally:
        sys.path.remove(str(ROOT / "bench"))
    where = tmp_path / "studies" / "study-x"
    (where / "report").mkdir(parents=True)
    cells = {f"x-{i}": {"cell": f"train: m · jpeg · {i} vCPU", "runs": 1} for i in (1, 2)}
    doc = {"study": "x", "scale": "full", "repeats": 3, "needed": 3, "aimed": 3, "cells": cells}
    doc["stopped"] = "budget: 9s left in pass 2, under the 30s a run of m may take"
    (where / "passes.json").write_text(json.dumps(doc))
    verdict = "- a knee (band: 4 vCPUs) — knee 2: **not judged (needs 3 runs per cell; has 1)**"
    (where / "report" / "x-full.md").write_text(f"# x\n\n## Findings\n\n{verdict}\n\n## Cells\n")
    text = "\n".join(summary.studies(str(tmp_path)))
    assert "2 cell(s) run here; runs per cell: 1, of the 3 a verdict needs" in text
    assert "**Fewer runs than a verdict needs** (1 of 3)" in text
    assert "Passes ended early: budget: 9s left in pass 2" in text
    assert verdict in text


@pytest.mark.slow
def test_the_whole_matrix_rehearses_on_cpu(tmp_path):
    for more in ((), ("--more",)):
        out = tmp_path / f"out{len(more)}"
        proc = _run(
            "--accelerator=cpu",
            "--tiny",
            "--budget=9000",
            *more,
            f"--out={out}",
            tmp_path=tmp_path,
            timeout=9600,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        rows = _rows(_tarball(out))
        bad = [(name, r["status"]) for name, r in rows.items() if r["status"] != "ok"]
        assert not bad, bad
        assert list(rows) == list(_steps(tmp_path, *more))
