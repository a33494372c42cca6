"""Names resolved once at the edge: the price basis and the precision are typed values.

Each is spelled in one module (core/basis.py, core/precision.py), parsed there
once from what a user wrote, and travels as an enum member; a record written
with one keeps the JSON strings records always held.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import pathlib
import subprocess
import sys

import pytest

from tpubench.core import basis, config, errors, money, precision
from tpubench.core.basis import Basis
from tpubench.core.precision import Precision
from tpubench.cost import catalog, pricing
from tpubench.report import load
from tpubench.storage import records
from tpubench.study.report import findings, forms
from tpubench.study.spec import spec
from tpubench.tune import space
from tpubench_launch.errors import UsageError as LaunchUsageError
from tpubench_launch.sweep import grid

ROOT = pathlib.Path(__file__).resolve().parents[2]
TREES = ("tpubench", "launch", "models")


def _literals(value: str) -> list[str]:
    """'path:line' of every string constant equal to VALUE in the project's Python code."""
    out = []
    for tree in TREES:
        for path in sorted((ROOT / tree).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Constant) and node.value == value:
                    out.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return out


@pytest.mark.parametrize(
    "value, allowed",
    [
        ("on_demand", {"tpubench/core/basis.py"}),
        ("override", {"tpubench/core/basis.py"}),
        # `spot:`, the cloud file's key (rent preemptible VMs): rented.py reads it, and the
        # executors that rent list it among their cloud keys.
        (
            "spot",
            {
                "tpubench/core/basis.py",
                "launch/executors/rented.py",
                "launch/executors/gcp.py",
                "launch/executors/aws_batch.py",
            },
        ),
    ],
)
def test_a_price_basis_is_spelled_in_one_module(value, allowed):
    found = _literals(value)
    assert found, f"{value!r} is spelled nowhere: the test looks in the wrong place"
    stray = [where for where in found if where.split(":")[0] not in allowed]
    assert stray == [], f"{value!r} spelled outside core/basis.py (use Basis): {stray}"


@pytest.mark.parametrize(
    "value, where, line",
    [
        ("spto", "--pricing", "--pricing='spto': not a price basis; accepted: on_demand, spot"),
        (
            "override",
            "--pricing",
            "--pricing='override': not a price basis; accepted: on_demand, spot",
        ),
        (
            None,
            "s.yaml: setups[0] (a).pricing",
            "s.yaml: setups[0] (a).pricing=None: not a price basis; accepted: on_demand, spot",
        ),
        (3, "pricing", "pricing=3: not a price basis; accepted: on_demand, spot"),
    ],
)
def test_a_bad_basis_is_one_line_naming_it_and_the_accepted_ones(value, where, line):
    with pytest.raises(errors.UsageError) as e:
        basis.parse(value, where)
    assert str(e.value) == line


def test_parsing_gives_the_member_and_records_read_back_as_members():
    assert basis.parse("spot") is Basis.SPOT and basis.parse(Basis.ON_DEMAND) is Basis.ON_DEMAND
    assert basis.recorded("override") is Basis.OVERRIDE
    assert basis.recorded(None) is basis.recorded("") is Basis.ON_DEMAND  # older records
    assert basis.recorded("preemptible") is None  # no tpubench wrote it
    assert Basis.SPOT.other is Basis.ON_DEMAND and Basis.OVERRIDE.other is None
    assert [money.basis(b) for b in Basis] == ["on demand", "spot", "--price_per_hour"]


def test_a_typed_price_writes_the_json_strings_records_hold_and_reads_back():
    price = pricing.hourly("gcp:n1-standard-1", catalog.load(), Basis.SPOT)
    written = json.dumps({"cost": {"pricing": price.pricing, "machines": [price.to_dict()]}})
    assert '"pricing": "spot"' in written and "Basis" not in written
    read = json.loads(written)["cost"]
    assert money.record_basis(read) is Basis.SPOT
    assert money.on_basis(read["machines"], Basis.SPOT) == read["machines"]
    assert money.on_basis(read["machines"], Basis.ON_DEMAND) == []
    old = {"machines": [{"machine": "m", "usd_per_hour": 1.0}]}  # before the basis was written
    assert money.record_basis(old) is Basis.ON_DEMAND
    assert money.on_basis(old["machines"], Basis.ON_DEMAND) == old["machines"]


def test_a_study_setup_carries_its_basis_typed_and_refuses_a_bad_one(tmp_path):
    study = spec.load("cpu_vs_gpu", forms.FORMS, findings.CHECKS)
    bases = {s.pricing for p in study.parts for s in p.setups}
    assert bases and all(b is None or type(b) is Basis for b in bases), bases
    (shipped,) = (ROOT / "tpubench").rglob("cpu_vs_gpu.yaml")
    text = shipped.read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("pricing: spot", "pricing: spotty", 1))
    assert "pricing: spotty" in bad.read_text()
    accepted = "not a price basis; accepted: on_demand, spot"
    with pytest.raises(errors.UsageError, match=rf"\.pricing='spotty': {accepted}$"):
        spec.load(str(bad), forms.FORMS, findings.CHECKS)


