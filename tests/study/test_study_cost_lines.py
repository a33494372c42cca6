"""Lines that read like verdicts wait for evidence as findings do: the cost lines (cheapest,
flip prices, price bases) and the knee column say why they are not judged until then."""

from __future__ import annotations

import dataclasses

from test_study_verdicts import _m

from tpubench.study.report import findings, forms, report
from tpubench.study.run import cells, measured
from tpubench.study.spec import spec

HOST = cells.Host(cores=(0, 1), gpus=0, gpu_name="", tpu=False)
MACHINES = {"1 vCPU": "gcp:n1-standard-1", "2 vCPU": "gcp:n1-highcpu-2"}


def _cpu_vs_gpu(scale: str, runs: int, busy: bool, usd_hour=(0.0131, 0.0197)):
    """cpu_vs_gpu at SCALE with mnist_mlp on 1 and 2 vCPUs, RUNS runs each (BUSY: every one
    on a busy host), priced spot as the study prices them."""
    study = spec.load("cpu_vs_gpu", forms.FORMS, findings.CHECKS)
    all_cells = cells.expand(study, scale)
    got = {}
    for c in all_cells:
        if c.model.model == "mnist_mlp" and c.setup.label in MACHINES:
            rate = 24000.0 if c.setup.label == "1 vCPU" else 29500.0
            price = usd_hour[c.setup.label == "2 vCPU"]
            m = _m(c, [rate + k for k in range(runs)], price, "spot", MACHINES[c.setup.label])
            got[c.id] = dataclasses.replace(m, busy=busy)
    repeats = study.runs_per_cell(scale)
    return measured.Results(study, scale, HOST, "runs", tuple(all_cells), got, {}, repeats=repeats)


def _cost_lines(text: str) -> list[str]:
    part = text.split("**mnist_mlp**")[1].split("\n\n", 2)[2].split("\n\n")[0]
    return [line for line in part.splitlines() if line.startswith("- ")]


def test_a_smoke_scale_cost_line_from_one_busy_run_is_not_judged():
    text = report.render(_cpu_vs_gpu("smoke", runs=1, busy=True), [])
    assert _cost_lines(text) == [
        "- cost verdicts (cheapest, flip prices, price bases): not judged (smoke scale) "
        "[measured on a busy host]"
    ]
    assert "stays cheapest" not in text and "moves the verdict" not in text


def test_a_cost_line_waits_for_the_study_s_repeats():
    text = report.render(_cpu_vs_gpu("full", runs=1, busy=False), [])
    assert _cost_lines(text) == [
        "- cost verdicts (cheapest, flip prices, price bases): not judged (needs 3 runs per "
        "cell; has 1)"
    ]


def test_with_the_repeats_the_cost_lines_print_marked_when_the_host_was_busy():
    quiet = _cost_lines(report.render(_cpu_vs_gpu("full", runs=3, busy=False), []))
    # 1 vCPU: 2.5 s an epoch at $0.0131/h; 2 vCPU: 2.03 s at $0.0197/h.  1 vCPU costs what
    # 2 vCPU does at 2.03 / 2.5 x $0.0197/h = $0.0160/h.
    assert quiet[0].startswith(
        "- 1 vCPU stays cheapest unless its machine costs more than $0.0160/h (now $0.0131/h, spot)"
    )
    assert not any("busy" in line for line in quiet)
    busy = _cost_lines(report.render(_cpu_vs_gpu("full", runs=3, busy=True), []))
    assert busy == [line + " [measured on a busy host]" for line in quiet]


def test_a_cost_finding_s_flip_notes_wait_with_its_verdict():
    study = spec.load("tpu_vs_gpu", forms.FORMS, findings.CHECKS)
    all_cells = cells.expand(study, "full")
    got = {
        c.id: _m(c, [3000.0 if c.setup.label == "Cloud TPU" else 1000.0], 4.5, "on_demand", "m")
        for c in all_cells
        if c.setup.label in ("Cloud TPU", "1 GPU")
    }
    results = measured.Results(study, "full", HOST, "runs", tuple(all_cells), got, {}, repeats=3)
    v = next(v for v in findings.check_all(results) if v.finding.startswith("one Cloud TPU"))
    assert v.verdict == "not judged (needs 3 runs per cell; has 1)" and v.notes == ()
    assert v.line().endswith("**not judged (needs 3 runs per cell; has 1)**")


def _infer(scale: str, runs: int, busy: bool = False):
    """gpu_host_sizing's inference knee at 1-8 vCPUs: the rate stops gaining at 2."""
    study = spec.load("gpu_host_sizing", forms.FORMS, findings.CHECKS)
    all_cells = cells.expand(study, scale)
    rates = {"1 vCPU": 16.0, "2 vCPU": 29.0, "4 vCPU": 29.5, "8 vCPU": 29.2}
    got = {
        c.id: dataclasses.replace(_m(c, [rates[c.setup.label]] * runs), busy=busy)
        for c in all_cells
        if c.part.name == "infer"
    }
    repeats = study.runs_per_cell(scale)
    return measured.Results(study, scale, HOST, "runs", tuple(all_cells), got, {}, repeats=repeats)


def _knee_cell(text: str) -> str:
    row = next(r for r in text.split("### infer")[1].splitlines() if r.startswith("| resnet50"))
    return row.split(" | ")[-1].rstrip(" |")


def test_the_knee_column_is_a_verdict_and_waits_for_evidence():
    assert _knee_cell(report.render(_infer("smoke", runs=1, busy=True), [])) == (
        "not judged (smoke scale)"
    )
    assert _knee_cell(report.render(_infer("full", runs=2), [])) == (
        "not judged (needs 3 runs per cell; has 2)"
    )
    assert _knee_cell(report.render(_infer("full", runs=3), [])) == "2"
    assert _knee_cell(report.render(_infer("full", runs=3, busy=True), [])) == "2 ⚠busy"
