"""study/ is three subpackages, each standing on the ones before it: spec (what a study
is) <- run (running its cells) <- report (judging and showing them); api.py on top."""

from __future__ import annotations

import ast
import pathlib

STUDY = pathlib.Path(__file__).resolve().parents[2] / "tpubench" / "study"
ORDER = {"spec": 0, "run": 1, "report": 2}


def _imports(path: pathlib.Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names)


def test_the_study_package_holds_only_its_subpackages_and_api():
    loose = sorted(p.name for p in STUDY.glob("*.py"))
    assert set(loose) == {"__init__.py", "api.py"}
    assert {p.name for p in STUDY.iterdir() if (p / "__init__.py").exists()} >= set(ORDER)


def test_each_subpackage_imports_only_those_before_it():
    wrong = []
    for sub, rank in ORDER.items():
        for path in sorted((STUDY / sub).glob("*.py")):
            for line, module in _imports(path):
                parts = module.split(".")
                if parts[:2] != ["tpubench", "study"] or len(parts) < 3:
                    continue
                there = parts[2]
                if there not in ORDER or ORDER[there] > rank:
                    wrong.append(f"study/{sub}/{path.name}:{line} imports {module}")
    assert not wrong, "imports that do not point down:\n" + "\n".join(wrong)


def test_no_study_module_passes_300_lines():
    long = {
        str(p.relative_to(STUDY)): n
        for p in STUDY.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 300
    }
    assert not long, f"study modules over 300 lines: {long}"
