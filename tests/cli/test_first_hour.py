"""Class F of issue 25: the first hour, as a new user meets it.

Tables fit 100 columns (the demo's results, `data list`, `advise` keeping its
`meets` column), `prices v100` lists one row per price and never calls 2018
prices current, tiny FLOP counts are not printed as 0.0000, chart ticks are
plain numbers with the decimals they need, and a missing bucket is refused
before TensorFlow is imported with no failed record left behind.
"""

import os
import pathlib
import re
import subprocess
import sys

import pytest
from conftest import NO_TF_CLI, one_line_error

FIXTURES = pathlib.Path(__file__).parents[1] / "report" / "fixtures"
README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def _cli(*args, columns=None, env=None, cwd=None):
    full = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns:
        full["COLUMNS"] = str(columns)
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", NO_TF_CLI, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=full,
        cwd=cwd,
    )


def _table_lines(text: str) -> list[str]:
    return [x for x in text.splitlines() if x[:1] in "┏┃┡│└┌├╭╰━─"]


def test_prices_v100_lists_one_row_per_price():
    proc = _cli("prices", "v100", columns=100)
    assert proc.returncode == 0, proc.stderr
    keys = [x.split()[0] for x in proc.stdout.splitlines() if x.startswith(("gcp:", "aws:"))]
    current = [
        x.split()[0]
        for x in proc.stdout.splitlines()
        if x.startswith(("gcp:", "aws:")) and "historical" not in x
    ]
    assert current.count("gcp:v100") == 1, proc.stdout
    assert len(current) == len(set(current)), proc.stdout
    assert "aws:p3.2xlarge" in keys


def test_historical_prices_are_not_called_current():
    proc = _cli("prices", "historical", columns=100)
    assert proc.returncode == 0, proc.stderr
    footer = " ".join(proc.stdout.strip().split("\n\n")[-1].split())  # folded at 100 columns
    assert "historical" in footer and "current" not in footer, footer


def test_tiny_flop_counts_are_not_shown_as_zero():
    from tpubench.model import model_info

    assert (
        model_info.gflops_text(51_200) == "0.000051"
    )  # the size of imdb_fasttext's forward pass (42 kFLOP)
    assert model_info.gflops_text(1_340_000) == "0.0013"
    assert model_info.gflops_text(8.221e9) == "8.2210"
    assert model_info.gflops_text(None) == "n/a"


def test_the_train_summary_fits_100_columns_when_not_a_terminal(monkeypatch):
    from tpubench.cli import report_text

    monkeypatch.delenv("COLUMNS", raising=False)
    record = {
        "model": {"name": "mnist_mlp"},
        "results": {
            "examples_per_sec": None,  # the note stands in its cell: a long line to fold
            "note": "no throughput was measured " * 12,
        },
        "placement": {"accelerator": "cpu", "strategy": "one_device", "num_replicas": 1},
        "config": {"steps_per_loop": 1, "precision": "fp32"},
        "data": {"name": "digits"},
        "mfu": {"note": "measured: fp32 matmul 2048^3, best of 5 trials; " * 4},
    }
    text = report_text.train_summary(record)
    widths = [len(x) for x in _table_lines(text)]
    assert widths and max(widths) <= 100, text


def test_advise_fits_100_columns_and_keeps_meets():
    proc = _cli("advise", FIXTURES / "threads", "--model=mnist_mlp", "--deadline=1h", columns=100)
    assert proc.returncode == 0, proc.stderr
    table = _table_lines(proc.stdout)
    assert max(len(x) for x in table) <= 100, proc.stdout
    assert "meets" in proc.stdout.split("Advice, on")[0]
    assert "yes / yes" in proc.stdout  # n1 machines have on-demand and spot prices
    assert "Markdown, HTML and CSV files" not in proc.stdout  # advise writes no files


def test_data_list_fits_100_columns():
    proc = subprocess.run(
        [sys.executable, "-m", "tpubench", "data", "list"],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, COLUMNS="100"),
    )
    assert proc.returncode == 0, proc.stderr
    assert max(len(x) for x in proc.stdout.splitlines()) <= 100, proc.stdout
    assert "tfds:NAME" in proc.stdout


def _labels(axis) -> list[str]:
    return [t.get_text() for t in axis.get_ticklabels() if t.get_text()]


def test_chart_ticks_are_plain_numbers_with_the_decimals_they_need():
    from tpubench.cli import report as report_cli
    from tpubench.core.config import ReportConfig

    cfg = ReportConfig(inputs=(str(FIXTURES / "threads"), str(FIXTURES / "batches")), title="t")
    rep = report_cli.build(cfg)
    fig = rep.figures["scaling"][0]
    fig.canvas.draw()
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    labels = _labels(ax.yaxis)
    assert labels and all(re.fullmatch(r"[\d,]+(\.\d+)?", x) for x in labels), labels
    assert "1,000" in labels
    fig = rep.figures["cost_time"][0]
    fig.canvas.draw()
    for ax in fig.axes:
        labels = _labels(ax.yaxis)
        if not labels or not labels[0].startswith("$"):
            continue
        decimals = {len(x.split(".")[1]) for x in labels if "." in x}
        assert len(decimals) <= 1, labels
        if decimals and decimals != {2}:
            # One decimal fewer would lose a tick's value: no padding zeros on every tick.
            assert any(not x.endswith("0") for x in labels), labels


def test_readme_says_how_to_reach_tpubench_and_how_long_things_take():
    text = README.read_text()
    tour = text.index("## A tour")
    assert "source .venv/bin/activate" in text[:tour] or ".venv/bin/tpubench" in text[:tour]
    assert re.search(r"about \d+ minutes on a shared 2-core\s+machine", text)  # the install
    assert re.search(r"took\s+\d+\s+min\s+\d+\s+s\s+for\s+[\d,]+\s+passed", text)  # the suite
    assert "--deterministic_input" in text


def test_a_missing_bucket_is_refused_before_tensorflow_and_says_where_its_record_is(
    gcs_env, tmp_path
):
    runs = tmp_path / "runs"
    proc = _cli(
        "train",
        "--data_dir=gs://no-such-bucket/data",
        f"--results_dir={runs}",
        env=gcs_env,
        cwd=tmp_path,
    )
    line = one_line_error(proc)  # the in-process runner exits 99 if TensorFlow was imported
    assert proc.returncode == 3, proc.stderr
    assert "gs://no-such-bucket does not exist" in line
    written = list(runs.glob("*.json"))
    assert len(written) == 1 and f"[run record: {written[0]}]" in line


@pytest.mark.parametrize("sub", ["train", "infer"])
def test_an_unwritable_results_bucket_is_refused_before_tensorflow_with_no_record(
    gcs_env, tmp_path, sub
):
    proc = _cli(sub, "--results_dir=gs://no-such-bucket/runs", env=gcs_env, cwd=tmp_path)
    line = one_line_error(proc)
    assert proc.returncode == 3 and "gs://no-such-bucket does not exist" in line
    assert "run record" not in line
    assert not (tmp_path / "runs").exists()
