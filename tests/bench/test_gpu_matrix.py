"""bench/gpu_matrix.sh, the prepared GPU run, rehearsed on CPU so the first GPU call succeeds.

The GPU machine comes for minutes at a time; what must not fail there is
checked here: every step the issue asks for is in the script and fits its
budget, every tpubench and bench/gpu.py command line it builds is accepted
by that tool's flags, bad arguments are one line and exit 2, a step cut by
the budget is recorded with the command that runs it next time, and a
rehearsal on CPU (tiny ResNet-50, bf16) leaves exactly one tarball holding
the run record, the profile's top ops and the summary.
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

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "gpu_matrix.sh"


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


def _steps(listing: str) -> dict[str, tuple[int, list[str]]]:
    """--list output -> {step: (limit seconds, argv)}."""
    out = {}
    for line in listing.splitlines():
        m = re.match(r"(\S+)\s+(\d+)s\s+(.*)$", line)
        assert m, line
        out[m.group(1)] = (int(m.group(2)), shlex.split(m.group(3)))
    return out


def _tarball(out_dir: pathlib.Path) -> tarfile.TarFile:
    files = list(out_dir.iterdir())
    assert len(files) == 1 and files[0].name.endswith(".tar.gz"), files
    return tarfile.open(files[0])


def _member(tar: tarfile.TarFile, suffix: str) -> str:
    names = [n for n in tar.getnames() if n.endswith(suffix)]
    assert names, (suffix, tar.getnames())
    return tar.extractfile(names[0]).read().decode()


def test_the_listing_holds_every_cell_of_the_issue_within_the_budget(tmp_path):
    proc = _run("--list", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    steps = _steps(proc.stdout)
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
        "study-cnn_scaling",
        "study-tpu_vs_gpu",
        "study-cpu_vs_gpu",
    ):
        assert name in steps, (name, sorted(steps))
    assert all(0 < limit <= 540 for limit, _ in steps.values())
    alexnet = steps["alexnet-fp16-xla"][1]
    assert "--batch_size=512" in alexnet and "--contenders=tpubench,tf_cnn" in alexnet
    assert "--accelerator=gpu" in steps["r50-bf16-default"][1]
    assert not any(a.startswith("--xla") or a == "--noxla" for a in steps["r50-bf16-default"][1])
    assert "--noxla" in steps["profile-bf16"][1]
    # Nothing is left in the temporary folder by a listing.
    assert not list(tmp_path.iterdir())


def test_every_command_line_is_accepted_by_the_tool_it_calls(tmp_path):
    steps = _steps(_run("--list", tmp_path=tmp_path).stdout)
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
    trains = benches = 0
    for name, (_, argv) in steps.items():
        if argv[0] == "env":  # env VAR=VALUE ... COMMAND
            argv = [a for a in argv[1:] if not re.match(r"[A-Z_]+=", a)]
        if argv[1:4] == ["-m", "tpubench", "train"]:
            flags = [a[2:].split("=")[0] for a in argv[4:]]
            unknown = [f for f in flags if f not in known and f.removeprefix("no") not in known]
            assert not unknown, (name, unknown)
            trains += 1
        elif argv[1:2] == ["bench/gpu.py"]:
            args = gpu_bench.parse_args(argv[2:])  # exits 2 on a flag it does not take
            assert args.contenders[0] == "tpubench", name
            benches += 1
    assert trains >= 5 and benches >= 9, (trains, benches)


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
        ("facts", "skipped"),
        ("bilstm1024", "skipped"),
    ]
    summary = _member(tar, "summary.md")
    assert "`bash bench/gpu_matrix.sh --only=facts,bilstm1024`" in summary
    assert summary in proc.stdout  # the summary also comes back on the console
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # work folders removed


def test_cpu_rehearsal_packs_the_record_the_profile_and_the_summary_into_one_tarball(tmp_path):
    out = tmp_path / "out"
    proc = _run(
        "--accelerator=cpu",
        "--tiny",
        "--only=r50-bf16-default,profile-bf16",
        f"--out={out}",
        tmp_path=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    tar = _tarball(out)
    rows = {
        r["step"]: r["status"]
        for r in csv.DictReader(io.StringIO(_member(tar, "steps.tsv")), delimiter="\t")
    }
    assert rows == {"r50-bf16-default": "ok", "profile-bf16": "ok", "profile-bf16-top": "ok"}
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
    assert "### profile-bf16-top" in summary
    # Issue 31's item 2 in one table; the fp16 columns wait for the r50-fp16 step.
    assert re.search(r"\| bf16, no XLA flag \(GPU: XLA\) \| [\d,]+ \| - \| - \|", summary)
    assert any(n.endswith(".xplane.pb") and "/profiles/profile-bf16/" in n for n in tar.getnames())
    assert not any("checkpoint" in n for n in tar.getnames())  # model dirs stay out
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


@pytest.mark.slow
def test_the_whole_matrix_rehearses_on_cpu(tmp_path):
    out = tmp_path / "out"
    proc = _run(
        "--accelerator=cpu",
        "--tiny",
        "--budget=3000",
        f"--out={out}",
        tmp_path=tmp_path,
        timeout=3600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    tar = _tarball(out)
    rows = list(csv.DictReader(io.StringIO(_member(tar, "steps.tsv")), delimiter="\t"))
    bad = [(r["step"], r["status"]) for r in rows if r["status"] != "ok"]
    assert not bad, bad
    assert len(rows) == len(_steps(_run("--list", tmp_path=tmp_path).stdout))
