"""A study cell's result is taken only from a record of that cell (study/run/cell_records.py).

docs/security.md, "A result only from a record of that run": a record carrying a cell's id as
its run_label, but of another precision, strategy, device count, model or batch (a colleague's
record relabelled), neither makes `study run` skip the cell nor gives `study report` a figure;
both name it in one line.  The records are ones tpubench wrote (study_records), each the record
of a real cell of a variant of the study, relabelled with the cell's id.
"""

from __future__ import annotations

import json

import pytest
import study_records
from conftest import run_cli

from tpubench.study.report import findings, forms
from tpubench.study.run import cells
from tpubench.study.spec import spec

STUDY = """
title: two cells
form: {kind: relative}
parts:
  - name: train
    models: [mnist_mlp]
    data: [synthetic]
    setups:
      - {label: a, device: cpu, devices: 2, strategy: mirrored, precision: bf16}
      - {label: b, device: cpu, vcpus: 1}
    scale:
      smoke: {tiny: true, train_steps: 4, batch_size: 16}
"""


def _cells(tmp_path, text, name="s.yaml") -> dict:
    path = tmp_path / name
    path.write_text(text)
    study = spec.load(str(path), forms.FORMS, findings.CHECKS)
    return {c.setup.label: c for c in cells.expand(study, "smoke")}


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        ("precision: bf16", "precision: fp16", "precision fp16 != bf16"),
        ("strategy: mirrored", "strategy: one_device", "strategy one_device != mirrored"),
        ("devices: 2", "devices: 4", "num_cpu_devices 4 != 2"),
        ("models: [mnist_mlp]", "models: [mnist_cnn]", "model mnist_cnn != mnist_mlp"),
        ("batch_size: 16", "batch_size: 32", "batch 32 != 16"),
    ],
)
def test_a_record_of_another_cell_under_its_label_is_named_run_and_left_out(
    tmp_path, old, new, why
):
    mine = _cells(tmp_path, STUDY)
    other = _cells(tmp_path, STUDY.replace(old, new), "variant.yaml")["a"]
    r = tmp_path / "r"
    r.mkdir()
    study_records.write(r, mine["b"], "b-1", 100.0)  # b's own: done
    rec = study_records.record(other, "a-1", 777.0)
    rec["run_label"] = mine["a"].id  # relabelled: it claims to be cell a
    (r / "a-1.json").write_text(json.dumps(rec))
    said = f"{r}/a-1.json: labelled {mine['a'].id} ({mine['a'].describe()}) but {why}; left out"

    args = ("study", "run", tmp_path / "s.yaml", "--scale=smoke", f"--results_dir={r}")
    proc, _ = run_cli(*args, "--dry-run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"1 already recorded in {r}; 1 to run" in proc.stdout.splitlines()[0]
    assert proc.stdout.splitlines().count(f"  {said}") == 1, proc.stdout
    assert f"--run_label={mine['a'].id}" in proc.stdout  # cell a would run

    proc, _ = run_cli("study", "report", tmp_path / "s.yaml", "--scale=smoke", f"--results_dir={r}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (md,) = (r / "report").glob("*.md")
    text = md.read_text()
    assert [x for x in text.splitlines() if "left out;" in x or "; left out" in x] == [f"- {said}"]
    assert " ".join(proc.stdout.split()).count(said) == 1  # the console folds it to its width
    assert "777" not in text and "777" not in proc.stdout  # its figure is nowhere
    assert "100" in text  # b's is


def test_its_own_record_and_an_auto_setups_device_count(tmp_path):
    """The cell's own record counts; `device: auto` is the device the record ran on."""
    auto = STUDY.replace("{label: b, device: cpu, vcpus: 1}", "{label: b, vcpus: 1}")
    mine = _cells(tmp_path, auto)
    r = tmp_path / "r"
    r.mkdir()
    study_records.write(r, mine["a"], "a-1", 300.0)
    study_records.write(r, mine["b"], "b-1", 100.0, accelerator="gpu")  # it ran on a GPU
    proc, _ = run_cli(
        "study", "run", tmp_path / "s.yaml", "--scale=smoke", "--dry-run", f"--results_dir={r}"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"2 already recorded in {r}; 0 to run" in proc.stdout.splitlines()[0]
    assert "left out" not in proc.stdout
