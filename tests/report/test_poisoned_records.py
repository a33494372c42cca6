"""One record built to break its readers never stops `runs`, `report` or `advise` for the rest."""

from __future__ import annotations

import json
import pathlib
import shutil

import pytest
from conftest import run_cli

from tpubench.storage import record_limits, record_text, records

GOOD = sorted((pathlib.Path(__file__).parent / "fixtures" / "threads").glob("*.json"))[0]


def _nested(levels: int):
    value: list = []
    for _ in range(levels):
        value = [value]
    return value


def _poisons(good: dict) -> dict[str, str]:
    """File name -> text: each breaks a JSON reader a different way."""
    nested = dict(good, run_id="nested")
    nested["config"] = dict(good["config"], notes=_nested(900))  # parses; recursion dies
    return {
        "digits.json": json.dumps(good).replace(
            '"schema_version": ', '"x": ' + "9" * 5000 + ', "schema_version": ', 1
        ),
        "brackets.json": '{"run_id": "b", "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "nested.json": json.dumps(nested),
        "wrong_type.json": json.dumps(dict(good, run_id="typed", results="oops")),
    }


@pytest.mark.parametrize(
    "poison", ["digits.json", "brackets.json", "nested.json", "wrong_type.json"]
)
def test_each_reader_skips_and_names_the_poisoned_record(tmp_path, poison):
    good = json.loads(GOOD.read_text())
    shutil.copy(GOOD, tmp_path / GOOD.name)
    (tmp_path / poison).write_text(_poisons(good)[poison])
    proc, _ = run_cli("runs", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert GOOD.name in proc.stdout and "Traceback" not in proc.stderr
    assert f"skipped {tmp_path / poison}" in proc.stderr
    proc, _ = run_cli("report", "--format=csv", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("\nmeasured,") == 1  # the good run, reported
    if poison != "wrong_type.json":  # unreadable as JSON at all: refused where it is read
        with pytest.raises(record_text.BadRecord):
            records.read(str(tmp_path / poison))


def test_real_records_nest_far_less_than_the_limit():
    fixtures = pathlib.Path(__file__).parent / "fixtures"
    deepest = max(record_limits.depth(json.loads(p.read_text())) for p in fixtures.rglob("*.json"))
    assert 5 <= deepest <= record_limits.MAX_DEPTH // 4
