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
    from tpubench.study.run import executors

    cloud = tmp_path / "c.yaml"
    cloud.write_text("project: Bad_Project\nzone: us-central1-a\n")
    path = str(cloud)
    assert executors.get("gke", path).required == ("bucket", "image")
    assert executors.problem("gce", path).startswith(
        f"--cloud={path}: cloud.project='Bad_Project' is refused"
    )
    gone = str(tmp_path / "gone.yaml")
    assert executors.get("gce", gone).name == "gce"  # what the executors host: still known
    with pytest.raises(errors.UsageError, match=r"^--cloud=\S+: tpubench-launch could not check"):
        executors.problem("gce", gone)
    assert not (LAUNCH_DIR / "cloud_rules.py").exists()  # no second, special-purpose process


def _launch_imports(path: pathlib.Path) -> set[str]:
    """The tpubench_launch modules PATH imports (`from X import Y` gives X.Y too)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return {n for n in out if n.startswith("tpubench_launch.")}


# The modules of a plug-in package that every plug-in may stand on.
PLUGIN_BASES = {"engines": set(), "executors": {"base", "cloud", "shared", "rented", "gcp"}}


def test_plug_ins_never_import_each_other():
    wrong = []
    for package, bases in PLUGIN_BASES.items():
        plugins = {p.stem for p in (LAUNCH_DIR / package).glob("*.py")} - {"__init__"}
        for path in sorted((LAUNCH_DIR / package).glob("*.py")):
            for name in _launch_imports(path):
                parts = name.split(".")
                crossing = len(parts) > 2 and parts[1] == package and parts[2] in plugins - bases
                if crossing and parts[2] != path.stem:
                    wrong.append(f"{package}/{path.name} imports {package}/{parts[2]}")
    assert not wrong, "plug-ins import each other:\n" + "\n".join(wrong)


def _reexports(path: pathlib.Path) -> list[str]:
    """Module-level `name = module.attr` aliases, and names imported from a module but never
    used in PATH (kept only for others to import from here)."""
    tree = ast.parse(path.read_text())
    modules, imported = set(), {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            modules |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module != "__future__":
            for a in node.names:
                modules.add(a.asname or a.name)  # a module, by the rule of importing modules
                imported[a.asname or a.name] = node.lineno
    found = []
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Attribute)
            and isinstance(node.value.value, ast.Name)
            and node.value.value.id in modules
        ):
            found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    found += [
        f"{path.name}:{line} imports {name} and never uses it"
        for name, line in imported.items()
        if name not in used and name != "annotations"
    ]
    return found


def test_launch_has_no_reexport_aliases():
    found = [x for p in sorted(LAUNCH_DIR.rglob("*.py")) for x in _reexports(p)]
    assert not found, "re-exported names in launch/ (import the module that defines them):\n" + (
        "\n".join(found)
    )


def test_the_launchers_errors_are_tpubenchs():
    from tpubench.core import errors as core_errors
    from tpubench_launch import errors

    assert issubclass(errors.LaunchError, core_errors.TpubenchError)
    assert issubclass(errors.UsageError, core_errors.UsageError)
    assert issubclass(errors.Interrupted, core_errors.InterruptedRun)
    assert errors.CloudError("x").exit_code == 1 and errors.UsageError("x").exit_code == 2
    # No other exception class in launch/: every error a user sees is one of errors.py's.
    others = [
        f"{p.relative_to(LAUNCH_DIR)}: {node.name}"
        for p in sorted(LAUNCH_DIR.rglob("*.py"))
        if p.name != "errors.py"
        for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, ast.ClassDef)
        and any(
            isinstance(b, ast.Name) and b.id.endswith(("Error", "Exception")) for b in node.bases
        )
    ]
    assert others == [], others