def test_prices_refuses_a_bad_basis_in_one_line_before_reading_any_catalog(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "tpubench", "prices", "--machine=gcp:n1-standard-1",
         "--pricing=spotty"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if "spotty" in x]
    assert "on_demand" in line and "spot" in line


# ------------------------------------------------------------------ precision

ACCEPTED = "not a precision; accepted: fp32, bf16, fp16"


@pytest.mark.parametrize("value", ["fp32", "bf16", "fp16"])
def test_a_precision_is_spelled_in_one_module(value):
    """Past the edge code compares members (`p is Precision.BF16`), never the text.

    Nothing needs an exception: CPU ISA features ("amx_bf16", "avx512_bf16"),
    the datasheet rows that are no precision ("fp32_plain", "fp8") and the
    help and docstrings that name a precision are other strings."""
    found = _literals(value)
    assert found, f"{value!r} is spelled nowhere: the test looks in the wrong place"
    stray = [where for where in found if where.split(":")[0] != "tpubench/core/precision.py"]
    assert stray == [], f"{value!r} spelled outside core/precision.py (use Precision): {stray}"


@pytest.mark.parametrize(
    "value, where, line",
    [
        ("fp8", "--precision", f"--precision=fp8: {ACCEPTED}"),
        ("BF16", "--precision", f"--precision=BF16: {ACCEPTED}"),  # the member's name is no value
        (None, "s.yaml: setups[0]: precision", f"s.yaml: setups[0]: precision=None: {ACCEPTED}"),
        (16, "precision", f"precision=16: {ACCEPTED}"),
    ],
)  # fmt: skip
def test_a_bad_precision_is_one_line_naming_it_and_the_accepted_ones(value, where, line):
    with pytest.raises(errors.UsageError) as e:
        precision.parse(value, where)
    assert str(e.value) == line


def test_parsing_gives_the_member_with_its_facts_and_the_flags_text():
    assert (
        precision.parse("bf16") is Precision.BF16
        and precision.parse(Precision.FP16) is Precision.FP16
    )
    assert f"--precision={Precision.BF16}" == "--precision=bf16"  # what a child process is given
    assert Precision.FP16.loss_scaling and not Precision.BF16.loss_scaling
    assert Precision.BF16.gpu_xla and not Precision.FP16.gpu_xla
    assert config.TrainConfig().precision is Precision.FP32 is precision.DEFAULT
    assert config.InferConfig().precision is Precision.FP32
    assert precision.recorded(None) is Precision.FP32  # a record that names none: older ones
    assert precision.recorded("fp8") is None  # no tpubench wrote it


def test_a_typed_precision_writes_the_records_string_and_reads_back(tmp_path):
    cfg = dataclasses.replace(config.TrainConfig(), precision=Precision.BF16)
    written = json.dumps({"schema_version": 2, "run_id": "r", "config": cfg.to_dict()})
    assert '"precision": "bf16"' in written and "Precision" not in written
    rec = records.typed(json.loads(written))
    assert (
        rec.config.precision == "bf16"
        and precision.recorded(rec.config.precision) is Precision.BF16
    )
    old = {"schema_version": 1, "run_id": "old", "status": "ok", "config": {"model": "m"}}
    assert records.typed(old).config.precision is None  # an old record still loads
    run, reason = load.from_record(old | {"results": {"examples_per_sec": 1.0}}, "old.json")
    assert reason == "" and run.dims["precision"] is Precision.FP32  # fp32, as it ran


def test_a_study_setups_precision_is_typed_and_a_bad_one_is_refused(tmp_path):
    study = spec.load("cpu_vs_gpu", forms.FORMS, findings.CHECKS)
    given = {s.precision for p in study.parts for s in p.setups} - {None}
    assert given == {Precision.BF16} and all(type(p) is Precision for p in given), given
    (shipped,) = (ROOT / "tpubench").rglob("cpu_vs_gpu.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text(shipped.read_text().replace("precision: bf16", "precision: fp8", 1))
    with pytest.raises(errors.UsageError, match=rf"\(8 vCPU c3 bf16\): precision=fp8: {ACCEPTED}$"):
        spec.load(str(bad), forms.FORMS, findings.CHECKS)


def test_a_sweep_files_precision_is_refused_by_the_same_parser():
    grid.check_keys({"precision": "bf16"}, "s.yaml")
    with pytest.raises(LaunchUsageError) as e:
        grid.check_keys({"precision": "fp8"}, "s.yaml")
    assert str(e.value) == f"s.yaml: precision=fp8: {ACCEPTED}"


def test_tunes_space_holds_members():
    assert space.Setting().precision is Precision.FP32
    assert space.Setting(precision=Precision.BF16).flags()["precision"] == "bf16"


def test_train_refuses_a_bad_precision_as_a_process_in_one_line(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "tpubench", "train", "--precision=fp8"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "--precision=fp8" in lines[0], proc.stderr
    assert all(p in lines[0] for p in ("fp32", "bf16", "fp16")), lines[0]
