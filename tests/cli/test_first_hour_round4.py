"""Issue 34, class F (the first hour, round 4): the no-TPU line."""

import json
import os
import pathlib
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

    lines = (pathlib.Path(__file__).parents[2] / "docs" / "models.md").read_text().splitlines()
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

    from tpubench.children import command
    from tpubench.study.report import findings, forms
    from tpubench.study.run import cell_records, cells
    from tpubench.study.spec import spec

    study = spec.load("cpu_vs_gpu", forms.FORMS, findings.CHECKS)
    cell = next(
        c for c in cells.expand(study, "smoke") if c.setup.label == "1 vCPU"
    )  # mnist_mlp, the smoke scale's one model
    fixtures = pathlib.Path(__file__).parents[1] / "report" / "fixtures"
    fixture = fixtures / "threads" / "mlp-t1-0.json"
    record = json.loads(fixture.read_text()) | {"run_label": cell.id}
    # What the cell ran (its flags and command line): a record of another run is no cell's.
    flags = dict(cell_records.asks(cell).flags)
    record |= {"flags": flags, "argv": ["tpubench", "train", *command.flags_argv(flags)]}
    # As a run records it: both bases, the cell's own (spot, as the seed priced it) first.
    (on_demand,) = record["cost"]["machines"]
    spot = on_demand | {"pricing": "spot", "usd_per_hour": 0.01}
    spot["usd_per_epoch"] = on_demand["usd_per_epoch"] * 0.01 / on_demand["usd_per_hour"]
    record["cost"] |= {"pricing": "spot", "machines": [spot, on_demand]}
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
    assert "13 cell(s) at --scale=smoke: 1 measured" in proc.stdout
    assert (results / "report" / "cpu_vs_gpu-smoke.md").exists()
    # On the console: tables drawn, no Markdown syntax, within 100 columns.
    assert "## " not in proc.stdout and "| --- |" not in proc.stdout and "**" not in proc.stdout
    row = next(x for x in proc.stdout.splitlines() if x.startswith(" 1 vCPU "))
    assert "1,000" in row and "$0.0100 spot" in row and "|" not in row, proc.stdout
    assert "$0.0475" not in row  # the on-demand price is not this cell's basis
    assert max(len(x) for x in proc.stdout.splitlines()) <= 100, proc.stdout
    assert "## Findings" in (results / "report" / "cpu_vs_gpu-smoke.md").read_text()


def _single_trials(tmp_path):
    """cifar10_cnn on 1 and 2 threads, one trial each: 100 and 150 examples/sec."""
    import pathlib
    import shutil

    threads = pathlib.Path(__file__).parents[1] / "report" / "fixtures" / "threads"
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in ("cnn-t1-0.json", "cnn-t2-0.json"):
        shutil.copy(threads / name, runs / name)
    from tpubench.cli import report as report_cli
    from tpubench.core.config import ReportConfig

    return report_cli.build(ReportConfig(inputs=(str(runs),), title="t"))


def test_an_efficiency_from_single_trials_is_tabled_and_drawn_as_not_significant(tmp_path):
    rep = _single_trials(tmp_path)
    table = rep.tables["scaling"]
    cells = [row[table.columns.index("efficiency")] for row in table.rows]
    assert cells == ["100.0%", "75.0% (1 trial: not significant)"]
    assert "not significant" in " ".join(table.notes)
    fig = rep.figures["scaling"][0]
    ax_eff = fig.axes[1]
    notes = [t.get_text() for t in ax_eff.texts]
    assert notes == ["75%: not significant"]
    hollow = [
        line
        for line in ax_eff.lines
        if line.get_marker() == "o" and line.get_markerfacecolor() == "white"
    ]
    assert [list(line.get_ydata()) for line in hollow] == [[75.0]]


def test_an_efficiency_interval_that_leaves_out_100_percent_is_significant():
    from tpubench.report import scaling_curves

    p = scaling_curves.ScalingPoint(2, None, 200.0, 1.5, 75.0, 62.0, 85.0)
    assert p.significant
    p = scaling_curves.ScalingPoint(2, None, 200.0, 2.03, 203.0, 95.0, 310.0)
    assert not p.significant
    assert not scaling_curves.ScalingPoint(2, None, 200.0, 2.03, 203.0).significant  # no interval


def test_a_throughput_label_stands_clear_of_its_whisker_cap(tmp_path):
    rep = _single_trials(tmp_path)
    fig = rep.figures["throughput"][0]
    labels = fig.axes[0].texts
    assert labels and all(t.get_text()[0].isdigit() for t in labels)  # no leading blank
    # Offset in points from the whisker's end: the cap (3 points) never touches the digits.
    assert all(t.anncoords == "offset points" and t.xyann[0] >= 6 for t in labels)


