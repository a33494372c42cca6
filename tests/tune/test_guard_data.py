"""The numerics guard on real data for every model: which data, and a broken setting caught
by real training runs (a model whose bf16 setting has a broken learning rate:
broken_lr_model.py; one whose bf16 path cancels its input: cancelling_model.py)."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import re

import pytest
from conftest import run_cli

from tpubench.core.config import DataConfig
from tpubench.model import registry
from tpubench.tune import guard_data

CANCELLING = pathlib.Path(__file__).with_name("cancelling_model.py")
BROKEN_LR = pathlib.Path(__file__).with_name("broken_lr_model.py")
SYNTHETIC = DataConfig(use_synthetic_data=True)
# Image models with no embedded data of their shape: the guard gives them the digits, resized.
NO_DATA_OF_THEIR_SHAPE = ["alexnet", "googlenet", "inception_v3", "resnet50", "resnet152", "vgg16"]


def _choose(name, own=None, data=SYNTHETIC, synthetic=True, tiny=False):
    spec = registry.get(name)
    params = registry.resolve_params(spec, dict(own or {}), tiny=tiny)
    return guard_data.choose(spec, params, dict(own or {}), data, synthetic)


def test_every_model_in_the_registry_gets_real_data_for_the_guard():
    from tpubench.data import embedded

    for name in registry.names():
        g = _choose(name)
        assert g.flags.get("use_synthetic_data") is False, (name, g)
        assert g.text.startswith("real data ("), (name, g.text)
        spec = registry.get(name)
        if any(d in embedded.NAMES for d in spec.datasets):
            assert g.text.startswith("real data (the embedded ") and "data_dir" not in g.flags
        else:  # the ImageNet CNNs and cifar10_cnn: the digits, at the model's input size
            assert name in [*NO_DATA_OF_THEIR_SHAPE, "cifar10_cnn"], name
            size = registry.resolve_params(spec, {})["image_size"]
            assert f"resized to {size}x{size}x3 by the model; 10 classes)" in g.text, g.text
            assert (pathlib.Path(g.flags["data_dir"]) / "manifest.json").is_file()
    assert "resized to 224x224x3" in _choose("resnet50").text
    assert "resized to 32x32x3" in _choose("resnet50", tiny=True).text
    assert "resized to 299x299x3" in _choose("inception_v3").text


def test_the_users_data_and_real_trials_come_first_and_a_model_with_none_is_weak():
    mine = DataConfig(data_dir="/data/imagenet")
    assert _choose("resnet50", data=mine).text == "real data (/data/imagenet)"
    assert _choose("resnet50", synthetic=False) == guard_data.GuardData(
        {}, "the trials' own data (not synthetic)"
    )
    # Ten digit classes do not fit a 5-class head the user set.
    few = _choose("resnet50", own={"num_classes": "5"})
    assert few.flags == {} and "num_classes=5 is below the embedded digits' 10 classes" in few.text
    assert few.text.startswith("synthetic data: ") and "(a weak check: pass --data_dir)" in few.text
    spec = dataclasses.replace(registry.get("mnist_mlp"), name="vectors", datasets=("mine",))
    weak = guard_data.choose(spec, {"hidden_units": 8}, {}, SYNTHETIC, True)
    assert weak.text == (
        "synthetic data: the model has no offline dataset and does not take images "
        "(a weak check: pass --data_dir)"
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", [*NO_DATA_OF_THEIR_SHAPE, "cifar10_cnn"])
def test_every_image_model_trains_on_the_guards_digits(name, tmp_path):
    g = _choose(name, tiny=True)
    flags = [f"--{k}={v}" if v is not False else f"--no{k}" for k, v in g.flags.items()]
    proc, rec = run_cli(
        "train", f"--model={name}", "--tiny", "--train_steps=3", "--batch_size=8", *flags,
        results_dir=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0 and rec["status"] == "ok", proc.stderr[-3000:]
    size = rec["model"]["params"]["image_size"]
    assert rec["data"]["name"] == "digits" and rec["model"]["params"]["num_classes"] == 10
    assert rec["model"]["fitted_to_data"]["images"] == (
        f"28x28x1 resized to {size}x{size} (the model's input size)"
    )


@pytest.mark.parametrize(
    "module, model",
    [
        (BROKEN_LR, "broken_lr"),  # in the default suite: the broken learning rate
        pytest.param(CANCELLING, "cancelling", marks=pytest.mark.slow),
    ],
)
def test_a_real_tune_disqualifies_a_setting_whose_loss_is_off_on_real_data(tmp_path, module, model):
    """A whole `tpubench tune` of a model whose bf16 setting is broken: 5 to 7 trial
    processes (busy-host re-runs), 43 s on a shared 2-core machine."""
    proc, _ = run_cli(
        "tune",
        f"--model_module={module}",
        f"--model={model}",
        "--search=precision",
        "--trial_steps=30",
        "--finalists=1",
        "--repeats=1",
        "--max_repeats=1",
        "--budget=10m",
        results_dir=tmp_path,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = " ".join(proc.stdout.split())  # folded at 100 columns
    assert "numerics checked against fp32 on real data (the embedded digits" in out
    found = re.search(
        r"numerics of bf16 on real data: REJECTED: mean loss ([\d.,]+|nan|inf) vs fp32 "
        r"([01]\.\d+) over steps 16-30: off by",
        out,
    )
    assert found, out
    bf16_loss = float(found[1].replace(",", ""))  # nan/inf: diverged
    assert not bf16_loss < 2.0, out  # no better than chance (ln 10 = 2.30): broken
    summary = json.loads(next(tmp_path.rglob("tune-summary.json.txt")).read_text())
    assert "resized to 16x16x3 by the model" in summary["guard_data"]
    (bf16,) = [r for r in summary["ranked"] if r["setting"]["precision"] == "bf16"]
    assert bf16["status"] == "disqualified" and bf16["note"].startswith("mean loss "), bf16
    assert summary["winners"]["throughput"]["setting"]["precision"] == "fp32"
    checks = [json.loads(p.read_text()) for p in tmp_path.rglob("*.json")]
    checks = [r for r in checks if (r.get("data") or {}).get("name") == "digits"]
    assert sorted(r["config"]["precision"] for r in checks) == ["bf16", "fp32"]  # the guard's
    for r in checks:  # the embedded digits, fitted to the model's 16x16 RGB
        assert r["model"]["fitted_to_data"]["images"].startswith("28x28x1 resized to 16x16")
