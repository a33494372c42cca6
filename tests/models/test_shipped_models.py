"""`tpubench models` answers from the shipped table: no TensorFlow, counts that stay true."""

import json
import pathlib
import subprocess
import sys

import pytest
from conftest import run_cli

from tpubench.model import model_info, shipped

ROOT = pathlib.Path(__file__).resolve().parents[2]
_NO_TF = """
import atexit, sys
atexit.register(lambda: print("TENSORFLOW" if "tensorflow" in sys.modules else "NO-TF",
                              file=sys.stderr))
from tpubench.cli.main import run
run(["tpubench", "models", *sys.argv[1:]])
"""


def _models(*args):
    return subprocess.run(
        [sys.executable, "-c", _NO_TF, *args], capture_output=True, text=True, timeout=120
    )


def test_listing_the_built_in_models_loads_no_tensorflow():
    proc = _models("--format=json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().endswith("NO-TF"), proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert set(rows) == set(shipped.names()) and len(rows) >= 15
    assert rows["resnet50"]["parameters"] == 25_557_032  # ResNet-50 v1.5's published count
    tiny = _models("resnet50", "--tiny", "--format=json")
    assert tiny.stderr.strip().endswith("NO-TF")
    assert json.loads(tiny.stdout)[0]["parameters"] < rows["resnet50"]["parameters"]


def test_an_unknown_model_is_one_line_without_tensorflow():
    proc = _models("resnet5O")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith(
        "tpubench models: error: unknown model 'resnet5O' (did you mean resnet50"
    )
    assert "resnet50" in lines[0] and lines[-1] == "NO-TF"


def test_train_and_infer_refuse_an_unknown_model_before_tensorflow(tmp_path):
    """The shipped names decide at once: one line, and no record (no run started)."""
    from tpubench.model import registry

    assert shipped.names() == registry.names()  # so no built-in model is ever refused
    for command in ("train", "infer"):
        proc, record = run_cli(command, "--model=resnet5O", results_dir=tmp_path / command)
        assert proc.returncode == 2
        assert "unknown model 'resnet5O' (did you mean resnet50" in proc.stderr
        assert record is None
    shipped.check_known("my_net", model_modules=("my_models.py",))  # decided once it runs
    shipped.check_known("mnist_mlp")


@pytest.mark.parametrize("name", ["mnist_mlp", "imdb_fasttext", "cifar10_cnn"])
@pytest.mark.parametrize("tiny", [False, True])
def test_shipped_rows_are_what_counting_gives_today(name, tiny):
    """Recounted with the installed TensorFlow; `make models-table` refreshes a stale table."""
    assert shipped.row(name, tiny) is not None, "the table is for another TensorFlow"
    assert model_info.count(name, tiny) == shipped.row(name, tiny)


@pytest.mark.slow
def test_every_shipped_row_is_what_counting_gives_today():
    table = shipped.build()
    assert table == shipped.load(), "shipped_models.json is stale: run `make models-table`"


def test_a_table_of_another_tensorflow_is_not_used(monkeypatch):
    monkeypatch.setattr(shipped, "tensorflow_version", lambda: "9.1.0")
    assert shipped.row("mnist_mlp", False) is None
    monkeypatch.setattr(shipped, "tensorflow_version", lambda: shipped.load()["tensorflow"] + ".7")
    assert shipped.row("mnist_mlp", False)["name"] == "mnist_mlp"


def test_a_model_of_ones_own_is_traced_with_progress_shown(tmp_path):
    text = (ROOT / "docs" / "adding_a_model.md").read_text()
    code = text.split("```python\n")[1].split("```")[0]
    (tmp_path / "lenet.py").write_text(code)
    proc, _ = run_cli("models", "lenet5", f"--model_module={tmp_path / 'lenet.py'}", timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "tpubench models: counting FLOPs of lenet5 (1 of 1; once, then cached)" in proc.stderr
    (row,) = [line for line in proc.stdout.splitlines() if line.split()[:1] == ["lenet5"]]
    assert "61,706" in row  # LeNet-5's classic parameter count