def test_a_study_of_ideal_cell_says_when_it_is_not_significant():
    import dataclasses

    from tpubench.study.report import findings, forms, report
    from tpubench.study.run import cells, measured
    from tpubench.study.spec import spec

    study = spec.load("cnn_scaling", forms.FORMS, findings.CHECKS)
    host = cells.Host(cores=tuple(range(16)), gpus=8, gpu_name="H100", tpu=False)
    all_cells = cells.expand(study, "full")

    def cell(label):
        return next(c for c in all_cells if c.model.model == "resnet50" and c.setup.label == label)

    def results(ci1, ci8):
        got = {}
        for label, rate, ci in (("1 GPU", 100.0, ci1), ("8 GPU", 1624.0, ci8)):
            c = cell(label)
            m = measured.Measured(c, 1, rate, 1.0, None, None, None, "gpu", "m", None, 64, ())
            got[c.id] = dataclasses.replace(m, rate_ci=ci, trials=3 if ci else 1)
        return measured.Results(study, "full", host, "runs", tuple(all_cells), got, {})

    def of_ideal(res):
        line = next(x for x in report.render(res, []).splitlines() if "resnet50 · synthetic" in x)
        return line.rsplit("|", 2)[-2].strip()

    assert of_ideal(results(None, None)) == "203% at 8 (one run: not significant)"
    assert of_ideal(results((80.0, 120.0), (1500.0, 1750.0))) == "203% at 8 (156–273%)"
    assert of_ideal(results((60.0, 140.0), (700.0, 2500.0))) == (
        "203% at 8 (62–521%: not significant)"
    )


def test_a_refused_run_leaves_no_record_and_runs_lists_old_refused_ones_apart(tmp_path):
    """A usage error before TensorFlow loads never started a run: one line, no record.
    Records of refusals (`"refused": true`, as earlier versions wrote them and as a refusal
    after TensorFlow loaded still does) are listed apart by `runs`."""
    import shutil

    from conftest import NO_TF_CLI, one_line_error

    runs = tmp_path / "runs"
    runs.mkdir()
    fixtures = pathlib.Path(__file__).parents[1] / "report" / "fixtures" / "threads"
    shutil.copy(fixtures / "cnn-t1-0.json", runs / "cnn-t1-0.json")
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    argv = [sys.executable, "-c", NO_TF_CLI]
    proc = subprocess.run(
        [*argv, "train", "--machine=gcp:n1-standard-7", "--results_dir=runs"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    line = one_line_error(proc)
    assert proc.returncode == 2 and "n1-standard-7" in line and "run record" not in line
    assert sorted(p.name for p in runs.glob("*.json")) == ["cnn-t1-0.json"]
    old = json.loads((runs / "cnn-t1-0.json").read_text())
    old.update(run_id="old-refusal", status="failed", refused=True, error="unknown price key")
    old.pop("results", None)
    (runs / "old-refusal.json").write_text(json.dumps(old))
    proc = subprocess.run(
        [*argv, "runs", "runs"], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    ran, apart = proc.stdout.split("refused before running (1):")
    assert "runs/cnn-t1-0.json" in ran and "runs/old-refusal.json" not in ran
    assert "runs/old-refusal.json" in apart


def _tour() -> list[str]:
    """The README tour's commands, each with its continuation and comment lines."""
    import pathlib

    text = (pathlib.Path(__file__).parents[2] / "README.md").read_text()
    block = text.split("## A tour", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    commands: list[str] = []
    for line in block.splitlines():
        if line.startswith(("tpubench", "for ")):
            commands.append(line)
        elif commands:
            commands[-1] += "\n" + line
    return commands


def test_the_readme_tour_runs_here_in_order_and_says_how_long_each_command_takes():
    import re

    commands = _tour()
    assert len(commands) >= 15
    made = {"runs"}  # where a train or infer without --results_dir writes
    for cmd in commands:
        assert re.search(r"about \d+ (s|minutes?)\b", cmd), cmd  # its time on 2 cores
        assert "gs://" not in cmd and "--accelerator=gpu" not in cmd and "--tpu" not in cmd, cmd
        words = cmd.split()
        if words[1] in ("report", "advise", "runs"):
            assert words[2] in made, f"{words[2]} is read before a command made it: {cmd}"
        made.update(re.findall(r"--results_dir=(\S+)", cmd))
        if "--scenario=server" in cmd:  # the full search is minutes: short settings here
            seconds = re.search(r"--min_duration=(\d+)s", cmd)
            assert seconds and int(seconds.group(1)) <= 10, cmd
    studies = [c.split()[3] for c in commands if c.startswith("tpubench study report")]
    assert all(
        any(c.startswith(f"tpubench study run {s} --scale=smoke") for c in commands)
        for s in studies
    )


def test_study_report_pricing_puts_every_setup_on_one_named_basis(tmp_path):
    """The cell is priced spot as the seed did; --pricing=on_demand reads its on-demand row."""
    from conftest import NO_TF_CLI

    _smoke_record(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-c", NO_TF_CLI, "study", "report", "cpu_vs_gpu", "--pricing=on_demand"],
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "COLUMNS"},
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Dollar figures on on-demand prices (--pricing=on_demand)." in proc.stdout
    row = next(x for x in proc.stdout.splitlines() if x.startswith(" 1 vCPU "))
    assert "$0.0475 on" in row and "$0.0100" not in row, proc.stdout
