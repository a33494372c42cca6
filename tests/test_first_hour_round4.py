"""Issue 34, class F (the first hour, round 4): the no-TPU line."""

import os
import subprocess
import sys

from tpubench.hardware import clusters


def test_the_no_tpu_line_does_not_suggest_the_flag_the_user_gave():
    line = clusters.no_tpu_message("local", "TPU not found " * 30)
    assert "with --tpu=local" in line and "use --tpu=local" not in line
    assert "run on a TPU VM, or pass --accelerator=cpu or gpu" in line


def test_the_no_tpu_line_cuts_tensorflows_message_at_a_word():
    cause = "Failed to connect to all addresses; last error: UNKNOWN " * 10
    line = clusters.no_tpu_message("my-tpu", cause)
    quoted = line.split("(", 1)[1].rsplit("); on a TPU VM", 1)[0]
    assert quoted.endswith(" …") and len(quoted) <= 200
    assert all(word in cause.split() for word in quoted[:-2].split())
    assert "on a TPU VM use --tpu=local" in line


def test_report_and_advise_say_a_folder_does_not_exist(tmp_path):
    from conftest import one_line_error, run_cli

    for argv in (["report"], ["advise", "--model=mnist_mlp", "--deadline=1h"]):
        proc, _ = run_cli(*argv, tmp_path / "runs" / "vcpus")
        line = one_line_error(proc)
        assert proc.returncode == 2 and f"{tmp_path / 'runs' / 'vcpus'} does not exist;" in line


def test_every_documented_accuracy_row_says_whether_it_repeats():
    """An accuracy repeats only with --deterministic_input: each row of docs/models.md says so."""
    import pathlib

    lines = (pathlib.Path(__file__).parents[1] / "docs" / "models.md").read_text().splitlines()
    measured = ("accuracy", "perplexity")
    rows, header = [], ""
    for i, x in enumerate(lines):
        if not x.startswith("|"):
            header = ""
        elif i + 1 < len(lines) and lines[i + 1].startswith("| ---"):
            header = x
        elif not x.startswith("| ---") and any(w in header + x for w in measured):
            rows.append(x)
    assert len(rows) >= 8, rows  # the digits table and the tiny text models' table
    assert [x for x in rows if "--deterministic_input" not in x] == []


def _smoke_record(tmp_path):
    """A results directory holding one cpu_vs_gpu cell recorded at --scale=smoke."""
    import json
    import pathlib

    from tpubench.study import cells, findings, report, spec

    study = spec.load("cpu_vs_gpu", report.FORMS, findings.CHECKS)
    cell = next(
        c for c in cells.expand(study, "smoke") if c.setup.label == "1 vCPU"
    )  # mnist_mlp, the smoke scale's one model
    fixture = pathlib.Path(__file__).parent / "report" / "fixtures" / "threads" / "mlp-t1-0.json"
    record = json.loads(fixture.read_text()) | {"run_label": cell.id}
    results = tmp_path / "runs" / "studies" / "cpu_vs_gpu"
    results.mkdir(parents=True)
    (results / "cell.json").write_text(json.dumps(record))
    return results


def test_study_report_after_a_smoke_run_reports_the_smoke_records_and_says_so(tmp_path):
    from conftest import NO_TF_CLI

    results = _smoke_record(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-c", NO_TF_CLI, "study", "report", "cpu_vs_gpu"],
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "COLUMNS"},
        cwd=tmp_path,  # the default results directory, runs/studies/cpu_vs_gpu
    )
    assert proc.returncode == 0, proc.stderr
    assert "no cell of cpu_vs_gpu is recorded at --scale=full" in proc.stdout
    assert "8 cell(s) at --scale=smoke: 1 measured" in proc.stdout
    assert (results / "report" / "cpu_vs_gpu-smoke.md").exists()
    # On the console: tables drawn, no Markdown syntax, within 100 columns.
    assert "## " not in proc.stdout and "| --- |" not in proc.stdout and "**" not in proc.stdout
    row = next(x for x in proc.stdout.splitlines() if x.startswith(" 1 vCPU "))
    assert "1,000" in row and "$0.0475" in row and "|" not in row, proc.stdout
    assert max(len(x) for x in proc.stdout.splitlines()) <= 100, proc.stdout
    assert "## Findings" in (results / "report" / "cpu_vs_gpu-smoke.md").read_text()
