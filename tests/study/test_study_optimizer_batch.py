"""Study cells: the seed's optimizer, the per-device batch passed as such, and stable ids."""

from __future__ import annotations

import pytest

from tpubench.core import errors
from tpubench.core.basis import Basis
from tpubench.study.report import findings, forms, report
from tpubench.study.run import cells
from tpubench.study.spec import spec

GPU_HOST = cells.Host(cores=tuple(range(16)), gpus=8, gpu_name="H100", tpu=False)

STUDY = """
title: mine
form: {kind: devices, part: p}
parts:
  - name: p
    optimizer: sgd
    models: [resnet50, {model: alexnet, batch_per_device: 512, optimizer: adam}]
    setups:
      - {label: 2 GPU, device: gpu, devices: 2, batch_per_device: 64}
      - {label: 2 GPU rms, device: gpu, devices: 2, batch_per_device: 64, optimizer: rmsprop}
      - {label: global, device: gpu, devices: 2, batch_size: 256}
    scale:
      smoke: {tiny: true, train_steps: 2, batch_size: 8}
      full: {train_steps: 20}
"""


def _cells(tmp_path, text=STUDY, scale="full"):
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    return cells.expand(spec.load(str(path), forms.FORMS, findings.CHECKS), scale)


def _flags(cs, label, model):
    (cell,) = [c for c in cs if c.setup.label == label and c.model.model == model]
    return cell.flags(GPU_HOST, "r", None)


def test_model_setup_and_part_name_the_optimizer_in_that_order(tmp_path):
    cs = _cells(tmp_path)
    assert _flags(cs, "2 GPU", "resnet50")["optimizer"] == "sgd"  # the part's
    assert _flags(cs, "2 GPU rms", "resnet50")["optimizer"] == "rmsprop"  # the setup's
    assert _flags(cs, "2 GPU rms", "alexnet")["optimizer"] == "adam"  # the model item's


def test_batch_per_device_is_passed_per_replica_and_a_global_batch_as_global(tmp_path):
    cs = _cells(tmp_path)
    f = _flags(cs, "2 GPU", "alexnet")
    assert f["per_replica_batch_size"] == 512 and "batch_size" not in f
    f = _flags(cs, "global", "resnet50")
    assert f["batch_size"] == 256 and "per_replica_batch_size" not in f


def test_a_scales_batch_replaces_the_cells(tmp_path):
    f = _flags(_cells(tmp_path, scale="smoke"), "2 GPU", "resnet50")
    assert f["batch_size"] == 8 and "per_replica_batch_size" not in f


# The ids the release before the optimizer key gave this file's cells (without the key).
OLD_IDS = {
    ("2 GPU", "resnet50"): "mine-852a27c8bd",
    ("2 GPU", "alexnet"): "mine-433ec6877e",
    ("2 GPU rms", "resnet50"): "mine-191856259d",
    ("2 GPU rms", "alexnet"): "mine-da74b85f71",
    ("global", "resnet50"): "mine-d3e3380eb1",
    ("global", "alexnet"): "mine-f99e5e8ec1",
}


def test_cells_without_the_key_keep_their_ids(tmp_path):
    plain = STUDY.replace("    optimizer: sgd\n", "").replace(", optimizer: adam", "")
    plain = plain.replace(", optimizer: rmsprop", "")
    ids = {(c.setup.label, c.model.model): c.id for c in _cells(tmp_path, plain)}
    assert ids == OLD_IDS  # their records still mark them done
    with_key = {(c.setup.label, c.model.model): c.id for c in _cells(tmp_path)}
    assert not set(with_key.values()) & set(OLD_IDS.values())  # another optimizer: new cells


def test_shipped_tf_cnn_benchmarks_seeds_train_with_sgd():
    for name in ("strategies", "cnn_scaling"):
        s = spec.load(name, forms.FORMS, findings.CHECKS)
        assert {c.optimizer() for c in cells.expand(s, "full")} == {"sgd"}, name


@pytest.mark.parametrize("where", ["part", "setup", "model"])
def test_an_unknown_optimizer_is_refused_naming_the_choices(tmp_path, where):
    bad = {
        "part": STUDY.replace("optimizer: sgd", "optimizer: lamb"),
        "setup": STUDY.replace("optimizer: rmsprop", "optimizer: lamb"),
        "model": STUDY.replace("optimizer: adam", "optimizer: lamb"),
    }[where]
    with pytest.raises(errors.UsageError, match=r"unknown optimizer in .*'lamb'.*sgd"):
        _cells(tmp_path, bad)


def test_tpu_vs_gpu_report_gives_per_chip_figures_for_accelerator_cells():
    """A v2-8 (4 chips, $4.50/h) and one GPU ($3.00/h) compare per chip; the CPU row has none."""
    from tpubench.study.run import measured

    study = spec.load("tpu_vs_gpu", forms.FORMS, findings.CHECKS)
    by = {c.setup.label: c for c in cells.expand(study, "full") if c.model.model == "resnet50"}
    got = {}
    for label, rate, usd, chips in (
        ("Cloud TPU", 2000.0, 4.50, 4),
        ("1 GPU", 400.0, 3.00, 1),
        ("CPU (this host)", 10.0, 0.095, None),
    ):
        got[by[label].id] = measured.Measured(
            cell=by[label],
            trials=1,
            rate=rate,
            usd_hour=usd,
            usd_epoch=None,
            sec_epoch=None,
            usd_million=None,
            accelerator="tpu",
            machine="m",
            pricing=Basis.ON_DEMAND,
            paths=(),
            batch=by[label].batch(),
            chips=chips,
        )
    results = measured.Results(study, "full", GPU_HOST, "runs", tuple(by.values()), got, {})
    lines = report.render(results, []).splitlines()
    header = next(r for r in lines if r.startswith("| setup |"))
    assert header == (
        "| setup | model | global batch | precision | $/hour | examples/s | chips "
        "| examples/s per chip | $/chip-hour | $/epoch |"
    )
    rows = {
        r.split(" | ")[0].strip("| "): r.split(" | ")[6:9] for r in lines if "| resnet50 |" in r
    }
    assert rows["Cloud TPU"] == ["4", "500.0", "$1.12"]  # $4.50 / 4 chips = $1.125
    assert rows["1 GPU"] == ["1", "400.0", "$3.00"]
    assert rows["CPU (this host)"] == ["—", "—", "—"]
