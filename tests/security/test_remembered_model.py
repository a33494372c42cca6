"""Issue 61, 7b: a model of one's own, from --model_module, is remembered by its run.

A train run writes `model.json` into its model_dir and `model_code` (the
module's absolute path and SHA-256) into its record, so `infer --model_dir`,
`tune --model_dir` and `rerun` need no --model or --model_module.  The
remembered module is code named by a file: imported only with --trust_code,
and refused in one line, before TensorFlow loads and with no record, once
the file changed.  Refusals run through NO_TF_CLI (exit 99 had TensorFlow
loaded).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys

import pytest
from conftest import NO_TF_CLI, one_line_error, record_files, rerun_cli, run_cli

LENET = """
import dataclasses

from tpubench.model import registry

registry.register(
    dataclasses.replace(registry.get("mnist_cnn"), name="lenet", description="a LeNet of my own")
)
"""


def _cli(cwd, *args):
    """`tpubench ARGS` in CWD through NO_TF_CLI (exit 99 had TensorFlow loaded)."""
    return subprocess.run(
        [sys.executable, "-c", NO_TF_CLI, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def _refused(proc, *words) -> str:
    line = one_line_error(proc)
    assert proc.returncode == 2, proc.stderr  # 99: TensorFlow loaded before the refusal
    for word in words:
        assert word in line, line
    return line


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A LeNet trained from a relative --model_module: (work folder, model_dir, its record)."""
    work = tmp_path_factory.mktemp("own")
    (work / "lenet.py").write_text(LENET)
    model_dir = work / "lenet-run"
    proc = subprocess.run(
        [sys.executable, "-m", "tpubench", "train", "--model=lenet", "--model_module=lenet.py",
         "--tiny", "--train_steps=3", f"--model_dir={model_dir}", f"--results_dir={work / 'runs'}"],
        capture_output=True, text=True, cwd=work, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (record,) = record_files(work / "runs")
    return work, model_dir, record


def _changed(work, model_dir, tmp_path):
    """A copy of the trained model_dir whose module file then changed (a copy of it, too)."""
    module = tmp_path / "lenet.py"
    module.write_text(LENET)
    copy = tmp_path / "run"
    shutil.copytree(model_dir, copy)
    info = json.loads((copy / "model.json").read_text())
    info["model_modules"][0]["path"] = str(module)
    (copy / "model.json").write_text(json.dumps(info))
    module.write_text(LENET + "print('changed')\n")
    return module, copy


def test_the_run_remembers_its_module_by_absolute_path_and_hash(trained):
    work, model_dir, record = trained
    digest = hashlib.sha256((work / "lenet.py").read_bytes()).hexdigest()
    code = [{"path": str(work / "lenet.py"), "sha256": digest}]
    info = json.loads((model_dir / "model.json").read_text())
    assert info == {"model": "lenet", "params": [], "tiny": True, "model_modules": code}
    assert json.loads(record.read_text())["model_code"] == code


def test_infer_takes_the_model_from_the_model_dir_with_trust_code(trained, tmp_path):
    _, model_dir, record = trained
    proc, rec = run_cli(
        "infer", f"--model_dir={model_dir}", "--trust_code", "--batch_size=4", "--num_batches=2",
        "--num_warmup_batches=1", results_dir=tmp_path / "runs",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert rec["model"]["name"] == "lenet" and rec["weights"]["source"] == "checkpoint"
    assert "--trust_code given" in proc.stderr and "lenet.py" in proc.stderr
    assert rec["model_code"] == json.loads(record.read_text())["model_code"]  # for its rerun


def test_the_remembered_module_needs_trust_code_before_tensorflow(trained, tmp_path):
    work, model_dir, _ = trained
    for sub in ("infer", "tune"):
        proc = _cli(tmp_path, sub, f"--model_dir={model_dir}", f"--results_dir={tmp_path}/r")
        line = _refused(proc, "model.json", f"model_module={work / 'lenet.py'}", "--trust_code")
        assert "refused" in line
    assert not (tmp_path / "r").exists()  # no record, no folder


def test_a_changed_module_is_refused_even_when_trusted(trained, tmp_path):
    work, model_dir, _ = trained
    module, copy = _changed(work, model_dir, tmp_path)
    for sub in ("infer", "tune"):
        proc = _cli(tmp_path, sub, f"--model_dir={copy}", "--trust_code", f"--results_dir={copy}/r")
        _refused(proc, f"--model_module={module} changed since --model_dir={copy}")
    assert not (copy / "r").exists()
    # Typing --model_module is the user's own choice again: no refusal before TensorFlow
    # (an unknown --machine stops it there instead).
    proc = _cli(tmp_path, "infer", f"--model_dir={copy}", f"--model_module={module}",
                "--machine=gcp:no-such-machine")  # fmt: skip
    assert "no-such-machine" in one_line_error(proc) and "changed" not in proc.stderr


def test_another_model_than_the_one_trained_there_is_refused(trained, tmp_path):
    _, model_dir, _ = trained
    proc = _cli(tmp_path, "infer", f"--model_dir={model_dir}", "--model=mnist_mlp")
    _refused(proc, "--model=mnist_mlp", "holds a run of model lenet")


def test_tune_reads_only_a_model_from_a_model_dir(tmp_path):
    proc = _cli(tmp_path, "tune", f"--model_dir={tmp_path}")
    _refused(proc, f"--model_dir={tmp_path} holds no model.json")


def test_a_damaged_model_json_is_one_line(trained, tmp_path):
    _, model_dir, _ = trained
    copy = tmp_path / "run"
    shutil.copytree(model_dir, copy)
    (copy / "model.json").write_text('{"model": ["lenet"]}')
    _refused(_cli(tmp_path, "infer", f"--model_dir={copy}"), "model.json is damaged")


def test_rerun_imports_the_recorded_file_from_anywhere_if_unchanged(trained, tmp_path):
    work, model_dir, record = trained
    elsewhere = tmp_path / "elsewhere"  # the module was given as lenet.py, relative to WORK
    elsewhere.mkdir()
    proc = rerun_cli(elsewhere, record, "--trust_code", f"--results_dir={tmp_path / 'again'}")
    assert proc.returncode == 0, proc.stderr
    (again,) = record_files(tmp_path / "again")
    assert json.loads(again.read_text())["model"]["name"] == "lenet"
    # The same record once the file changed: refused, whatever --trust_code says.
    (tmp_path / "c").mkdir()
    module, _ = _changed(work, model_dir, tmp_path / "c")
    old = json.loads(record.read_text())
    old["model_code"][0]["path"] = str(module)
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(old))
    proc = rerun_cli(elsewhere, changed, "--trust_code")
    line = one_line_error(proc)
    assert proc.returncode == 2 and f"--model_module={module} changed since" in line, line
    assert "tpubench rerun: tpubench" not in proc.stderr  # nothing started


@pytest.mark.parametrize(
    "args",
    [
        ["train", "--model=lenet"],
        ["infer", "--model=lenet"],
        ["tune", "--model=lenet"],
        ["data", "bench", "--model=lenet"],
        ["models", "lenet"],
        ["train", "--model=../lenet"],
    ],
)
def test_unknown_model_names_model_module(args, tmp_path):
    line = _refused(_cli(tmp_path, *args), "unknown model")
    assert line.endswith("or load your own with --model_module=FILE.py"), line
