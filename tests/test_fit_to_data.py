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
