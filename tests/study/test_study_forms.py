"""The report forms are written once (study/report/forms.py): the study file's check, the
report's tables and the charts all read that one table, so a form added there is accepted
by a study file and must have its table and its chart."""

from __future__ import annotations

import ast
import pathlib

import pytest

from tpubench.core import errors
from tpubench.study.report import charts, findings, forms, tables
from tpubench.study.spec import spec

REPORT = pathlib.Path(forms.__file__).parent


@pytest.mark.parametrize("kind", sorted(forms.FORMS))
def test_every_form_has_its_table_and_its_chart(kind):
    assert callable(forms.drawer(tables, kind)) and callable(forms.drawer(charts, kind))


def test_no_other_module_writes_the_form_names_out_again():
    """Only forms.py spells the forms as a collection: a tuple, list, set or dict literal
    of form names only (two or more) anywhere in the study package is a second copy.
    (Finding kinds share some names, `knee` and `scaling`: their tables hold others too.)"""
    copies = []
    for path in REPORT.parent.rglob("*.py"):
        if path.name == "forms.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            items = getattr(node, "elts", None) or getattr(node, "keys", None) or []
            words = [n.value for n in items if isinstance(n, ast.Constant)]
            if len(words) >= 2 and all(w in forms.FORMS for w in words):
                copies.append(f"{path.relative_to(REPORT.parent)}:{node.lineno}")
    assert not copies, f"the form table written again at {copies}"


def test_a_study_file_naming_a_form_outside_the_table_is_one_line(tmp_path):
    text = (spec.shipped_dir() / "cnn_scaling.yaml").read_text()
    path = tmp_path / "s.yaml"
    path.write_text(text.replace("kind: scaling", "kind: scalling"))
    with pytest.raises(errors.UsageError) as e:
        spec.load(str(path), forms.FORMS, findings.CHECKS)
    (line,) = str(e.value).splitlines()
    assert "'scalling' (did you mean scaling?)" in line
    assert "accepted: devices, knee, relative, scaling, strategies" in line
