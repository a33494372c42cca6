"""launch/ stands on tpubench's TensorFlow-free base and nothing above it.

tpubench-launch may import tpubench's `core`, `storage` and `children`
packages (the one child runner, the record index by label, the strict YAML
loader); it runs everything else (train, tune, infer, prices) as a process.
So importing the launcher never loads TensorFlow, and tpubench never
imports the launcher (tests/test_layers.py).
"""

import ast
import pathlib
import subprocess
import sys

LAUNCH_DIR = pathlib.Path(__file__).resolve().parents[2] / "launch"
ALLOWED = ("tpubench.core", "tpubench.storage", "tpubench.children")


def _tpubench_imports(path: pathlib.Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "tpubench":
                names = [f"tpubench.{a.name}" for a in node.names]
            else:
                names = [node.module]
        else:
            continue
        yield from (n for n in names if n.split(".")[0] == "tpubench")


def test_launch_imports_only_tpubenchs_base():
    files = sorted(LAUNCH_DIR.rglob("*.py"))
    assert len(files) >= 10
    offenders = [
        f"{path.relative_to(LAUNCH_DIR)}: {name}"
        for path in files
        for name in _tpubench_imports(path)
        if not any(name == a or name.startswith(a + ".") for a in ALLOWED)
    ]
    assert offenders == [], f"launch/ imports tpubench above its base: {offenders}"


def test_importing_every_launch_module_loads_no_tensorflow_and_nothing_above_the_base():
    modules = sorted(
        "tpubench_launch." + ".".join(p.relative_to(LAUNCH_DIR).with_suffix("").parts)
        for p in LAUNCH_DIR.rglob("*.py")
        if p.name != "__init__.py"
    )
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "print(sorted(m for m in sys.modules if m.startswith(('tpubench.', 'tensorflow', "
        "'keras'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = ast.literal_eval(out.stdout.strip())
    above = [m for m in loaded if not m.startswith(tuple(a for a in ALLOWED))]
    assert "tpubench.children.process" in loaded  # the launcher's runner is tpubench's
    assert above == [], f"importing the launcher loads {above}"


def test_tpubench_asks_the_launcher_for_its_cloud_rules_as_a_process(tmp_path):
    import pytest

    from tpubench.core import errors
    from tpubench.study import remote

    cloud = tmp_path / "c.yaml"
    cloud.write_text("project: Bad_Project\nzone: us-central1-a\n")
    rules = remote.launcher_rules(str(cloud), "--cloud=c.yaml: ")
    assert "project" in rules["settings"] and rules["required"]["gke"] == ["bucket", "image"]
    assert rules["problem"].startswith("--cloud=c.yaml: cloud.project='Bad_Project' is refused")
    with pytest.raises(errors.UsageError, match=r"^--cloud=\S+: tpubench-launch could not check"):
        remote.launcher_rules(str(tmp_path / "gone.yaml"), "")
