"""--strategy=central_storage: the seeds' synchronous, in-process parameter server.

Logical CPU devices can be configured only once per process: runs go
through the CLI in a subprocess.
"""

from __future__ import annotations

import pytest
from conftest import metrics_lines, one_line_error, run_cli

from tpubench.core import errors
from tpubench.core.config import HardwareConfig
from tpubench.hardware import placement
from tpubench.report import group, load

_TWO_CPUS = ("--tiny", "--accelerator=cpu", "--num_cpu_devices=2", "--use_synthetic_data")
_SHORT = ("--train_steps=4", "--steps_per_loop=2", "--batch_size=8")


def _losses(model_dir) -> list[float]:
    return [m["train/loss"] for m in metrics_lines(model_dir) if "train/loss" in m]


def test_a_model_with_dropout_trains_as_under_mirrored(tmp_path):
    """AlexNet's Dropout updates Keras' seed state inside the replica step: central
    storage keeps one copy of it, which takes the update (the Keras 3 failure fixed)."""
    runs = {}
    for name in ("central_storage", "mirrored"):
        proc, record = run_cli(
            "train",
            "--model=alexnet",
            f"--strategy={name}",
            f"--model_dir={tmp_path / name}",
            *_TWO_CPUS,
            *_SHORT,
            results_dir=tmp_path / "runs",
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs[name] = record
    p = runs["central_storage"]["placement"]
    assert (p["strategy"], p["num_replicas"], p["devices"]) == (
        "central_storage",
        2,
        ["/device:CPU:0", "/device:CPU:1"],
    )
    assert (p["parameter_device"], p["variable_device"]) == ("cpu", "/device:CPU:0")
    assert p["all_reduce"] == "on_variable_device" and p["variable_devices"] is None
    # Every weight's one copy on the host CPU (the first logical device here).
    [(device, elements)] = p["variable_load"].items()
    assert device.endswith("/device:CPU:0") and elements > 1000
    assert runs["mirrored"]["placement"]["parameter_device"] is None
    synced, mirrored = _losses(tmp_path / "central_storage"), _losses(tmp_path / "mirrored")
    assert len(synced) == 2 and synced == pytest.approx(mirrored, rel=1e-4)
    # `tpubench report` labels each configuration by what varies: here the strategy.
    labels = sorted(g.label for g in group.group(load.load([str(tmp_path / "runs")]).runs))
    assert [x.split(" · ")[-1] for x in labels] == [
        "strategy=central_storage/cpu",
        "strategy=mirrored",
    ]


def test_batch_norm_statistics_update_on_the_parameter_device(tmp_path):
    import tensorflow as tf

    proc, record = run_cli(
        "train",
        "--model=resnet50",
        "--strategy=central_storage",
        "--parameter_device=cpu",
        f"--model_dir={tmp_path / 'md'}",
        *_TWO_CPUS,
        *_SHORT,
        results_dir=tmp_path / "runs",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    losses = _losses(tmp_path / "md")
    assert all(x == x and x < 1e3 for x in losses) and losses[-1] < losses[0]
    ckpt = tf.train.latest_checkpoint(str(tmp_path / "md" / "checkpoints"))
    means = [n for n, _ in tf.train.list_variables(ckpt) if "moving_mean" in n]
    assert means, "resnet50 has batch norm"
    moved = [n for n in means if abs(tf.train.load_variable(ckpt, n)).max() > 0]
    assert moved == means  # every moving mean left its initial zeros


@pytest.mark.parametrize(
    "hw,accelerator,expected",
    [
        (
            HardwareConfig(strategy="central_storage", parameter_device="gpu"),
            "cpu",
            "--parameter_device=gpu spreads the variables over the training GPUs but the "
            "accelerator is cpu; accepted here: --parameter_device=cpu",
        ),
        (
            HardwareConfig(strategy="mirrored", parameter_device="cpu"),
            "gpu",
            "--parameter_device=cpu applies to --strategy=central_storage but the strategy is "
            "mirrored; drop it or use --strategy=central_storage",
        ),
        (
            HardwareConfig(strategy="central_storage", all_reduce="nccl"),
            "gpu",
            "--all_reduce=nccl does not apply to --strategy=central_storage (the gradients are "
            "summed on the parameter device); drop it or use --strategy=mirrored",
        ),
    ],
)
def test_flags_central_storage_cannot_take_are_refused(hw, accelerator, expected):
    with pytest.raises(errors.UsageError) as e:
        placement.check_applicable(hw, accelerator)
    assert str(e.value) == expected


def test_the_cli_refuses_a_gpu_parameter_device_on_cpus_in_one_line(tmp_path):
    proc, record = run_cli(
        "train",
        "--strategy=central_storage",
        "--parameter_device=gpu",
        *_TWO_CPUS,
        results_dir=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 2
    assert one_line_error(proc).endswith("accepted here: --parameter_device=cpu")
    assert record is None  # refused before TensorFlow loaded: no run started


def test_xla_on_several_replicas_is_refused_in_one_line(tmp_path):
    proc, record = run_cli(
        "train",
        "--model=resnet50",
        "--strategy=central_storage",
        "--xla",
        *_TWO_CPUS,
        *_SHORT,
        results_dir=tmp_path,
    )
    assert proc.returncode == 2 and record["status"] == "failed"
    assert "--xla with --strategy=central_storage on 2 replicas" in one_line_error(proc)
