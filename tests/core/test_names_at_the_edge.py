"""Names resolved once at the edge: the price basis and the precision are typed values.

Each is spelled in one module (core/basis.py, core/precision.py), parsed there
once from what a user wrote, and travels as an enum member; a record written
with one keeps the JSON strings records always held.
"""

from __future__ import annotations

import ast
import json
import pathlib
import subprocess
import sys

import pytest

from tpubench.core import basis, errors, money
from tpubench.core.basis import Basis
from tpubench.cost import catalog, pricing

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
        # launch/executors/cloud.py: `spot:`, the cloud file's key (rent preemptible VMs).
        ("spot", {"tpubench/core/basis.py", "launch/executors/cloud.py"}),
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
    from tpubench.study import findings, report, spec

    study = spec.load("cpu_vs_gpu", report.FORMS, findings.CHECKS)
    bases = {s.pricing for p in study.parts for s in p.setups}
    assert bases and all(b is None or type(b) is Basis for b in bases), bases
    (shipped,) = (ROOT / "tpubench").rglob("cpu_vs_gpu.yaml")
    text = shipped.read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("pricing: spot", "pricing: spotty", 1))
    assert "pricing: spotty" in bad.read_text()
    accepted = "not a price basis; accepted: on_demand, spot"
    with pytest.raises(errors.UsageError, match=rf"\.pricing='spotty': {accepted}$"):
        spec.load(str(bad), report.FORMS, findings.CHECKS)


def test_prices_refuses_a_bad_basis_in_one_line_before_reading_any_catalog(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "tpubench", "prices", "--machine=gcp:n1-standard-1",
         "--pricing=spotty"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if "spotty" in x]
    assert "on_demand" in line and "spot" in line
