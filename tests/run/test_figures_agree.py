"""Figures that agree: the progress line names its rate (the mean since warm-up, the
table's measure), a resumed run says which steps its rate covers, and the study's
charts mark the bars of runs on a busy host."""

import json
import pathlib
import re

import matplotlib

matplotlib.use("Agg")

from conftest import run_cli  # noqa: E402

from tpubench.cli import report_text  # noqa: E402
from tpubench.report import plots  # noqa: E402
from tpubench.study.report import charts  # noqa: E402

REAL = pathlib.Path(__file__).parents[1] / "report" / "fixtures" / "real" / "mnist_mlp.json"


def test_the_progress_line_names_its_rate_the_mean_since_warm_up(tmp_path):
    proc, record = run_cli(
        "train",
        "--train_steps=40",
        "--log_every_secs=0",
        f"--model_dir={tmp_path / 'm'}",
        results_dir=tmp_path / "r",
    )
    assert proc.returncode == 0, proc.stderr
    lines = [x for x in proc.stderr.splitlines() if x.startswith("[train] step 40/40")]
    found = re.search(r"([\d,.]+) ex/s \(mean since warm-up\)", lines[-1])
    assert found, lines
    # the mean over the loops after warm-up: the table's rate over the same loops or more
    shown = float(found.group(1).replace(",", ""))
    table = record["results"]["examples_per_sec"]
    assert 0.5 * table < shown < 2 * table


def _summary(**changes) -> str:
    rec = json.loads(REAL.read_text()) | changes
    text = re.sub("[│┃]", " ", report_text.train_summary(rec))  # the value's wrapped lines
    return " ".join(text.split())


def test_a_resumed_run_says_which_steps_its_rate_covers():
    text = _summary(resumed_from_step=955)
    assert (
        "; steps 956-975 only: resumed at step 955, the steps before ran in earlier runs "
        "(their own records)"
    ) in text
    assert "only: resumed" not in _summary()  # a whole run: its rate is the run's


def test_study_bars_of_busy_runs_are_cross_hatched_with_a_legend_entry():
    fig, ax = plots._subplots(1, 1, (8, 4.5))
    series = {"1 vCPU": {"mlp": 100.0, "cnn": 50.0}, "2 vCPUs": {"mlp": 180.0, "cnn": 90.0}}
    charts._bars(ax, ["mlp", "cnn"], series, busy={"2 vCPUs": {"cnn"}})
    hatched = [(p.get_x(), p.get_height()) for p in ax.patches if p.get_hatch() == "xx"]
    assert [h for _, h in hatched] == [90.0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["1 vCPU", "2 vCPUs", charts.BUSY_LABEL]
    fig2, ax2 = plots._subplots(1, 1, (8, 4.5))
    charts._bars(ax2, ["mlp", "cnn"], series)  # a quiet study: no mark, no entry
    assert charts.BUSY_LABEL not in [t.get_text() for t in ax2.get_legend().get_texts()]
