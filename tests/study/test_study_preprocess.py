"""Study cells of `command: data_bench`: gpu_host_sizing's preprocessing part and its finding."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from test_study_verdicts import HOST, _m

from tpubench.core import errors
from tpubench.study.report import findings, forms, report
from tpubench.study.run import cells, measured, remote
from tpubench.study.spec import spec

FINDING = "preprocessing is I/O bound (local NVMe 25% faster than an SSD cloud disk)"
LOCAL, EMULATOR, SSD, STANDARD = (
    f"{d} (preprocess)"
    for d in ("local disk", "local disk + emulator", "SSD cloud disk", "standard cloud disk")
)


def _study():
    return spec.load("gpu_host_sizing", forms.FORMS, findings.CHECKS)


def _results(rates: dict, scale="full"):
    """gpu_host_sizing with the preprocess cells RATES (label -> rates of its runs) measured."""
    study = _study()
    all_cells = cells.expand(study, scale)
    got = {
        c.id: _m(c, rates[c.setup.label])
        for c in all_cells
        if c.part.name == "preprocess" and c.setup.label in rates
    }
    return measured.Results(
        study, scale, HOST, "runs", tuple(all_cells), got, {}, repeats=study.runs_per_cell(scale)
    )


def _verdict(results):
    return next(v for v in findings.check_all(results) if v.finding == FINDING)


def test_preprocess_cells_are_pinned_data_bench_processes_on_each_disk():
    smoke = [c for c in cells.expand(_study(), "smoke") if c.part.name == "preprocess"]
    assert [c.setup.label for c in smoke] == [LOCAL, EMULATOR, SSD, STANDARD]
    by = {c.setup.label: c for c in smoke}
    line = by[SSD].shell(HOST, "out", "photos")
    assert line.startswith("taskset -c 0,1 tpubench data bench --model=resnet50 ")
    flags = by[SSD].flags(HOST, "out", "photos")
    assert flags["read_mb_per_s"] == 240 and flags["data_dir"] == "photos"
    assert flags["results_dir"] == "out" and flags["run_label"] == by[SSD].id
    # No model step: no device, thread-pool or model_dir flags (data bench has none).
    assert not {"accelerator", "num_intra_threads", "model_dir"} & set(flags)
    assert by[STANDARD].flags(HOST, "out", "p")["read_mb_per_s"] == 60
    assert "read_mb_per_s" not in by[LOCAL].flags(HOST, "out", "p")
    # the control: this host's disk through an emulated disk too fast to matter
    assert by[EMULATOR].flags(HOST, "out", "p")["read_mb_per_s"] == 100000
    argv = by[LOCAL].argv(HOST, "out", "p")
    assert argv[argv.index("tpubench") + 1 : argv.index("tpubench") + 3] == ["data", "bench"]
    assert by[LOCAL].pinned(HOST) == (0, 1)


def test_the_preprocess_finding_is_a_ratio_with_its_interval():
    # Judged against the local disk read through the emulator: the emulator's own
    # cost (a plain local disk 10% faster still) is on both sides of the ratio.
    runs = {LOCAL: [143, 144, 142], EMULATOR: [130, 131, 129], SSD: [100, 101, 99]}
    v = _verdict(_results(runs))
    assert v.verdict == "holds", v
    assert v.measured.startswith(f"{EMULATOR} 1.30x [95%:")
    assert "(resnet50: 130.0 vs 100.0/s)" in v.measured
    v = _verdict(_results({LOCAL: [143, 144, 142], EMULATOR: [100, 101, 99], SSD: [100, 99, 101]}))
    assert v.verdict == "does not hold here", v  # only the emulator's cost: no disk effect
    v = _verdict(_results({EMULATOR: [150, 80, 115], SSD: [100, 101, 99]}))
    assert v.verdict == "within noise", v
    v = _verdict(_results({EMULATOR: [130, 131, 129], SSD: [100, 101, 99]}, scale="smoke"))
    assert v.verdict == "not judged (smoke scale)", v
    v = _verdict(_results({LOCAL: [130, 131, 129], SSD: [100, 101, 99]}))
    assert v.verdict.startswith("not measured (needs"), v  # the control is what it compares


def test_the_report_shows_the_disks_side_by_side_not_a_knee():
    results = _results({LOCAL: [130, 131, 129], SSD: [100, 101, 99], STANDARD: [60, 61, 59]})
    text = report.render(results, [])
    assert "### preprocess (`tpubench data bench`)" in text
    assert f"| {SSD} | resnet50 |" in text and "knee" not in text.split("### preprocess")[1][:400]


def test_data_bench_cells_stay_on_this_host_with_a_remote_executor():
    cell = next(c for c in cells.expand(_study(), "full") if c.part.name == "preprocess")
    cloud = remote.Cloud("cloud.yaml", {}, {})
    assert "run locally" in remote.needs(cell, "gce", cloud, "gs://b/photos")


@pytest.mark.parametrize(
    "part, words",
    [
        (
            "{name: p, command: data_bench, models: [resnet50], data: [synthetic], "
            "setups: [{label: a}]",
            "data 'synthetic' has no prepared directory for `tpubench data bench`",
        ),
        (
            "{name: p, command: data_bench, models: [resnet50], data: [jpeg], "
            "setups: [{label: a, memory: 1GiB}]",
            "memory is not for command data_bench",
        ),
        (
            "{name: p, command: data_bench, models: [{model: resnet50, precision: fp16}], "
            "data: [jpeg], setups: [{label: a}]",
            "takes a model's batch_size only",
        ),
    ],
)
def test_a_data_bench_part_refuses_what_needs_a_model_step(tmp_path, part, words):
    path = tmp_path / "s.yaml"
    path.write_text(
        f"form: {{kind: knee, part: p}}\nparts:\n  - {part}, scale: {{smoke: {{}}, full: {{}}}}}}\n"
    )
    with pytest.raises(errors.UsageError) as e:
        spec.load(str(path), forms.FORMS, findings.CHECKS)
    assert words in str(e.value)


def test_a_data_bench_part_flag_is_checked_against_data_bench(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "form: {kind: knee, part: p}\nparts:\n  - {name: p, command: data_bench, models: "
        "[resnet50], data: [jpeg], setups: [{label: a}], flags: {train_steps: 3}, "
        "scale: {smoke: {}, full: {}}}\n"
    )
    known = {"data_bench": {"batches", "batch_size"}}
    with pytest.raises(errors.UsageError) as e:
        spec.load(str(path), forms.FORMS, findings.CHECKS, known)
    assert "unknown `tpubench data bench` flag" in str(e.value) and "train_steps" in str(e.value)


def test_a_data_bench_study_runs_at_smoke_scale_and_leaves_records(tmp_path):
    """The real CLI: photos prepared, one pinned `data bench` per disk, records, report."""
    (tmp_path / "pre.yaml").write_text(
        "form: {kind: knee, part: p}\n"
        "parts:\n"
        "  - name: p\n"
        "    command: data_bench\n"
        "    models: [resnet50]\n"
        "    data: [jpeg]\n"
        "    setups:\n"
        "      - {label: local, vcpus: 1, read_mb_per_s: 100000}\n"  # the emulator's control
        "      - {label: slow, vcpus: 1, read_mb_per_s: 1}\n"
        "    scale:\n"
        "      smoke: {tiny: true, batch_size: 8, batches: 4, warmup_batches: 1, "
        "jpeg_examples: 64}\n"
        "      full: {}\n"
        "findings:\n"
        "  - text: the slow disk slows preprocessing\n"
        "    check: {kind: ratio, part: p, a: local, b: slow, band: at least 1.1x}\n"
    )
    argv = [sys.executable, "-m", "tpubench", "study", "run", "pre.yaml", "--scale=smoke"]
    argv.append("--results_dir=st")
    proc = subprocess.run(
        argv, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=dict(os.environ)
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    assert "Traceback" not in proc.stderr
    assert "2 cell(s) at --scale=smoke: 2 measured" in proc.stdout
    shown = " ".join(proc.stdout.split())  # the report drawn as tables, folded at 100 columns
    assert "• the slow disk slows preprocessing (band: at least 1.1x) — local " in shown
    assert "not judged (smoke scale)" in shown
    found = [json.loads(p.read_text()) for p in (tmp_path / "st").glob("*.json")]
    found = [r for r in found if r.get("kind") == "data_bench"]
    assert len(found) == 2 and all(r["status"] == "ok" for r in found)
    assert all(r["hardware"]["cpu"]["affinity_cores"] == 1 for r in found)
    slow = next(r for r in found if r["config"]["read_mb_per_s"] == 1)
    assert slow["results"]["mb_per_sec"] <= 1.3  # the emulated disk's rate, a prefetch ahead
    # Done cells are not run again.
    again = subprocess.run(
        argv, cwd=tmp_path, capture_output=True, text=True, timeout=120, env=dict(os.environ)
    )
    assert again.returncode == 0 and "2 already recorded" in again.stdout
