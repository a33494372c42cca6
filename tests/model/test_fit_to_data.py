"""A model trained on data of another shape says what was fitted to the data."""

import json
import os
import subprocess
import sys

import pytest


def _cli(cwd, *args):
    out = subprocess.run(
        [sys.executable, "-m", "tpubench", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.slow  # about a minute: ResNet-50 (tiny) on two CPUs
def test_resnet_on_small_eight_class_images_says_what_was_fitted(tmp_path):
    _cli(
        tmp_path,
        "data",
        "prepare",
        "--dataset=photos",
        "--record_format=raw",
        "--image_size=32",
        "--output=p32",
    )
    manifest = json.loads((tmp_path / "p32" / "manifest.json").read_text())
    assert manifest["image_shape"] == [32, 32, 3] and manifest["num_classes"] == 8
    out = _cli(
        tmp_path,
        "train",
        "--model=resnet50",
        "--tiny",
        "--params=image_size=48",
        "--data_dir=p32",
        "--batch_size=4",
        "--train_steps=2",
        "--eval_steps=1",
        "--results_dir=runs",
    )
    (line,) = [x for x in out.splitlines() if "fitted to the data" in x]
    assert "num_classes 10 -> 8; images 32x32x3 resized to 48x48 (the model's input size)" in line
    (path,) = (tmp_path / "runs").glob("*.json")
    record = json.loads(path.read_text())
    assert record["model"]["fitted_to_data"] == {
        "num_classes": "10 -> 8",
        "images": "32x32x3 resized to 48x48 (the model's input size)",
    }
    assert record["model"]["params"]["num_classes"] == 8


def test_data_of_the_models_shape_fits_silently(tmp_path):
    out = _cli(tmp_path, "train", "--train_steps=2", "--eval_steps=1", "--results_dir=runs")
    assert "fitted to the data" not in out  # digits: 10 classes, as mnist_mlp expects


@pytest.mark.slow  # five CLI runs, about a minute
def test_parameter_counts_say_what_was_fitted_in_train_and_infer(tmp_path):
    """imdb_fasttext on Python's 8 topics: its head and vocabulary fitted, and both counts."""
    _cli(tmp_path, "data", "prepare", "--dataset=pydoc_topics", "--output=topics")
    manifest = json.loads((tmp_path / "topics" / "manifest.json").read_text())
    vocab, classes = manifest["vocab_size"], manifest["num_classes"]
    assert classes == 8 and 1000 < vocab < 20_000
    dims = 50  # embedding, then one logit per class (IMDb's 2 classes: one logit)
    fitted = vocab * dims + dims * classes + classes
    unfitted = 20_000 * dims + dims * 1 + 1
    (listed,) = json.loads(_cli(tmp_path, "models", "imdb_fasttext", "--format=json"))
    assert listed["parameters"] == unfitted  # what `tpubench models` says
    changes = {"num_classes": f"2 -> {classes}", "vocab_size": f"20000 -> {vocab}"}
    line = f"{fitted:,} parameters (fitted to the data: num_classes 2 -> {classes}; vocab_size "
    line += f"20000 -> {vocab}; {unfitted:,} unfitted)"
    common = ["--model=imdb_fasttext", "--data_dir=topics", "--batch_size=8"]
    runs = {
        "train": ["--train_steps=2", "--eval_steps=1", "--model_dir=m"],
        "infer": ["--nouse_synthetic_data", "--nocheck_accuracy"],
    }
    for command, args in runs.items():
        out = _cli(tmp_path, command, *common, *args, f"--results_dir={command}")
        (path,) = (tmp_path / command).glob("*.json")
        record = json.loads(path.read_text())
        assert record["model"]["fitted_to_data"] == changes
        assert record["mfu"]["parameters"] == fitted
        assert record["mfu"]["parameters_unfitted"] == unfitted
        assert line in " ".join(out.replace("│", " ").split()), out
