"""One meaning of "epoch": the training split the run read (the model's dataset size on
synthetic data), named beside every $/epoch and time/epoch; runs of different epochs say so."""

import json
import pathlib

from conftest import run_cli

from tpubench.core.config import AdviseConfig
from tpubench.cost import epoch
from tpubench.report import advise

REAL = pathlib.Path(__file__).parents[1] / "report" / "fixtures" / "real" / "mnist_mlp.json"
DIGITS = "1,437 examples of digits"
SYNTHETIC = "60,000 examples (the model's dataset size; synthetic data read)"


def test_the_epoch_is_named():
    assert epoch.named(1437, "digits") == DIGITS
    assert epoch.named(60000, "synthetic", "mnist") == (
        "60,000 examples (mnist's size; synthetic data read)"
    )
    assert epoch.note([("a", 1437, "digits"), ("b", 1437, "digits")]) == f"1 epoch = {DIGITS}"
    assert epoch.note([("a", 1437, "digits"), ("b", 60000, "synthetic")]) == (
        "epochs differ, so time/epoch and $/epoch do not compare across them: 1 epoch = "
        f"a: {DIGITS}; b: {SYNTHETIC}"
    )


def _records(tmp_path) -> pathlib.Path:
    """The real digits record, and the same run as if on synthetic data (60,000 a epoch)."""
    out = tmp_path / "recs"
    out.mkdir()
    rec = json.loads(REAL.read_text())
    (out / "digits.json").write_text(json.dumps(rec))
    rec["run_id"] += "-syn"
    rec["data"] = {"name": "synthetic", "canonical_dataset": "mnist"}
    rec["examples_per_epoch"] = rec["cost"]["examples_per_epoch"] = 60000
    for m in rec["cost"]["machines"]:
        m["usd_per_epoch"] *= 60000 / 1437
    (out / "synthetic.json").write_text(json.dumps(rec))
    return out


def test_report_says_when_epochs_differ(tmp_path):
    proc, _ = run_cli("report", _records(tmp_path), env={"COLUMNS": "400"})
    assert proc.returncode == 0, proc.stderr
    lines = [x.strip() for x in proc.stdout.splitlines() if "epochs differ" in x]
    # beside the summary table and the Pareto table: both compare $/epoch
    assert len(lines) == 2
    assert lines[0] == (
        "mnist_mlp: epochs differ, so time/epoch and $/epoch do not compare across them: "
        f"1 epoch = mnist_mlp · gcp:n1-standard-2 · dataset=digits: {DIGITS}; "
        f"mnist_mlp · gcp:n1-standard-2 · dataset=synthetic: {SYNTHETIC}"
    )


def test_advise_names_its_epoch(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")
    recs = _records(tmp_path)
    (recs / "synthetic.json").unlink()
    cfg = AdviseConfig(inputs=(str(recs),), model="mnist_mlp", deadline_seconds=3600)
    title = advise.advise(cfg).splitlines()[0].strip()
    assert title.startswith(f"mnist_mlp: configurations for 1 epoch(s); 1 epoch = {DIGITS} (")


def test_train_names_the_epoch_it_read(tmp_path):
    proc, record = run_cli(
        "train",
        "--train_steps=8",
        "--use_synthetic_data",
        f"--model_dir={tmp_path / 'm'}",
        results_dir=tmp_path / "r",
        env={"COLUMNS": "300"},
    )
    assert proc.returncode == 0, proc.stderr
    shown = " ".join(proc.stdout.split())  # the table's title wraps at 100 columns
    assert "— 1 epoch = 60,000 examples (mnist's size; synthetic data read);" in shown
    assert (
        epoch.of_record(record) == "1 epoch = 60,000 examples (mnist's size; synthetic data read)"
    )
