"""Every folder of the three trees that holds Python files or package data is a declared
package: setuptools warns ("Package would be ignored", about 50 lines on every install of
`make demo`) for one that is not, and a wheel would leave its files out."""

from __future__ import annotations

import pathlib

import pytest

tomllib = pytest.importorskip("tomllib", reason="Python 3.11's TOML reader")

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_every_folder_with_files_that_install_is_a_declared_package():
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    declared = set(tool["packages"])
    found = set()
    for name, folder in tool["package-dir"].items():
        for path in (ROOT / folder).rglob("*"):
            if path.suffix not in (".py", ".yaml", ".csv", ".json") or "__pycache__" in path.parts:
                continue
            parts = path.parent.relative_to(ROOT / folder).parts
            found.add(".".join((name, *parts)))
    assert found - declared == set()
