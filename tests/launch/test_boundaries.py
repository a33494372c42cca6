"""launch/ builds command lines and never imports tpubench (STYLE.md, lesson 10)."""

import ast
import pathlib
import subprocess
import sys

LAUNCH_DIR = pathlib.Path(__file__).resolve().parents[2] / "launch"


def test_no_module_in_launch_imports_tpubench():
    offenders = []
    files = sorted(LAUNCH_DIR.rglob("*.py"))
    assert len(files) >= 10
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "tpubench"]
    assert offenders == []


def test_importing_every_launch_module_loads_no_tpubench():
    modules = sorted(
        "tpubench_launch." + ".".join(p.relative_to(LAUNCH_DIR).with_suffix("").parts)
        for p in LAUNCH_DIR.rglob("*.py")
        if p.name != "__init__.py"
    )
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "print(sorted(m for m in sys.modules if m == 'tpubench' or m.startswith('tpubench.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
